// Concat, Split and Slice as strided copies (loop_nest.h); Gather as row copies by the indices
// read at run time.
#include <string>
#include <vector>

#include "codegen/cpp/loop_nest.h"
#include "codegen/cpp/op_emitters.h"
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

}  // namespace kiln::codegen::cpp
