// Concat, Split, Slice and the block moves (DepthToSpace, SpaceToDepth) as strided copies
// (loop_nest.h); Gather as row copies by the indices read at run time.
#include <string>
#include <vector>

#include "codegen/cpp/code_text.h"
#include "codegen/cpp/loop_nest.h"
#include "codegen/cpp/op_emitters.h"
#include "ops/core/pad_args.h"
#include "ops/core/shape_util.h"
#include "ops/core/slice_args.h"

namespace kiln::codegen::cpp {

namespace {

int64_t opset_of(const ir::Node& n) { return n.owner() ? n.owner()->opset("") : 17; }

}  // namespace

void emit_concat(EmitContext& ctx) {
  const Operand& y = ctx.step.outputs.at(0);
  const int64_t axis = ops::normalize_axis(ctx.node.attr_int("axis", 0), static_cast<int64_t>(y.dims.size()), ctx.node);
  const std::vector<int64_t> ys = dense_strides(y.dims);
  int64_t at = 0;
  for (size_t k = 0; k < ctx.step.inputs.size(); ++k) {
    const Operand& x = ctx.step.inputs[k];
    if (x.buffer < 0) continue;
    emit_strided_copy(ctx, x.dtype, ctx.in(static_cast<int>(k)), 0, dense_strides(x.dims), ctx.out(0), at * ys[axis], ys,
                      x.dims);
    at += x.dims[axis];
  }
}

void emit_split(EmitContext& ctx) {
  const Operand& x = ctx.step.inputs.at(0);
  const int64_t axis = ops::normalize_axis(ctx.node.attr_int("axis", 0), static_cast<int64_t>(x.dims.size()), ctx.node);
  const std::vector<int64_t> xs = dense_strides(x.dims);
  int64_t at = 0;
  for (size_t k = 0; k < ctx.step.outputs.size(); ++k) {
    const Operand& y = ctx.step.outputs[k];
    const int64_t extent = ctx.node.output(static_cast<int>(k))->type.static_dims()[axis];
    if (y.buffer >= 0)
      emit_strided_copy(ctx, y.dtype, ctx.in(0), at * xs[axis], xs, ctx.out(static_cast<int>(k)), 0,
                        dense_strides(y.dims), y.dims);
    at += extent;
  }
}

void emit_slice(EmitContext& ctx) {
  const Operand& x = ctx.step.inputs.at(0);
  const Operand& y = ctx.step.outputs.at(0);
  ops::SliceArgs a;
  ops::slice_args(ctx.node, opset_of(ctx.node),
                  [&](int i) -> const Tensor* { return ctx.is_constant(i) ? &ctx.constant(i) : nullptr; }, a) ||
      (throw ctx.unsupported("starts, ends, axes and steps must be constants"), false);
  const std::vector<int64_t> axes = ops::slice_axes(a, static_cast<int64_t>(x.dims.size()), ctx.node);
  std::vector<int64_t> strides = dense_strides(x.dims);
  int64_t base = 0;
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t s = a.starts[i];
    const int64_t n = ops::clamp_slice(s, a.ends[i], a.steps[i], x.dims[axes[i]], ctx.node);
    if (n > 0) base += s * strides[axes[i]];
    if (n > 1) strides[axes[i]] *= a.steps[i];
  }
  emit_strided_copy(ctx, x.dtype, ctx.in(0), base, strides, ctx.out(0), 0, dense_strides(y.dims), y.dims);
}

