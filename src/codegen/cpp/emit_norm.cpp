// Row-wise ops over the last axis and attention: kiln.SkipLayerNorm, LayerNormalization,
// Softmax (kernels/norm.h), kiln.Attention (kernels/attention.h); InstanceNormalization and
// GroupNormalization (kernels/group_norm.h); ArgMax and ArgMin (kernels/arg_reduce.h); TopK
// (kernels/topk.h); reductions as loop nests, kiln.FusedReduce's prologue and epilogue too.
#include <algorithm>
#include <string>
#include <vector>

#include "codegen/cpp/code_text.h"
#include "codegen/cpp/loop_nest.h"
#include "codegen/cpp/op_emitters.h"
#include "ops/core/attention_view.h"
#include "ops/core/shape_util.h"

namespace kiln::codegen::cpp {

namespace {

std::string opt_in(const EmitContext& ctx, int i) { return ctx.has_input(i) ? ctx.in(i) : "nullptr"; }

void require_float(const EmitContext& ctx) {
  for (const Operand& o : ctx.step.inputs)
    if (o.buffer >= 0 && o.dtype != DType::Float) throw ctx.unsupported("only float inputs are emitted");
}

}  // namespace

void emit_skip_layernorm(EmitContext& ctx) {
  require_float(ctx);
  const Operand& x = ctx.step.inputs.at(0);
  const int64_t H = x.dims.back(), rows = x.numel() / H;
  const bool sum = ctx.step.outputs.size() > 1 && ctx.step.outputs[1].buffer >= 0;
  ctx.use_kernel("norm.h");
  ctx.line("kiln_kernels::layernorm_rows(" + i64(rows) + ", " + i64(H) + ", " + ctx.in(0) + ", " + ctx.in(1) + ", " +
           ctx.in(2) + ", " + opt_in(ctx, 3) + ", " + opt_in(ctx, 4) + ", " +
           literal_float(ctx.node.attr_float("epsilon", 1e-5f)) + ", " + ctx.out(0) + ", " +
           (sum ? ctx.out(1) : "nullptr") + ", c.team);");
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
  const int64_t H = x.dims.back(), rows = x.numel() / H;
  ctx.use_kernel("norm.h");
  ctx.line("kiln_kernels::layernorm_rows(" + i64(rows) + ", " + i64(H) + ", " + ctx.in(0) + ", nullptr, " + ctx.in(1) +
           ", " + opt_in(ctx, 2) + ", nullptr, " + literal_float(ctx.node.attr_float("epsilon", 1e-5f)) + ", " +
           ctx.out(0) + ", nullptr, c.team);");
}

// InstanceNormalization, GroupNormalization and their channels-last kiln.Nhwc* forms.
void emit_group_norm(EmitContext& ctx) {
  require_float(ctx);
  const ir::Node& n = ctx.node;
  const Operand& x = ctx.step.inputs.at(0);
  const bool nhwc = n.domain() == "kiln";
  if (x.dims.size() < 3 || (nhwc && x.dims.size() != 4)) throw ctx.unsupported("x must be [N, C, spatial...] (or NHWC)");
  const int64_t N = x.dims[0], C = nhwc ? x.dims[3] : x.dims[1];
  const int64_t P = x.numel() / std::max<int64_t>(1, N * C);
  const bool instance = n.op_type().ends_with("InstanceNormalization");
  const int64_t G = instance ? C : n.attr_int("num_groups", 0);
  if (G < 1 || C % G) throw ctx.unsupported("num_groups must divide the channels");
  if (!instance && n.attr_int("stash_type", 1) != 1) throw ctx.unsupported("only stash_type float is emitted");
  const int64_t scale = ctx.step.inputs.at(1).numel(), bias = ctx.step.inputs.at(2).numel();
  const bool per_group = scale != C;
  if ((scale != C && (instance || scale != G)) || bias != scale)
    throw ctx.unsupported("scale and bias must both be per channel or both per group");
  ctx.use_kernel("group_norm.h");
  ctx.line("static const kiln_kernels::GroupNormShape s{" + i64(N) + ", " + i64(C) + ", " + i64(G) + ", " + i64(P) + ", " +
           (nhwc ? "true" : "false") + ", " + (per_group ? "true" : "false") + ", " +
           literal_float(n.attr_float("epsilon", 1e-5f)) + "};");
  ctx.line("kiln_kernels::group_norm(s, " + ctx.in(0) + ", " + ctx.in(1) + ", " + ctx.in(2) + ", " + ctx.out(0) +
           ", c.team);");
}

// LRN on channels-first x (kernels/lrn.h), the team splitting the (image, channel) planes.
void emit_lrn(EmitContext& ctx) {
  require_float(ctx);
  const Operand& x = ctx.step.inputs.at(0);
  if (x.dims.size() < 2) throw ctx.unsupported("x must be [N, C, ...]");
  const int64_t N = x.dims[0], C = x.dims[1], P = x.numel() / std::max<int64_t>(1, N * C);
  const ir::Node& n = ctx.node;
  ctx.use_kernel("lrn.h");
  ctx.use_kernel("parallel.h");
  ctx.line("static const kiln_kernels::LrnShape s{" + i64(N) + ", " + i64(C) + ", " + i64(P) + ", " +
           i64(n.attr_int("size", 1)) + ", " + literal_float(n.attr_float("alpha", 1e-4f)) + ", " +
           literal_float(n.attr_float("beta", 0.75f)) + ", " + literal_float(n.attr_float("bias", 1.f)) + "};");
  ctx.line("kiln_kernels::parallel_for(c.team, " + i64(N * C) + ", [&](int64_t q0, int64_t q1) { kiln_kernels::lrn_planes(s, " +
           ctx.in(0) + ", " + ctx.out(0) + ", q0, q1); });");
}

void emit_arg_reduce(EmitContext& ctx) {
  require_float(ctx);
  const Operand& x = ctx.step.inputs.at(0);
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  if (rank < 1) throw ctx.unsupported("a scalar input is not emitted");
  const int64_t axis = ops::normalize_axis(ctx.node.attr_int("axis", 0), rank, ctx.node);
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < rank; ++k) {
    if (k < axis) outer *= x.dims[k];
    if (k > axis) inner *= x.dims[k];
  }
  if (x.dims[axis] < 1) throw ctx.unsupported("an empty reduced axis is not emitted");
  ctx.use_kernel("arg_reduce.h");
  ctx.line("kiln_kernels::arg_reduce<" + std::string(ctx.node.op_type() == "ArgMax" ? "true" : "false") + ">(" +
           i64(outer) + ", " + i64(x.dims[axis]) + ", " + i64(inner) + ", " +
           (ctx.node.attr_int("select_last_index", 0) ? "true" : "false") + ", " + ctx.in(0) + ", " + ctx.out(0) +
           ", c.team);");
}

