// Resize (and Upsample) as a call of kernels/resize.h, the kernel kiln's CPU backend runs, with
// the per-axis tap tables of ops/core/resize_geometry.h written into the code.
#include <optional>
#include <string>
#include <vector>

#include "codegen/cpp/loop_nest.h"
#include "codegen/cpp/code_text.h"
#include "codegen/cpp/op_emitters.h"
#include "ops/core/resize_geometry.h"

namespace kiln::codegen::cpp {

namespace {

template <typename T>
std::string list(const std::vector<T>& v, bool floats) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + (floats ? literal_float(static_cast<float>(v[i])) : std::to_string(static_cast<int64_t>(v[i])));
  return s + "}";
}

}  // namespace

std::optional<ops::SeparableResize> resize_plan(EmitContext& ctx) {
  const ir::Node& n = ctx.node;
  const Operand& x = ctx.step.inputs.at(0);
  const Operand& y = ctx.step.outputs.at(0);
  if (x.dtype != DType::Float) throw ctx.unsupported("only float resizing is emitted");
  const int64_t opset = n.owner() ? n.owner()->opset("") : 17;
  const ops::ResizeAttrs a = ops::read_resize_attrs(n, opset);
  const ops::ResizeInputSlots slots = ops::resize_slots(n, opset);
  auto input = [&](int i) -> const Tensor* {
    if (i < 0 || !ctx.has_input(i)) return nullptr;
    if (!ctx.is_constant(i)) throw ctx.unsupported("scales, sizes and roi must be constants");
    return &ctx.constant(i);
  };
  std::vector<float> attr_scales;
  if (n.op_type() == "Upsample" && opset < 9) attr_scales = n.attr_floats("scales");
  const ops::ResizeGeometry g =
      ops::resolve_resize(n, a, x.dims, input(slots.scales), input(slots.sizes), input(slots.roi), attr_scales);
  if (g.out != y.dims) throw ctx.unsupported("the resolved output shape differs from the inferred one");
  std::optional<ops::SeparableResize> r = ops::separable_resize(a, g, x.dims);
  if (r) return r;
  bool identity = true;
  for (size_t d = 0; d < x.dims.size(); ++d)
    identity = identity && ops::is_identity(ops::plan_resize_axis(a, x.dims[d], y.dims[d], g.scale[d], g.roi_start[d],
                                                                  g.roi_end[d]),
                                            x.dims[d], y.dims[d]);
  if (!identity)
    throw ctx.unsupported("more than two resized axes, or tf_crop_and_resize points outside the input, are not emitted");
  emit_strided_copy(ctx, x.dtype, ctx.in(0), 0, dense_strides(x.dims), ctx.out(0), 0, dense_strides(y.dims), y.dims);
  return std::nullopt;
}

void emit_resize(EmitContext& ctx) {
  const Operand& x = ctx.step.inputs.at(0);
  const Operand& y = ctx.step.outputs.at(0);
  const std::optional<ops::SeparableResize> r = resize_plan(ctx);
  if (!r) return;
  ctx.use_kernel("resize.h");
  for (size_t k = 0; k < r->axes.size(); ++k) {
    const std::string K = std::to_string(k);
    const ops::ResizeAxisPlan& p = r->plans[k];
    ctx.line("static const int64_t idx" + K + "[] = " + list(p.idx, false) + ";");
    ctx.line("static const float w" + K + "[] = " + list(p.w, true) + ";");
    ctx.line("static const kiln_kernels::ResizeAxis a" + K + "{" + std::to_string(p.taps) + ", " + i64(x.dims[r->axes[k]]) +
             ", " + i64(y.dims[r->axes[k]]) + ", idx" + K + ", w" + K + "};");
  }
  const bool two = r->axes.size() > 1;
  ctx.line("const float* x = " + ctx.in(0) + ";");
  ctx.line("float* y = " + ctx.out(0) + ";");
  ctx.line("static const int64_t scratch_floats = kiln_kernels::resize_scratch_floats(" + i64(r->mid) + ", " +
           i64(r->inner) + ", a0, " + (two ? "&a1" : "nullptr") + ");");
  ctx.line("kiln_kernels::parallel_for(c.team, " + i64(r->outer * y.dims[r->axes[0]]) + ", [&](int64_t begin, int64_t end) {");
  ctx.line("  std::vector<float> scratch(scratch_floats);");
  ctx.line("  kiln_kernels::resize_rows(begin, end, " + i64(r->mid) + ", " + i64(r->inner) + ", a0, " +
           (two ? "&a1" : "nullptr") + ", x, y, scratch.data());");
  ctx.line("});");
}

}  // namespace kiln::codegen::cpp