void emit_gather(EmitContext& ctx) {
  const Operand& x = ctx.step.inputs.at(0);
  const Operand& idx = ctx.step.inputs.at(1);
  const Operand& y = ctx.step.outputs.at(0);
  if (idx.dtype != DType::Int64 && idx.dtype != DType::Int32) throw ctx.unsupported("indices must be int32 or int64");
  const int64_t axis = ops::normalize_axis(ctx.node.attr_int("axis", 0), static_cast<int64_t>(x.dims.size()), ctx.node);
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= x.dims[k];
  for (size_t k = axis + 1; k < x.dims.size(); ++k) inner *= x.dims[k];
  const int64_t D = x.dims[axis], n = idx.numel();
  const std::string T = ctype(x.dtype), D_ = std::to_string(D), in_ = std::to_string(inner);
  ctx.line("const " + T + "* x = " + ctx.in(0) + ";");
  ctx.line("const " + ctype(idx.dtype) + "* idx = " + ctx.in(1) + ";");
  ctx.line(T + "* y = " + ctx.out(0) + ";");
  ctx.line("for (int64_t j = 0; j < " + std::to_string(n) + "; ++j)");
  ctx.line("  if (idx[j] < -" + D_ + " || idx[j] >= " + D_ + ") return c.fail(" +
           c_string(ctx.node.describe() + ": an index is out of range [-" + D_ + ", " + D_ + ")") + ");");
  ctx.line("for (int64_t o = 0; o < " + std::to_string(outer) + "; ++o)");
  ctx.line("  for (int64_t j = 0; j < " + std::to_string(n) + "; ++j) {");
  ctx.line("    const int64_t i = idx[j] < 0 ? idx[j] + " + D_ + " : idx[j];");
  ctx.line("    std::memcpy(y + (o * " + std::to_string(n) + " + j) * " + in_ + ", x + (o * " + D_ + " + i) * " + in_ +
           ", " + in_ + " * sizeof(" + T + "));");
  ctx.line("  }");
  (void)y;
}

// GatherND with batch_dims b: data [B..., D_0..D_{k-1}, S...], indices [B..., M..., k]; each
// index tuple (negative values counting from the end) picks a slice of S's elements.
void emit_gather_nd(EmitContext& ctx) {
  const Operand& x = ctx.step.inputs.at(0);
  const Operand& idx = ctx.step.inputs.at(1);
  if (idx.dtype != DType::Int64) throw ctx.unsupported("indices must be int64");
  const int64_t r = static_cast<int64_t>(x.dims.size()), q = static_cast<int64_t>(idx.dims.size());
  const int64_t b = ctx.node.attr_int("batch_dims", 0);
  if (q < 1 || b < 0 || b >= std::min(r, q)) throw ctx.unsupported("batch_dims out of range");
  const int64_t k = idx.dims.back();
  if (k < 1 || b + k > r) throw ctx.unsupported("the index tuples' length is out of range");
  int64_t batch = 1, tuples = 1, slice = 1;
  for (int64_t a = 0; a < b; ++a) batch *= x.dims[a];
  for (int64_t a = b; a < q - 1; ++a) tuples *= idx.dims[a];
  for (int64_t a = b + k; a < r; ++a) slice *= x.dims[a];
  std::vector<int64_t> dims, strides;
  for (int64_t j = 0; j < k; ++j) {
    int64_t stride = 1;
    for (int64_t a = b + j + 1; a < r; ++a) stride *= x.dims[a];
    dims.push_back(x.dims[b + j]);
    strides.push_back(stride);
  }
  const int64_t batch_stride = b > 0 ? strides.front() * dims.front() : 0;
  const std::string T = ctype(x.dtype);
  ctx.line("static const int64_t dims[] = " + int_list(dims) + ", strides[] = " + int_list(strides) + ";");
  ctx.line("const " + T + "* x = " + ctx.in(0) + ";");
  ctx.line("const int64_t* idx = " + ctx.in(1) + ";");
  ctx.line(T + "* y = " + ctx.out(0) + ";");
  ctx.line("for (int64_t n = 0; n < " + i64(batch) + "; ++n)");
  ctx.line("  for (int64_t t = 0; t < " + i64(tuples) + "; ++t) {");
  ctx.line("    const int64_t* ix = idx + (n * " + i64(tuples) + " + t) * " + i64(k) + ";");
  ctx.line("    int64_t at = n * " + i64(batch_stride) + ";");
  ctx.line("    for (int64_t j = 0; j < " + i64(k) + "; ++j) {");
  ctx.line("      if (ix[j] < -dims[j] || ix[j] >= dims[j]) return c.fail(" +
           c_string(ctx.node.describe() + ": an index is out of range") + ");");
  ctx.line("      at += (ix[j] < 0 ? ix[j] + dims[j] : ix[j]) * strides[j];");
  ctx.line("    }");
  ctx.line("    std::memcpy(y + (n * " + i64(tuples) + " + t) * " + i64(slice) + ", x + at, " + i64(slice) + " * sizeof(" + T +
           "));");
  ctx.line("  }");
}

