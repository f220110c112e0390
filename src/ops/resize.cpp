// Resize (opsets 10..19 forms) and the deprecated Upsample. Nearest, linear and cubic
// interpolation are tensor-product kernels, so the resize runs one axis at a time: each axis
// gets a plan (for every output coordinate, a few input taps and weights) and the data is
// interpolated along that axis, in double, before moving to the next axis.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/resize_geometry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

// Interpolates `src` (viewed as [outer, len_in, inner]) along the middle axis.
std::vector<double> apply_axis(const std::vector<double>& src, int64_t outer, int64_t len_in, int64_t inner,
                               int64_t len_out, const ResizeAxisPlan& p, double extrap) {
  std::vector<double> dst(static_cast<size_t>(outer * len_out * inner), 0.0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t x = 0; x < len_out; ++x) {
      double* d = &dst[(o * len_out + x) * inner];
      if (p.extrapolate[x]) {
        std::fill(d, d + inner, extrap);
        continue;
      }
      for (int k = 0; k < p.taps; ++k) {
        const double w = p.w[x * p.taps + k];
        if (w == 0) continue;
        const double* s = &src[(o * len_in + p.idx[x * p.taps + k]) * inner];
        for (int64_t j = 0; j < inner; ++j) d[j] += w * s[j];
      }
    }
  return dst;
}

void run_resize(KernelContext& ctx, const ResizeAttrs& a, const ResizeGeometry& g) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.make_output(0, in.dtype(), g.out);
  if (out.numel() == 0) return;
  if (in.numel() == 0) ctx.fail("cannot resize an empty tensor to a non-empty one");
  std::vector<double> buf(in.numel());
  for (int64_t i = 0; i < in.numel(); ++i) buf[i] = in.as_double(i);
  std::vector<int64_t> cur = in.dims();
  for (int d = 0; d < in.rank(); ++d) {
    ResizeAxisPlan p = plan_resize_axis(a, cur[d], g.out[d], g.scale[d], g.roi_start[d], g.roi_end[d]);
    if (is_identity(p, cur[d], g.out[d])) continue;
    buf = apply_axis(buf, product(cur, 0, d), cur[d], product(cur, d + 1), g.out[d], p, a.extrapolation);
    cur[d] = g.out[d];
  }
  dispatch_numeric(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* o = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) {
      if constexpr (is_float_v<T>) {
        o[i] = static_cast<T>(static_cast<compute_t<T>>(buf[i]));
      } else {
        const double lo = static_cast<double>(std::numeric_limits<T>::min());
        const double hi = static_cast<double>(std::numeric_limits<T>::max());
        o[i] = static_cast<T>(std::clamp(std::nearbyint(buf[i]), lo, hi));
      }
    }
  });
}

const Tensor* kernel_input(KernelContext& ctx, int i) { return i >= 0 && ctx.has_input(i) ? &ctx.input(i) : nullptr; }

void kernel_resize(KernelContext& ctx) {
  const ResizeAttrs a = read_resize_attrs(ctx.node(), ctx.opset());
  const ResizeInputSlots s = resize_slots(ctx.node(), ctx.opset());
  std::vector<float> attr_scales;
  if (ctx.node().op_type() == "Upsample" && ctx.opset() < 9) attr_scales = ctx.node().attr_floats("scales");
  const ResizeGeometry g = resolve_resize(ctx.node(), a, ctx.input(0).dims(), kernel_input(ctx, s.scales), kernel_input(ctx, s.sizes),
                             kernel_input(ctx, s.roi), attr_scales);
  run_resize(ctx, a, g);
}

void infer_resize(InferContext& ctx) {
  const ir::TensorType& in = ctx.input(0);
  const ResizeAttrs a = read_resize_attrs(ctx.node(), ctx.opset());
  const ResizeInputSlots s = resize_slots(ctx.node(), ctx.opset());
  if (!in.rank_known) {
    ctx.set_output(0, ir::TensorType::unranked(in.dtype));
    return;
  }
  auto value = [&](int i) -> const Tensor* { return i >= 0 && ctx.has_input(i) ? ctx.value(i) : nullptr; };
  auto unknown = [&](int i) { return i >= 0 && ctx.has_input(i) && !ctx.value(i); };
  std::vector<float> attr_scales;
  if (ctx.node().op_type() == "Upsample" && ctx.opset() < 9) attr_scales = ctx.node().attr_floats("scales");
  // The output rank is the input rank; extents need known scales/sizes and static input dims.
  const bool roi_needed = a.coord == "tf_crop_and_resize";
  auto given = [&](int i) { return value(i) && value(i)->numel() > 0; };
  // With one of scales/sizes known and non-empty, the other must be empty, known or not.
  const bool resolvable = given(s.scales) || given(s.sizes) || (!unknown(s.scales) && !unknown(s.sizes));
  if (!resolvable || (roi_needed && unknown(s.roi))) {
    std::vector<ir::Dim> dims;
    for (int i = 0; i < in.rank(); ++i) dims.push_back(ctx.fresh_dim());
    ctx.set_output(0, in.dtype, dims);
    return;
  }
  // Resolve twice, with two different stand-in extents for the symbolic dims: an output
  // extent that does not move is static, one that follows the stand-in keeps the symbol.
  auto geometry = [&](int64_t stand) {
    std::vector<int64_t> d;
    for (const auto& x : in.dims) d.push_back(x.is_static() ? x.value : stand);
    return resolve_resize(ctx.node(), a, d, given(s.sizes) ? nullptr : value(s.scales),
                   given(s.scales) ? nullptr : value(s.sizes), value(s.roi), attr_scales);
  };
  const ResizeGeometry g1 = geometry(1), g2 = geometry(7);
  std::vector<ir::Dim> dims;
  for (int i = 0; i < in.rank(); ++i) {
    if (in.dims[i].is_static() || g1.out[i] == g2.out[i]) dims.push_back(ir::Dim(g1.out[i]));
    else if (g1.out[i] == 1 && g2.out[i] == 7) dims.push_back(in.dims[i]);
    else dims.push_back(ctx.fresh_dim());
  }
  ctx.set_output(0, in.dtype, dims);
}

}  // namespace

KILN_REGISTER_OPS(resize) {
  reg.add({.name = "Resize", .since_version = 10, .max_version = 19, .min_inputs = 1, .max_inputs = 4, .pattern = PatternKind::Opaque,
           .infer = infer_resize, .kernel = kernel_resize});
  reg.add({.name = "Upsample", .since_version = 7, .min_inputs = 1, .max_inputs = 2, .pattern = PatternKind::Opaque,
           .infer = infer_resize, .kernel = kernel_resize});
}

}  // namespace kiln::ops
