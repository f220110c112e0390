// Row-wise ops: layer normalizations, softmax and attention as a block per row (block
// reductions, kernels/cuda/device.cuh); reductions as a generated kernel, a block per output
// reducing as a tree where the reduced elements outnumber the outputs, else a thread per
// output element; Gather, whose out-of-range indices fail the run through c.status.
#include <string>
#include <vector>

#include "codegen/cpp/code_text.h"
#include "codegen/cpp/loop_nest.h"
#include "codegen/cuda/cuda_ops.h"
#include "ops/core/shape_util.h"

namespace kiln::codegen::cuda {

using cpp::i64;

namespace {

std::string opt_in(const EmitContext& ctx, int i) { return ctx.has_input(i) ? ctx.in(i) : "nullptr"; }

void require_float(const EmitContext& ctx) {
  for (const Operand& o : ctx.step.inputs)
    if (o.buffer >= 0 && o.dtype != DType::Float) throw ctx.unsupported("only float inputs are emitted");
}

std::string row_launch(const std::string& kernel, int64_t rows) {
  return "KILN_LAUNCH_SYNC(" + kernel + ", " + i64(rows) + "u, kiln_kernels::kRowThreads, c.stream)";
}

void layernorm(EmitContext& ctx, const std::string& skip, const std::string& gamma, const std::string& beta,
               const std::string& bias, const std::string& sum) {
  const Operand& x = ctx.step.inputs.at(0);
  const int64_t H = x.dims.back(), rows = x.numel() / H;
  ctx.line(row_launch("kiln_kernels::layernorm_rows", rows) + "(" + i64(H) + ", " + ctx.in(0) + ", " + skip + ", " + gamma +
           ", " + beta + ", " + bias + ", " + cpp::literal_float(ctx.node.attr_float("epsilon", 1e-5f)) + ", " +
           ctx.out(0) + ", " + sum + ");");
}

}  // namespace

void emit_skip_layernorm(EmitContext& ctx) {
  require_float(ctx);
  const bool sum = ctx.step.outputs.size() > 1 && ctx.step.outputs[1].buffer >= 0;
  layernorm(ctx, ctx.in(1), ctx.in(2), opt_in(ctx, 3), opt_in(ctx, 4), sum ? ctx.out(1) : "nullptr");
}

void emit_layernorm(EmitContext& ctx) {
  require_float(ctx);
  const Operand& x = ctx.step.inputs.at(0);
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  if (ops::normalize_axis(ctx.node.attr_int("axis", -1), rank, ctx.node) != rank - 1)
    throw ctx.unsupported("only a normalization over the last axis is emitted");
  for (size_t k = 1; k < ctx.step.outputs.size(); ++k)
    if (ctx.step.outputs[k].buffer >= 0) throw ctx.unsupported("the mean and inverse deviation outputs are not emitted");
  if (ctx.step.inputs.at(1).numel() != x.dims.back() || (ctx.has_input(2) && ctx.step.inputs[2].numel() != x.dims.back()))
    throw ctx.unsupported("scale and bias must be [H]");
  layernorm(ctx, "nullptr", ctx.in(1), opt_in(ctx, 2), "nullptr", "nullptr");
}

void emit_softmax(EmitContext& ctx) {
  require_float(ctx);
  const Operand& x = ctx.step.inputs.at(0);
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  const int64_t opset = ctx.node.owner() ? ctx.node.owner()->opset("") : 17;
  const int64_t axis = ops::normalize_axis(ctx.node.attr_int("axis", opset < 13 ? 1 : -1), rank, ctx.node);
  int64_t outer = 1, A = 1, inner = 1;
  for (int64_t k = 0; k < rank; ++k) {
    if (k < axis) outer *= x.dims[k];
    else if (k == axis || opset < 13) A *= x.dims[k];
    else inner *= x.dims[k];
  }
  if (inner == 1) {
    ctx.line(row_launch("kiln_kernels::softmax_rows", outer) + "(" + i64(A) + ", " + ctx.in(0) + ", " + ctx.out(0) + ");");
    return;
  }
  ctx.line("KILN_LAUNCH(kiln_kernels::softmax_strided, kiln_kernels::blocks_for(" + i64(outer * inner) +
           "), kiln_kernels::kThreads, c.stream)(" + i64(outer) + ", " + i64(A) + ", " + i64(inner) + ", " + ctx.in(0) +
           ", " + ctx.out(0) + ");");
}

void emit_attention(EmitContext& ctx) {
  require_float(ctx);
  for (const char* perm : {"q_perm", "k_perm", "v_perm", "out_perm", "q_index", "k_index", "v_index"})
    if (ctx.node.has_attr(perm))
      throw ctx.unsupported(std::string("Attention's ") + perm + " is not emitted for CUDA (its heads are read dense)");
  const Operand &q = ctx.step.inputs.at(0), &k = ctx.step.inputs.at(1), &v = ctx.step.inputs.at(2);
  const Operand& o = ctx.step.outputs.at(0);
  const int64_t Sq = q.dims[q.dims.size() - 2], D = q.dims.back(), Sk = k.dims.back(), Dv = v.dims.back();
  constexpr int64_t kMaxKeys = 4096;  // kiln_kernels::kAttentionMaxKeys
  if (Sk > kMaxKeys) throw ctx.unsupported("more than " + i64(kMaxKeys) + " keys per row are not emitted");
  const std::vector<int64_t> ob(o.dims.begin(), o.dims.end() - 2);
  auto batch = [](const Operand& t) { return std::vector<int64_t>(t.dims.begin(), t.dims.end() - 2); };
  const std::vector<int64_t> qo = cpp::batch_offsets(ob, batch(q)), ko = cpp::batch_offsets(ob, batch(k)),
                             vo = cpp::batch_offsets(ob, batch(v));
  int64_t mq = 1, mk = 1;
  std::vector<int64_t> mo(qo.size(), 0);
  const bool masked = ctx.has_input(3);
  if (masked) {
    std::vector<int64_t> md = ctx.step.inputs[3].dims;
    while (md.size() < 2) md.insert(md.begin(), 1);
    mq = md[md.size() - 2];
    mk = md.back();
    mo = cpp::batch_offsets(ob, std::vector<int64_t>(md.begin(), md.end() - 2));
  }
  // Per head, the element offsets of its q, k, v and mask: a table in the weights.
  std::vector<int64_t> table;
  for (size_t b = 0; b < qo.size(); ++b)
    table.insert(table.end(), {qo[b] * Sq * D, ko[b] * D * Sk, vo[b] * Sk * Dv, mo[b] * mq * mk});
  std::string key = "attention-offsets";
  for (int64_t t : table) key += ":" + i64(t);
  const std::string offsets = ctx.weights(
      key, std::string_view(reinterpret_cast<const char*>(table.data()), table.size() * sizeof(int64_t)), DType::Int64);
  ctx.line("const kiln_kernels::AttentionShape s{" + i64(Sq) + ", " + i64(D) + ", " + i64(Sk) + ", " + i64(Dv) + ", " +
           i64(mq) + ", " + i64(mk) + ", " + cpp::literal_float(ctx.node.attr_float("scale", 1.f)) + "};");
  ctx.line(row_launch("kiln_kernels::attention_rows", static_cast<int64_t>(qo.size()) * Sq) + "(s, " + ctx.in(0) + ", " +
           ctx.in(1) + ", " + ctx.in(2) + ", " + (masked ? ctx.in(3) : "nullptr") + ", " + offsets + ", " + ctx.out(0) +
           ");");
}

namespace {

// A block per output of a reduction: the output's offset from blockIdx.x over the kept dims,
// the block's threads striding over the reduced elements, then a tree (block_reduce).
void tree_reduce(EmitContext& ctx, const std::vector<bool>& reduced, const std::vector<int64_t>& xs, int64_t outputs,
                  int64_t count) {
  const Operand& x = ctx.step.inputs.at(0);
  const std::string& op = ctx.node.op_type();
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  const std::string name = "k_" + ctx.function + "_tree";
  const std::string init = op == "ReduceMax" ? "-INFINITY" : op == "ReduceMin" ? "INFINITY" : "0.f";
  const std::string combine = op == "ReduceMax" ? "MaxOp" : op == "ReduceMin" ? "MinOp" : "SumOp";
  std::vector<std::string>& k = ctx.device;
  k.push_back("__global__ void " + name + "(const float* __restrict__ x, float* __restrict__ y) {");
  k.push_back("  __shared__ float scratch[kiln_kernels::kRowThreads / kiln_kernels::kWarp];");
  k.push_back("  int64_t q = blockIdx.x, base = 0;");
  for (int64_t d = rank - 1; d >= 0; --d)
    if (!reduced[static_cast<size_t>(d)])
      k.push_back("  base += q % " + i64(x.dims[static_cast<size_t>(d)]) + " * " + i64(xs[static_cast<size_t>(d)]) + "; q /= " +
                  i64(x.dims[static_cast<size_t>(d)]) + ";");
  k.push_back("  float acc = " + init + ";");
  k.push_back("  for (int64_t r = threadIdx.x; r < " + i64(count) + "; r += blockDim.x) {");
  k.push_back("    int64_t t = r, at = base;");
  for (int64_t d = rank - 1; d >= 0; --d)
    if (reduced[static_cast<size_t>(d)])
      k.push_back("    at += t % " + i64(x.dims[static_cast<size_t>(d)]) + " * " + i64(xs[static_cast<size_t>(d)]) + "; t /= " +
                  i64(x.dims[static_cast<size_t>(d)]) + ";");
  k.push_back("    acc = kiln_kernels::" + combine + "{}(acc, x[at]);");
  k.push_back("  }");
  k.push_back("  acc = kiln_kernels::block_reduce(acc, scratch, kiln_kernels::" + combine + "{});");
  k.push_back("  if (threadIdx.x == 0) y[blockIdx.x] = acc" +
              (op == "ReduceMean" ? " / " + cpp::literal_float(static_cast<float>(count)) : std::string()) + ";");
  k.push_back("}");
  ctx.line(row_launch(name, outputs) + "(" + ctx.in(0) + ", " + ctx.out(0) + ");");
}

}  // namespace

void emit_reduce(EmitContext& ctx) {
  const ir::Node& n = ctx.node;
  const Operand& x = ctx.step.inputs.at(0);
  if (x.dtype != DType::Float) throw ctx.unsupported("only float reductions are emitted");
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  std::vector<int64_t> axes = n.attr_ints("axes");
  if (ctx.has_input(1)) axes = ctx.constant(1).to_int64_vector();
  if (axes.empty() && n.attr_int("noop_with_empty_axes", 0)) throw ctx.unsupported("noop_with_empty_axes is not emitted");
  std::vector<bool> reduced(static_cast<size_t>(rank), axes.empty());
  for (int64_t a : ops::normalize_axes(axes, rank, n)) reduced[static_cast<size_t>(a)] = true;
  const std::string& op = n.op_type();
  const std::vector<int64_t> xs = cpp::dense_strides(x.dims);
  int64_t outputs = 1, count = 1;
  for (int64_t k = 0; k < rank; ++k) (reduced[static_cast<size_t>(k)] ? count : outputs) *= x.dims[static_cast<size_t>(k)];
  // More reduced elements than outputs, at least a warp's worth: a thread per output would leave
  // most of the GPU idle, so a block per output reduces as a tree.
  if (count >= 32 && count > outputs) return tree_reduce(ctx, reduced, xs, outputs, count);
  // A thread per kept index (i0, i1, ...), a loop per reduced dim.
  std::vector<int64_t> kept_dims;
  std::string xi, yi;
  std::vector<std::string> body;
  const std::string init = op == "ReduceMax" ? "-INFINITY" : op == "ReduceMin" ? "INFINITY" : "0.f";
  body.push_back("float acc = " + init + ";");
  std::string indent;
  for (int64_t k = 0; k < rank; ++k) {
    if (reduced[static_cast<size_t>(k)]) continue;
    const std::string i = "i" + i64(static_cast<int64_t>(kept_dims.size()));
    xi += " + " + i + " * " + i64(xs[static_cast<size_t>(k)]);
    yi = yi.empty() ? i : "(" + yi + ") * " + i64(x.dims[static_cast<size_t>(k)]) + " + " + i;
    kept_dims.push_back(x.dims[static_cast<size_t>(k)]);
  }
  for (int64_t k = 0, j = 0; k < rank; ++k) {
    if (!reduced[static_cast<size_t>(k)]) continue;
    const std::string r = "r" + i64(j++);
    body.push_back(indent + "for (int64_t " + r + " = 0; " + r + " < " + i64(x.dims[static_cast<size_t>(k)]) + "; ++" + r + ")");
    indent += "  ";
    xi += " + " + r + " * " + i64(xs[static_cast<size_t>(k)]);
  }
  const std::string xe = "x[0" + xi + "]";
  if (op == "ReduceMax") body.push_back(indent + "acc = fmaxf(acc, " + xe + ");");
  else if (op == "ReduceMin") body.push_back(indent + "acc = fminf(acc, " + xe + ");");
  else body.push_back(indent + "acc += " + xe + ";");
  body.push_back("y[" + (yi.empty() ? std::string("0") : yi) + "] = " +
                 (op == "ReduceMean" ? "acc / " + cpp::literal_float(static_cast<float>(count)) : std::string("acc")) + ";");
  cpp::write_loops(ctx, {{"const float", "x", ctx.in(0), true}, {"float", "y", ctx.out(0), true}}, kept_dims, body);
}

void emit_gather(EmitContext& ctx) {
  const Operand &x = ctx.step.inputs.at(0), &idx = ctx.step.inputs.at(1);
  const Operand& y = ctx.step.outputs.at(0);
  if (idx.dtype != DType::Int64 && idx.dtype != DType::Int32) throw ctx.unsupported("indices must be int32 or int64");
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  const int64_t axis = ops::normalize_axis(ctx.node.attr_int("axis", 0), rank, ctx.node);
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < rank; ++k) {
    if (k < axis) outer *= x.dims[static_cast<size_t>(k)];
    if (k > axis) inner *= x.dims[static_cast<size_t>(k)];
  }
  const int64_t D = x.dims[static_cast<size_t>(axis)], n = idx.numel();
  if (y.numel() == 0) return;
  ctx.line("const auto kernel = kiln_kernels::gather_rows<" + cpp::ctype(x.dtype) + ", " + cpp::ctype(idx.dtype) + ">;");
  ctx.line("KILN_LAUNCH(kernel, kiln_kernels::blocks_for(" + i64(y.numel()) + "), kiln_kernels::kThreads, c.stream)(" + i64(outer) + ", " +
           i64(D) + ", " + i64(n) + ", " + i64(inner) + ", " + ctx.in(0) + ", " + ctx.in(1) + ", " + ctx.out(0) +
           ", c.status);");
}

}  // namespace kiln::codegen::cuda