void emit_topk(EmitContext& ctx) {
  const Operand& x = ctx.step.inputs.at(0);
  if (x.dtype != DType::Float) throw ctx.unsupported("only a float input is emitted");
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  if (rank < 1) throw ctx.unsupported("a scalar input is not emitted");
  const int64_t axis = ops::normalize_axis(ctx.node.attr_int("axis", -1), rank, ctx.node);
  // K as the plan fixed it: the extent of either output along the axis.
  if (!ctx.has_output(0) && !ctx.has_output(1)) return;
  const Operand& y = ctx.step.outputs.at(ctx.has_output(0) ? 0 : 1);
  if (static_cast<int64_t>(y.dims.size()) != rank) throw ctx.unsupported("its outputs' rank differs from its input's");
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < rank; ++k) {
    if (k < axis) outer *= x.dims[k];
    if (k > axis) inner *= x.dims[k];
  }
  const int64_t k = y.dims[axis];
  if (k < 0 || k > x.dims[axis]) throw ctx.unsupported("K is larger than the axis");
  ctx.use_kernel("topk.h");
  ctx.use_kernel("parallel.h");
  // K from a run-time input: the plan's shapes hold for that K only.
  if (ctx.has_input(1) && !ctx.is_constant(1))
    ctx.line("if (" + ctx.in(1) + "[0] != " + i64(k) + ") return c.fail(" +
             c_string(ctx.node.describe() + ": K must be " + std::to_string(k) + ", the value the model was compiled for") +
             ");");
  ctx.line("static const kiln_kernels::TopKShape s{" + i64(outer) + ", " + i64(x.dims[axis]) + ", " + i64(inner) + ", " +
           i64(k) + ", " + (ctx.node.attr_int("largest", 1) ? "true" : "false") + "};");
  ctx.line("kiln_kernels::parallel_for(c.team, " + i64(outer * inner) + ", [&](int64_t r0, int64_t r1) { " +
           "kiln_kernels::topk_rows(s, " + ctx.in(0) + ", " + (ctx.has_output(0) ? ctx.out(0) : std::string("nullptr")) + ", " +
           (ctx.has_output(1) ? ctx.out(1) : std::string("nullptr")) + ", r0, r1); });");
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
  ctx.use_kernel("norm.h");
  ctx.line("kiln_kernels::softmax(" + i64(outer) + ", " + i64(A) + ", " + i64(inner) + ", " + ctx.in(0) + ", " +
           ctx.out(0) + ", c.team);");
}