namespace {

// y's copy of x through per-axis source tables (kernels/axis_gather.h), `table(k, o)` giving the
// input coordinate on axis k of output coordinate o (or -1 for `fill`): written as static arrays
// in the instruction's function.
template <typename Table>
void emit_axis_gather(EmitContext& ctx, const Table& table, double fill) {
  const Operand& x = ctx.step.inputs.at(0);
  const Operand& y = ctx.step.outputs.at(0);
  const int64_t rank = static_cast<int64_t>(y.dims.size());
  if (rank < 1 || rank > 9 || static_cast<int64_t>(x.dims.size()) != rank)
    throw ctx.unsupported("only tensors of rank 1 to 9 are emitted");
  ctx.use_kernel("axis_gather.h");
  std::string tables;
  for (int64_t k = 0; k < rank; ++k) {
    std::vector<int64_t> src;
    for (int64_t o = 0; o < y.dims[k]; ++o) src.push_back(table(k, o));
    ctx.line("static const int64_t src" + i64(k) + "[] = " + int_list(src) + ";");
    tables += (k ? ", src" : "src") + i64(k);
  }
  ctx.line("static const int64_t* const src[] = {" + tables + "};");
  ctx.line("static const int64_t ydims[] = " + int_list(y.dims) + ";");
  ctx.line("static const int64_t xstrides[] = " + int_list(dense_strides(x.dims)) + ";");
  ctx.line("kiln_kernels::axis_gather<" + ctype(y.dtype) + ">(" + i64(rank) + ", ydims, xstrides, src, " + ctx.in(0) +
           ", " + ctx.out(0) + ", " + literal(y.dtype, fill) + ");");
}

}  // namespace

void emit_pad(EmitContext& ctx) {
  const Operand& x = ctx.step.inputs.at(0);
  const Operand& y = ctx.step.outputs.at(0);
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  ops::PadArgs a;
  ops::pad_args(ctx.node, opset_of(ctx.node), rank,
                [&](int i) -> const Tensor* { return ctx.is_constant(i) ? &ctx.constant(i) : nullptr; }, a) ||
      (throw ctx.unsupported("the pads and axes must be constants"), false);
  if (a.mode != "constant") {
    if (ctx.cuda) throw ctx.unsupported("Pad mode '" + a.mode + "' is not emitted for CUDA (only constant)");
    return emit_axis_gather(
        ctx, [&](int64_t k, int64_t o) { return ops::pad_source(o, a.pads[k], x.dims[k], a.mode); }, 0.0);
  }
  double value = opset_of(ctx.node) < 11 ? ctx.node.attr_float("value", 0.f) : 0.0;
  if (ctx.has_input(2)) {
    if (!ctx.is_constant(2)) throw ctx.unsupported("the constant value must be a constant");
    const Tensor& v = ctx.constant(2);
    if (v.numel() != 1) throw ctx.unsupported("the constant value must be a scalar");
    value = v.dtype() == DType::Float ? v.data<float>()[0] : static_cast<double>(v.to_int64_vector()[0]);
  }
  // The output filled with the value, then the part of the input the pads keep copied inside
  // (a negative pad crops).
  if (!ctx.cuda) ctx.line("{");
  write_loops(ctx, {{ctype(y.dtype), "y", ctx.out(0), true}}, {y.numel()}, {"y[i0] = " + literal(y.dtype, value) + ";"},
              ctx.cuda ? "" : "  ");
  if (!ctx.cuda) ctx.line("}");
  const std::vector<int64_t> xs = dense_strides(x.dims), ys = dense_strides(y.dims);
  std::vector<int64_t> extent(rank);
  int64_t src = 0, dst = 0;
  for (int64_t k = 0; k < rank; ++k) {
    const int64_t b = a.pads[k], e = a.pads[k + rank];
    extent[k] = x.dims[k] - std::max<int64_t>(0, -b) - std::max<int64_t>(0, -e);
    if (extent[k] <= 0) return;
    src += std::max<int64_t>(0, -b) * xs[k];
    dst += std::max<int64_t>(0, b) * ys[k];
  }
  emit_strided_copy(ctx, x.dtype, ctx.in(0), src, xs, ctx.out(0), dst, ys, extent);
}

