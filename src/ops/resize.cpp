// Resize (opsets 10..19 forms) and the deprecated Upsample. Nearest, linear and cubic
// interpolation are tensor-product kernels, so the resize runs one axis at a time: each axis
// gets a plan (for every output coordinate, a few input taps and weights) and the data is
// interpolated along that axis, in double, before moving to the next axis.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

struct ResizeAttrs {
  std::string mode = "nearest";
  std::string coord = "half_pixel";
  std::string nearest = "round_prefer_floor";  // or "simple" for the opset-10 / Upsample form
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0;
  std::string aspect = "stretch";
  std::vector<int64_t> axes;  // empty = all
};

ResizeAttrs read_attrs(const ir::Node& node, int64_t opset) {
  ResizeAttrs a;
  a.mode = node.attr_string("mode", "nearest");
  const bool legacy = node.op_type() == "Upsample" || opset < 11;
  if (a.mode == "bilinear") a.mode = "linear";  // Upsample-7 spelling
  if (a.mode != "nearest" && a.mode != "linear" && a.mode != "cubic")
    throw Error(node.describe() + ": unknown mode '" + a.mode + "'");
  if (legacy) {
    if (a.mode == "cubic") throw Error(node.describe() + ": cubic mode needs opset 11");
    a.coord = "asymmetric";
    a.nearest = "simple";
    return a;
  }
  a.coord = node.attr_string("coordinate_transformation_mode", "half_pixel");
  static const char* coords[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                 "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  if (std::find(std::begin(coords), std::end(coords), a.coord) == std::end(coords))
    throw UnsupportedError(node.describe() + ": coordinate_transformation_mode '" + a.coord + "' is not supported");
  a.nearest = node.attr_string("nearest_mode", "round_prefer_floor");
  if (a.nearest != "round_prefer_floor" && a.nearest != "round_prefer_ceil" && a.nearest != "floor" && a.nearest != "ceil")
    throw Error(node.describe() + ": unknown nearest_mode '" + a.nearest + "'");
  a.cubic_a = node.attr_float("cubic_coeff_a", -0.75f);
  a.exclude_outside = node.attr_int("exclude_outside", 0) != 0;
  a.extrapolation = node.attr_float("extrapolation_value", 0.f);
  if (opset >= 18) {
    if (node.attr_int("antialias", 0) != 0) throw UnsupportedError(node.describe() + ": antialias is not supported");
    a.aspect = node.attr_string("keep_aspect_ratio_policy", "stretch");
    if (a.aspect != "stretch" && a.aspect != "not_larger" && a.aspect != "not_smaller")
      throw Error(node.describe() + ": unknown keep_aspect_ratio_policy '" + a.aspect + "'");
    a.axes = node.attr_ints("axes");
  }
  return a;
}

// Where the scales / sizes / roi live for this op and opset.
struct InputSlots {
  int roi = -1, scales = -1, sizes = -1;
};

InputSlots slots(const ir::Node& node, int64_t opset) {
  if (node.op_type() == "Upsample") return opset >= 9 ? InputSlots{-1, 1, -1} : InputSlots{};
  if (opset < 11) return {-1, 1, -1};
  return {1, 2, 3};
}

// The resolved geometry: per-axis output size, scale and roi.
struct Geometry {
  std::vector<int64_t> out;
  std::vector<double> scale, roi_start, roi_end;
};

// Scale/size/roi values may be absent (nullptr) or empty tensors, which both mean "not given".
Geometry resolve(const ir::Node& node, const ResizeAttrs& a, const std::vector<int64_t>& in, const Tensor* scales,
                 const Tensor* sizes, const Tensor* roi, const std::vector<float>& attr_scales) {
  const int64_t r = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes = a.axes.empty() ? std::vector<int64_t>() : normalize_axes(a.axes, r, node);
  if (axes.empty())
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  const size_t n = axes.size();
  Geometry g;
  g.out = in;
  g.scale.assign(r, 1.0);
  g.roi_start.assign(r, 0.0);
  g.roi_end.assign(r, 1.0);
  const bool has_scales = (scales && scales->numel() > 0) || !attr_scales.empty();
  const bool has_sizes = sizes && sizes->numel() > 0;
  if (has_scales == has_sizes) throw Error(node.describe() + ": exactly one of scales and sizes must be given");
  if (has_scales) {
    std::vector<double> s;
    if (!attr_scales.empty()) s.assign(attr_scales.begin(), attr_scales.end());
    else
      for (int64_t i = 0; i < scales->numel(); ++i) s.push_back(static_cast<float>(scales->as_double(i)));
    if (s.size() != n)
      throw Error(node.describe() + ": scales has " + std::to_string(s.size()) + " entries for " + std::to_string(n) + " axes");
    for (size_t i = 0; i < n; ++i) {
      if (!(s[i] > 0)) throw Error(node.describe() + ": scales must be positive");
      g.scale[axes[i]] = s[i];
      g.out[axes[i]] = static_cast<int64_t>(std::floor(static_cast<double>(in[axes[i]]) * s[i]));
    }
  } else {
    if (sizes->numel() != static_cast<int64_t>(n))
      throw Error(node.describe() + ": sizes has " + std::to_string(sizes->numel()) + " entries for " + std::to_string(n) + " axes");
    std::vector<int64_t> sz = sizes->to_int64_vector();
    for (int64_t v : sz)
      if (v < 0) throw Error(node.describe() + ": sizes must be non-negative");
    if (a.aspect == "stretch") {
      for (size_t i = 0; i < n; ++i) {
        g.out[axes[i]] = sz[i];
        g.scale[axes[i]] = in[axes[i]] > 0 ? static_cast<double>(sz[i]) / in[axes[i]] : 1.0;
      }
    } else {
      double s = a.aspect == "not_larger" ? INFINITY : 0;
      for (size_t i = 0; i < n; ++i) {
        const double si = in[axes[i]] > 0 ? static_cast<double>(sz[i]) / in[axes[i]] : 1.0;
        s = a.aspect == "not_larger" ? std::min(s, si) : std::max(s, si);
      }
      for (size_t i = 0; i < n; ++i) {
        g.scale[axes[i]] = s;
        g.out[axes[i]] = static_cast<int64_t>(std::round(s * static_cast<double>(in[axes[i]])));
      }
    }
  }
  if (a.coord == "tf_crop_and_resize") {
    if (!roi || roi->numel() == 0) throw Error(node.describe() + ": tf_crop_and_resize needs roi");
    if (roi->numel() != static_cast<int64_t>(2 * n))
      throw Error(node.describe() + ": roi has " + std::to_string(roi->numel()) + " entries, expected " + std::to_string(2 * n));
    for (size_t i = 0; i < n; ++i) {
      g.roi_start[axes[i]] = roi->as_double(i);
      g.roi_end[axes[i]] = roi->as_double(i + n);
    }
  }
  return g;
}

// ---------------------------------------------------------------- per-axis plans

struct AxisPlan {
  int taps = 1;
  std::vector<int64_t> idx;  // out_len * taps
  std::vector<double> w;
  std::vector<bool> extrapolate;  // per output coordinate
};

// As in the ONNX reference, the formulas use the unrounded output length scale * len_in
// (it differs from the integer output length when the scale does not divide evenly).
double original_coord(const ResizeAttrs& a, int64_t x, double scale, int64_t len_in, int64_t len_out, double roi_s,
                      double roi_e) {
  const double xr = static_cast<double>(x);
  const double out_f = scale * static_cast<double>(len_in);
  if (a.coord == "half_pixel") return (xr + 0.5) / scale - 0.5;
  if (a.coord == "half_pixel_symmetric") {
    const double adj = static_cast<double>(len_out) / out_f;
    const double center = static_cast<double>(len_in) / 2;
    return center * (1 - adj) + (xr + 0.5) / scale - 0.5;
  }
  if (a.coord == "pytorch_half_pixel") return out_f > 1 ? (xr + 0.5) / scale - 0.5 : 0.0;
  if (a.coord == "align_corners") return out_f == 1 ? 0.0 : xr * static_cast<double>(len_in - 1) / (out_f - 1);
  if (a.coord == "asymmetric") return xr / scale;
  if (a.coord == "tf_half_pixel_for_nn") return (xr + 0.5) / scale;
  // tf_crop_and_resize
  const double span = static_cast<double>(len_in - 1);
  return out_f > 1 ? roi_s * span + xr * (roi_e - roi_s) * span / (out_f - 1) : 0.5 * (roi_s + roi_e) * span;
}

int64_t nearest_index(const ResizeAttrs& a, double x, double scale) {
  const double f = std::floor(x), frac = x - f;
  if (a.nearest == "simple") return static_cast<int64_t>(scale < 1 ? std::ceil(x) : f);
  if (a.nearest == "floor") return static_cast<int64_t>(f);
  if (a.nearest == "ceil") return static_cast<int64_t>(std::ceil(x));
  if (a.nearest == "round_prefer_ceil") return static_cast<int64_t>(frac >= 0.5 ? f + 1 : f);
  return static_cast<int64_t>(frac > 0.5 ? f + 1 : f);  // round_prefer_floor
}

void cubic_weights(double s, double A, double* w) {
  auto near = [&](double d) { return ((A + 2) * d - (A + 3)) * d * d + 1; };       // |d| <= 1
  auto far = [&](double d) { return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A; };  // 1 < |d| < 2
  w[0] = far(1 + s);
  w[1] = near(s);
  w[2] = near(1 - s);
  w[3] = far(2 - s);
}

AxisPlan plan_axis(const ResizeAttrs& a, int64_t len_in, int64_t len_out, double scale, double roi_s, double roi_e) {
  AxisPlan p;
  p.taps = a.mode == "nearest" ? 1 : a.mode == "linear" ? 2 : 4;
  p.idx.resize(len_out * p.taps);
  p.w.resize(len_out * p.taps);
  p.extrapolate.assign(len_out, false);
  for (int64_t x = 0; x < len_out; ++x) {
    const double xo = original_coord(a, x, scale, len_in, len_out, roi_s, roi_e);
    if (a.coord == "tf_crop_and_resize" && (xo < 0 || xo > static_cast<double>(len_in - 1))) {
      p.extrapolate[x] = true;
      for (int k = 0; k < p.taps; ++k) { p.idx[x * p.taps + k] = 0; p.w[x * p.taps + k] = 0; }
      continue;
    }
    int64_t* idx = &p.idx[x * p.taps];
    double* w = &p.w[x * p.taps];
    if (p.taps == 1) {
      idx[0] = std::clamp<int64_t>(nearest_index(a, xo, scale), 0, len_in - 1);
      w[0] = 1;
      continue;
    }
    const double f = std::floor(xo), s = xo - f;
    const int64_t base = static_cast<int64_t>(f) - (p.taps == 4 ? 1 : 0);
    if (p.taps == 2) { w[0] = 1 - s; w[1] = s; }
    else cubic_weights(s, a.cubic_a, w);
    double sum = 0;
    for (int k = 0; k < p.taps; ++k) {
      const int64_t i = base + k;
      if (a.exclude_outside && (i < 0 || i >= len_in)) w[k] = 0;
      sum += w[k];
      idx[k] = std::clamp<int64_t>(i, 0, len_in - 1);  // edge padding
    }
    if (a.exclude_outside && sum != 0)
      for (int k = 0; k < p.taps; ++k) w[k] /= sum;
  }
  return p;
}

bool is_identity(const AxisPlan& p, int64_t len_in, int64_t len_out) {
  if (len_in != len_out) return false;
  for (int64_t x = 0; x < len_out; ++x) {
    if (p.extrapolate[x]) return false;
    for (int k = 0; k < p.taps; ++k) {
      const double w = p.w[x * p.taps + k];
      if (w != 0 && !(p.idx[x * p.taps + k] == x && w == 1)) return false;
    }
  }
  return true;
}

// Interpolates `src` (viewed as [outer, len_in, inner]) along the middle axis.
std::vector<double> apply_axis(const std::vector<double>& src, int64_t outer, int64_t len_in, int64_t inner,
                               int64_t len_out, const AxisPlan& p, double extrap) {
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

void run_resize(KernelContext& ctx, const ResizeAttrs& a, const Geometry& g) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.make_output(0, in.dtype(), g.out);
  if (out.numel() == 0) return;
  if (in.numel() == 0) ctx.fail("cannot resize an empty tensor to a non-empty one");
  std::vector<double> buf(in.numel());
  for (int64_t i = 0; i < in.numel(); ++i) buf[i] = in.as_double(i);
  std::vector<int64_t> cur = in.dims();
  for (int d = 0; d < in.rank(); ++d) {
    AxisPlan p = plan_axis(a, cur[d], g.out[d], g.scale[d], g.roi_start[d], g.roi_end[d]);
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
  const ResizeAttrs a = read_attrs(ctx.node(), ctx.opset());
  const InputSlots s = slots(ctx.node(), ctx.opset());
  std::vector<float> attr_scales;
  if (ctx.node().op_type() == "Upsample" && ctx.opset() < 9) attr_scales = ctx.node().attr_floats("scales");
  const Geometry g = resolve(ctx.node(), a, ctx.input(0).dims(), kernel_input(ctx, s.scales), kernel_input(ctx, s.sizes),
                             kernel_input(ctx, s.roi), attr_scales);
  run_resize(ctx, a, g);
}

void infer_resize(InferContext& ctx) {
  const ir::TensorType& in = ctx.input(0);
  const ResizeAttrs a = read_attrs(ctx.node(), ctx.opset());
  const InputSlots s = slots(ctx.node(), ctx.opset());
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
    return resolve(ctx.node(), a, d, given(s.sizes) ? nullptr : value(s.scales),
                   given(s.scales) ? nullptr : value(s.sizes), value(s.roi), attr_scales);
  };
  const Geometry g1 = geometry(1), g2 = geometry(7);
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