void emit_attention(EmitContext& ctx) {
  require_float(ctx);
  // The operands as the node reads them, through its perms and indices (ops/core/attention_view.h).
  ops::StridedView in[3];
  for (int i = 0; i < 3; ++i) {
    in[i] = ops::attention_operand(ctx.node, i, ctx.step.inputs.at(static_cast<size_t>(i)).dims);
    if (in[i].dims.size() < 2) throw ctx.unsupported("Attention operands of rank < 2 are not emitted");
  }
  const std::vector<int64_t>& od = ctx.step.outputs.at(0).dims;
  const ops::StridedView out = ops::untransposed_view(od, ops::attention_perm(ctx.node, "out_perm", od.size()));
  const ops::StridedView &q = in[0], &k = in[1], &v = in[2];
  const int64_t Sq = q.dims[q.dims.size() - 2], D = q.dims.back(), Sk = k.dims.back(), Dv = v.dims.back();
  const int64_t ks = k.strides.back(), kd = k.strides[k.strides.size() - 2];
  if (!ops::reads_as_rows(q, false) || !ops::reads_as_rows(k, true) || !ops::reads_as_rows(v, false) ||
      !ops::reads_as_rows(out, false))
    throw ctx.unsupported("Attention operands whose columns are not contiguous are not emitted");
  const bool keys_as_rows = ks != 1;
  const std::vector<int64_t> ob(out.dims.begin(), out.dims.end() - 2);
  std::vector<std::vector<int64_t>> offs = {ops::batch_element_offsets(ob, q), ops::batch_element_offsets(ob, k),
                                            ops::batch_element_offsets(ob, v), ops::batch_element_offsets(ob, out)};
  int64_t mq = 1, mk = 1;
  const bool masked = ctx.has_input(3);
  if (masked) {
    std::vector<int64_t> md = ctx.step.inputs[3].dims;
    while (md.size() < 2) md.insert(md.begin(), 1);
    mq = md[md.size() - 2];
    mk = md.back();
    offs.push_back(ops::batch_element_offsets(ob, ops::transposed_view(md, {})));
  }
  const int64_t nb = static_cast<int64_t>(offs[0].size());
  ctx.use_kernel("attention.h");
  const char* names[] = {"qo", "ko", "vo", "oo", "mo"};
  for (size_t t = 0; t < offs.size(); ++t)
    ctx.line("static const int64_t " + std::string(names[t]) + "[] = " + int_list(offs[t]) + ";");
  ctx.line("const float* q = " + ctx.in(0) + ";");
  ctx.line("const float* k = " + ctx.in(1) + ";");
  ctx.line("const float* v = " + ctx.in(2) + ";");
  if (masked) ctx.line("const float* mask = " + ctx.in(3) + ";");
  ctx.line("float* o = " + ctx.out(0) + ";");
  ctx.line("const kiln_kernels::HeadLayout layout{" + i64(q.strides[q.strides.size() - 2]) + ", " +
           i64(keys_as_rows ? ks : kd) + ", " + i64(v.strides[v.strides.size() - 2]) + ", " +
           i64(out.strides[out.strides.size() - 2]) + ", " + (keys_as_rows ? "true" : "false") + "};");
  ctx.line("kiln_kernels::parallel_for(c.team, " + i64(nb) + ", [&](int64_t b0, int64_t b1) {");
  ctx.line("  for (int64_t b = b0; b < b1; ++b)");
  ctx.line("    kiln_kernels::attention_head<" + std::to_string(ctx.panel) + ">(" + i64(Sq) + ", " + i64(D) + ", " + i64(Sk) +
           ", " + i64(Dv) + ", " + literal_float(ctx.node.attr_float("scale", 1.f)) +
           ", q + qo[b], k + ko[b], v + vo[b], " + (masked ? "mask + mo[b]" : "nullptr") + ", " + i64(mq) + ", " +
           i64(mk) + ", o + oo[b], layout);");
  ctx.line("});");
}