// Tile with constant repeats: output coordinate o of an axis reads o modulo the input's extent.
void emit_tile(EmitContext& ctx) {
  const Operand& x = ctx.step.inputs.at(0);
  if (ctx.cuda) throw ctx.unsupported("Tile is not emitted for CUDA");
  if (!ctx.is_constant(1)) throw ctx.unsupported("the repeats must be a constant");
  for (int64_t d : x.dims)
    if (d == 0) throw ctx.unsupported("an empty input is not emitted");
  emit_axis_gather(ctx, [&](int64_t k, int64_t o) { return o % x.dims[k]; }, 0.0);
}

// DepthToSpace / SpaceToDepth, ONNX's on NCHW and kiln's channels-last forms, as one strided
// copy over the six dims (n, h, i, w, j, k) of a block move: pixel (h·b + i, w·b + j), channel k
// of the wide side is channel (i·b + j)·c + k (DCR) or k·b² + i·b + j (CRD) of pixel (h, w) of
// the deep side.
void emit_depth_space(EmitContext& ctx) {
  const bool to_space = ctx.node.op_type().find("DepthToSpace") != std::string::npos;
  const bool nhwc = ctx.node.domain() == "kiln";
  const Operand& x = ctx.step.inputs.at(0);
  const Operand& y = ctx.step.outputs.at(0);
  const Operand& deep = to_space ? x : y;
  if (deep.dims.size() != 4) throw ctx.unsupported("a rank-4 tensor is needed");
  const int64_t b = ctx.node.attr_int("blocksize", 0);
  const bool crd = to_space && ctx.node.attr_string("mode", "DCR") == "CRD";
  const int64_t N = deep.dims[0], C = nhwc ? deep.dims[3] : deep.dims[1], H = nhwc ? deep.dims[1] : deep.dims[2],
                W = nhwc ? deep.dims[2] : deep.dims[3];
  if (b < 1 || C % (b * b)) throw ctx.unsupported("the channels are not a multiple of blocksize²");
  const int64_t c = C / (b * b), HW = H * W, Wb = W * b;
  // Strides of (n, h, i, w, j, k) on each side.
  auto ch = [&](int64_t s) { return nhwc ? s : s * HW; };  // one channel step on the deep side
  const std::vector<int64_t> deep_st = nhwc ? std::vector<int64_t>{H * W * C, W * C, crd ? b : b * c, C, crd ? 1 : c, crd ? b * b : 1}
                                            : std::vector<int64_t>{C * HW, W, crd ? ch(b) : ch(b * c), 1, crd ? ch(1) : ch(c), crd ? ch(b * b) : ch(1)};
  const std::vector<int64_t> wide_st = nhwc ? std::vector<int64_t>{H * b * Wb * c, b * Wb * c, Wb * c, b * c, c, 1}
                                            : std::vector<int64_t>{c * H * b * Wb, b * Wb, Wb, b, 1, H * b * Wb};
  const std::vector<int64_t> dims{N, H, b, W, b, c};
  if (to_space) emit_strided_copy(ctx, x.dtype, ctx.in(0), 0, deep_st, ctx.out(0), 0, wide_st, dims);
  else emit_strided_copy(ctx, x.dtype, ctx.in(0), 0, wide_st, ctx.out(0), 0, deep_st, dims);
}

