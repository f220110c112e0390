// Resize (and Upsample) as a loop nest over the output with the per-axis tap tables of
// ops/core/resize_geometry.h written into the code: each output element is the weighted sum of
// its taps' inputs along the (at most two) axes that change.
#include <string>
#include <vector>

#include "codegen/cpp/loop_nest.h"
#include "codegen/cpp/op_emitters.h"
#include "ops/core/resize_geometry.h"

namespace kiln::codegen::cpp {

namespace {

std::string i64(int64_t v) { return std::to_string(v); }

template <typename T>
std::string list(const std::vector<T>& v, bool floats) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + (floats ? literal_float(static_cast<float>(v[i])) : std::to_string(static_cast<int64_t>(v[i])));
  return s + "}";
}

int64_t product(const std::vector<int64_t>& d, size_t b, size_t e) {
  int64_t p = 1;
  for (size_t i = b; i < e; ++i) p *= d[i];
  return p;
}

}  // namespace

void emit_resize(EmitContext& ctx) {
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
  struct Axis {
    size_t d;
    ops::ResizeAxisPlan p;
  };
  std::vector<Axis> axes;
  for (size_t d = 0; d < x.dims.size(); ++d) {
    ops::ResizeAxisPlan p = ops::plan_resize_axis(a, x.dims[d], y.dims[d], g.scale[d], g.roi_start[d], g.roi_end[d]);
    if (ops::is_identity(p, x.dims[d], y.dims[d])) continue;
    for (bool e : p.extrapolate)
      if (e) throw ctx.unsupported("tf_crop_and_resize points outside the input are not emitted");
    axes.push_back({d, std::move(p)});
  }
  if (axes.empty()) {
    emit_strided_copy(ctx, x.dtype, ctx.in(0), 0, dense_strides(x.dims), ctx.out(0), 0, dense_strides(y.dims), y.dims);
    return;
  }
  if (axes.size() > 2) throw ctx.unsupported("resizing more than two axes is not emitted");
  for (size_t k = 0; k < axes.size(); ++k) {
    const std::string K = std::to_string(k);
    ctx.line("static const int64_t idx" + K + "[] = " + list(axes[k].p.idx, false) + ";");
    ctx.line("static const float w" + K + "[] = " + list(axes[k].p.w, true) + ";");
  }
  // The output as [outer][out0][mid][out1][inner] (without out1 and mid for one axis).
  const size_t d0 = axes[0].d, d1 = axes.size() > 1 ? axes[1].d : x.dims.size();
  const int64_t outer = product(x.dims, 0, d0), in0 = x.dims[d0], out0 = y.dims[d0];
  const int64_t mid = axes.size() > 1 ? product(x.dims, d0 + 1, d1) : 1;
  const int64_t in1 = axes.size() > 1 ? x.dims[d1] : 1, out1 = axes.size() > 1 ? y.dims[d1] : 1;
  const int64_t inner = axes.size() > 1 ? product(x.dims, d1 + 1, x.dims.size()) : product(x.dims, d0 + 1, x.dims.size());
  const int t0 = axes[0].p.taps, t1 = axes.size() > 1 ? axes[1].p.taps : 1;
  ctx.line("const float* KILN_RESTRICT x = " + ctx.in(0) + ";");
  ctx.line("float* KILN_RESTRICT y = " + ctx.out(0) + ";");
  ctx.line("kiln_kernels::parallel_for(c.team, " + i64(outer * out0) + ", [&](int64_t begin, int64_t end) {");
  ctx.line("  for (int64_t r = begin; r < end; ++r) {");
  ctx.line("    const int64_t o = r / " + i64(out0) + ", a = r % " + i64(out0) + ";");
  ctx.line("    for (int64_t m = 0; m < " + i64(mid) + "; ++m)");
  ctx.line("      for (int64_t b = 0; b < " + i64(out1) + "; ++b)");
  ctx.line("        for (int64_t i = 0; i < " + i64(inner) + "; ++i) {");
  ctx.line("          float acc = 0.f;");
  ctx.line("          for (int k0 = 0; k0 < " + std::to_string(t0) + "; ++k0)");
  if (axes.size() > 1) {
    ctx.line("            for (int k1 = 0; k1 < " + std::to_string(t1) + "; ++k1)");
    ctx.line("              acc += w0[a * " + std::to_string(t0) + " + k0] * w1[b * " + std::to_string(t1) +
             " + k1] * x[(((o * " + i64(in0) + " + idx0[a * " + std::to_string(t0) + " + k0]) * " + i64(mid) + " + m) * " +
             i64(in1) + " + idx1[b * " + std::to_string(t1) + " + k1]) * " + i64(inner) + " + i];");
  } else {
    ctx.line("            acc += w0[a * " + std::to_string(t0) + " + k0] * x[(o * " + i64(in0) + " + idx0[a * " +
             std::to_string(t0) + " + k0]) * " + i64(inner) + " + i];");
  }
  ctx.line("          y[(((o * " + i64(out0) + " + a) * " + i64(mid) + " + m) * " + i64(out1) + " + b) * " + i64(inner) +
           " + i] = acc;");
  ctx.line("        }");
  ctx.line("  }");
  ctx.line("});");
}

}  // namespace kiln::codegen::cpp