namespace {

// y = the reduction `op` (ReduceSum/Mean/Max/Min) of the float tensor at `x` (dense, `dims`)
// over the axes marked in `reduced`, written to `y` (dense, the kept dims in order).
void emit_reduce_loops(EmitContext& ctx, const std::string& op, const std::string& x, const std::vector<int64_t>& dims,
                       const std::vector<bool>& reduced, const std::string& y) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  const std::vector<int64_t> xs = dense_strides(dims);
  // The kept dims outside (in order, as the output has them), the reduced dims inside.
  std::vector<int64_t> kept, red;
  for (int64_t k = 0; k < rank; ++k) (reduced[k] ? red : kept).push_back(k);
  int64_t count = 1;
  for (int64_t k : red) count *= dims[k];
  ctx.line("{");
  ctx.line("  const float* KILN_RESTRICT x = " + x + ";");
  ctx.line("  float* KILN_RESTRICT y = " + y + ";");
  std::string indent = "  ", xi, yi;
  for (size_t j = 0; j < kept.size(); ++j) {
    const std::string i = "k" + i64(static_cast<int64_t>(j));
    ctx.line(indent + "for (int64_t " + i + " = 0; " + i + " < " + i64(dims[kept[j]]) + "; ++" + i + ")");
    indent += "  ";
    xi += " + " + i + " * " + i64(xs[kept[j]]);
    yi = yi.empty() ? i : "(" + yi + ") * " + i64(dims[kept[j]]) + " + " + i;
  }
  ctx.line(indent + "{");
  const std::string init = op == "ReduceMax" ? "-INFINITY" : op == "ReduceMin" ? "INFINITY" : "0.f";
  ctx.line(indent + "  float acc = " + init + ";");
  std::string inner = indent + "  ";
  for (size_t j = 0; j < red.size(); ++j) {
    const std::string i = "r" + i64(static_cast<int64_t>(j));
    ctx.line(inner + "for (int64_t " + i + " = 0; " + i + " < " + i64(dims[red[j]]) + "; ++" + i + ")");
    inner += "  ";
    xi += " + " + i + " * " + i64(xs[red[j]]);
  }
  const std::string xe = "x[0" + xi + "]";
  if (op == "ReduceMax") ctx.line(inner + "acc = std::max(acc, " + xe + ");");
  else if (op == "ReduceMin") ctx.line(inner + "acc = std::min(acc, " + xe + ");");
  else ctx.line(inner + "acc += " + xe + ";");
  const std::string fin = op == "ReduceMean" ? "acc / " + literal_float(static_cast<float>(count)) : "acc";
  ctx.line(indent + "  y[" + (yi.empty() ? "0" : yi) + "] = " + fin + ";");
  ctx.line(indent + "}");
  ctx.line("}");
}

// Which axes of its rank-`rank` input a ReduceSum/Mean/Max/Min node reduces: `axes` (from its
// attribute or constant input), all of them when empty.
std::vector<bool> reduced_axes(EmitContext& ctx, const ir::Node& n, const std::vector<int64_t>& axes, int64_t rank) {
  if (axes.empty() && n.attr_int("noop_with_empty_axes", 0)) throw ctx.unsupported("noop_with_empty_axes is not emitted");
  std::vector<bool> reduced(static_cast<size_t>(rank), axes.empty());
  for (int64_t a : ops::normalize_axes(axes, rank, n)) reduced[static_cast<size_t>(a)] = true;
  return reduced;
}

bool is_reduction(const ir::Node& n) {
  const std::string& op = n.op_type();
  return n.domain().empty() && (op == "ReduceSum" || op == "ReduceMean" || op == "ReduceMax" || op == "ReduceMin");
}

}  // namespace

void emit_reduce(EmitContext& ctx) {
  const ir::Node& n = ctx.node;
  const Operand& x = ctx.step.inputs.at(0);
  if (x.dtype != DType::Float) throw ctx.unsupported("only float reductions are emitted");
  std::vector<int64_t> axes = n.attr_ints("axes");
  if (ctx.has_input(1)) axes = ctx.constant(1).to_int64_vector();
  const auto reduced = reduced_axes(ctx, n, axes, static_cast<int64_t>(x.dims.size()));
  emit_reduce_loops(ctx, n.op_type(), ctx.in(0), x.dims, reduced, ctx.out(0));
}