void emit_dropout(EmitContext& ctx) {
  // Inference, or training with a ratio of 0 (what exporters write for eval-mode dropout
  // layers): the identity, every mask element true.
  const bool training = ctx.has_input(2) && (!ctx.is_constant(2) || ctx.constant(2).to_int64_vector().at(0) != 0);
  const bool zero_ratio = ctx.is_constant(1) && ctx.constant(1).numel() == 1 &&
                          (ctx.constant(1).dtype() == DType::Float ? ctx.constant(1).data<float>()[0] == 0.f
                                                                   : ctx.constant(1).to_int64_vector()[0] == 0);
  if (training && !zero_ratio) throw ctx.unsupported("training mode with a nonzero ratio is not emitted");
  const Operand& x = ctx.step.inputs.at(0);
  const Operand& y = ctx.step.outputs.at(0);
  if (!(x.storage == y.storage))
    emit_strided_copy(ctx, x.dtype, ctx.in(0), 0, dense_strides(x.dims), ctx.out(0), 0, dense_strides(y.dims), y.dims);
  if (ctx.step.outputs.size() > 1 && ctx.step.outputs[1].buffer >= 0)
    ctx.line("for (int64_t i = 0; i < " + std::to_string(ctx.step.outputs[1].numel()) + "; ++i) " + ctx.out(1) +
             "[i] = true;");
}

void emit_matmul_runtime(EmitContext& ctx) {
  const Operand &a = ctx.step.inputs.at(0), &b = ctx.step.inputs.at(1);
  const Operand& y = ctx.step.outputs.at(0);
  if (a.dtype != DType::Float || b.dtype != DType::Float) throw ctx.unsupported("only float MatMul is emitted");
  if (a.dims.size() < 2 || b.dims.size() < 2) throw ctx.unsupported("a MatMul of a vector is not emitted");
  if (ctx.node.domain() == "kiln" && (ctx.has_input(2) || ctx.node.attrs.count("activation")))
    throw ctx.unsupported("a fused MatMul of two computed operands is not emitted");
  const int64_t M = a.dims[a.dims.size() - 2], K = a.dims.back(), N = b.dims.back();
  const std::vector<int64_t> ob(y.dims.begin(), y.dims.end() - 2);
  auto batch = [](const Operand& t) { return std::vector<int64_t>(t.dims.begin(), t.dims.end() - 2); };
  const std::vector<int64_t> ao = batch_offsets(ob, batch(a)), bo = batch_offsets(ob, batch(b));
  ctx.use_kernel("gemm.h");
  ctx.line("static const int64_t ao[] = " + int_list(ao) + ";");
  ctx.line("static const int64_t bo[] = " + int_list(bo) + ";");
  ctx.line("const float* a = " + ctx.in(0) + ";");
  ctx.line("const float* b = " + ctx.in(1) + ";");
  ctx.line("float* y = " + ctx.out(0) + ";");
  ctx.line("kiln_kernels::parallel_for(c.team, " + std::to_string(ao.size()) + ", [&](int64_t b0, int64_t b1) {");
  ctx.line("  for (int64_t i = b0; i < b1; ++i)");
  ctx.line("    kiln_kernels::matmul(" + std::to_string(M) + ", " + std::to_string(K) + ", " + std::to_string(N) +
           ", a + ao[i] * " + std::to_string(M * K) + ", b + bo[i] * " + std::to_string(K * N) + ", y + i * " +
           std::to_string(M * N) + ");");
  ctx.line("});");
}

}  // namespace kiln::codegen::cpp