// kiln.FusedReduce: its body's elementwise prologue into a buffer of the reduction's input, the
// reduction, and its elementwise epilogue (ops of the reduced shape) from a buffer of the
// reduced values; both buffers in the thread's scratch (kernels/thread_scratch.h), reused
// from run to run.
void emit_fused_reduce(EmitContext& ctx) {
  auto it = ctx.node.attrs.find("body");
  if (it == ctx.node.attrs.end() || !it->second.g) throw ctx.unsupported("has no body graph");
  if (ctx.cuda) throw ctx.unsupported("a fused reduction is not written as CUDA kernels");
  const ir::Graph& body = *it->second.g;
  const std::vector<ir::Node*> nodes = body.nodes();
  size_t at = 0;
  while (at < nodes.size() && !is_reduction(*nodes[at])) ++at;
  if (at == nodes.size() || body.outputs().size() != 1) throw ctx.unsupported("has no reduction to end its prologue");
  const ir::Node& red = *nodes[at];
  const ir::Value *x = red.input(0), *r = red.output(0), *y = body.outputs()[0];
  if (!x->type.is_static() || !r->type.is_static() || x->type.dtype != DType::Float)
    throw ctx.unsupported("its reduction " + red.describe() + " is not of a static float tensor");
  std::vector<int64_t> axes = red.attr_ints("axes");
  if (red.has_input(1)) {
    if (!red.input(1)->is_constant()) throw ctx.unsupported("its reduction's axes are not constant");
    axes = red.input(1)->constant().to_int64_vector();
  }
  const std::vector<int64_t> xd = x->type.static_dims();
  const auto reduced = reduced_axes(ctx, red, axes, static_cast<int64_t>(xd.size()));
  const std::vector<const ir::Value*> sources(body.inputs().begin(), body.inputs().end());
  int64_t x_numel = 1, r_numel = 1;
  for (int64_t d : xd) x_numel *= d;
  for (int64_t d : r->type.static_dims()) r_numel *= d;

  std::string x_ptr = "x_in";
  const auto source = std::find(sources.begin(), sources.end(), x);
  const bool prologue = at > 0 || source == sources.end(), epilogue = at + 1 < nodes.size();
  if (!epilogue && r != y) throw ctx.unsupported("its reduction is not its output");
  // The reduction's input, then the reduced values (16-float aligned), in the thread's scratch.
  const int64_t x_floats = prologue ? (x_numel + 15) / 16 * 16 : 0;
  if (prologue || epilogue) {
    ctx.use_kernel("thread_scratch.h");
    ctx.line("float* scratch = static_cast<float*>(kiln_kernels::thread_scratch(" +
             i64((x_floats + (epilogue ? r_numel : 0)) * static_cast<int64_t>(sizeof(float))) + "));");
    ctx.line("if (!scratch) return c.fail(" + c_string(ctx.node.describe() + ": out of memory for its scratch") + ");");
  }
  if (prologue) {
    ctx.line("float* x_in = scratch;  // the reduction's input");
    ctx.line("{");  // each loop nest's pointers in a scope of their own
    emit_loop_nest(ctx, {nodes.begin(), nodes.begin() + static_cast<std::ptrdiff_t>(at)}, sources, {x}, {{x, "x_in"}});
    ctx.line("}");
  } else {
    x_ptr = ctx.in(static_cast<int>(source - sources.begin()));  // no prologue: the input itself
  }
  if (!epilogue) {
    emit_reduce_loops(ctx, red.op_type(), x_ptr, xd, reduced, ctx.out(0));
    return;
  }
  ctx.line("float* reduced = scratch + " + i64(x_floats) + ";  // the reduced values");
  emit_reduce_loops(ctx, red.op_type(), x_ptr, xd, reduced, "reduced");
  ctx.line("{");
  emit_loop_nest(ctx, {nodes.begin() + static_cast<std::ptrdiff_t>(at) + 1, nodes.end()}, sources, {y}, {{r, "reduced"}});
  ctx.line("}");
}

}  // namespace kiln::codegen::cpp
