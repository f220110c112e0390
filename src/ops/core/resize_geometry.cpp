#include "ops/core/resize_geometry.h"

#include <algorithm>
#include <cmath>

#include "ops/core/shape_util.h"

namespace kiln::ops {

ResizeAttrs read_resize_attrs(const ir::Node& node, int64_t opset) {
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
    const int64_t aa = node.attr_int("antialias", 0);
    if (aa != 0 && aa != 1) throw Error(node.describe() + ": antialias must be 0 or 1, got " + std::to_string(aa));
    a.antialias = aa != 0;
    a.aspect = node.attr_string("keep_aspect_ratio_policy", "stretch");
    if (a.aspect != "stretch" && a.aspect != "not_larger" && a.aspect != "not_smaller")
      throw Error(node.describe() + ": unknown keep_aspect_ratio_policy '" + a.aspect + "'");
    a.axes = node.attr_ints("axes");
  }
  return a;
}

ResizeInputSlots resize_slots(const ir::Node& node, int64_t opset) {
  if (node.op_type() == "Upsample") return opset >= 9 ? ResizeInputSlots{-1, 1, -1} : ResizeInputSlots{};
  if (opset < 11) return {-1, 1, -1};
  return {1, 2, 3};
}

ResizeGeometry resolve_resize(const ir::Node& node, const ResizeAttrs& a, const std::vector<int64_t>& in, const Tensor* scales,
                 const Tensor* sizes, const Tensor* roi, const std::vector<float>& attr_scales) {
  const int64_t r = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes = a.axes.empty() ? std::vector<int64_t>() : normalize_axes(a.axes, r, node);
  if (axes.empty())
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  const size_t n = axes.size();
  ResizeGeometry g;
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

namespace {

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

// The interpolation filter at distance d (in input pixels for a plain resize): linear's tent of
// radius 1, cubic's kernel of radius 2.
double filter(const ResizeAttrs& a, double d) {
  d = std::abs(d);
  if (a.mode == "linear") return std::max(0.0, 1 - d);
  const double A = a.cubic_a;
  if (d <= 1) return ((A + 2) * d - (A + 3)) * d * d + 1;
  if (d < 2) return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A;
  return 0;
}

// An antialiased downscale (scale < 1) stretches the filter to radius r / scale, so that every
// input pixel under an output pixel contributes; the taps of output x are floor(x_orig) + first
// .. + first + taps - 1, which holds every tap the stretched filter reaches.
bool stretched(const ResizeAttrs& a, double scale) { return a.antialias && a.mode != "nearest" && scale < 1; }
int64_t stretched_first(const ResizeAttrs& a, double scale) {
  const double radius = a.mode == "linear" ? 1 : 2;
  return static_cast<int64_t>(std::floor(-radius / scale)) + 1;
}

}  // namespace

ResizeAxisPlan plan_resize_axis(const ResizeAttrs& a, int64_t len_in, int64_t len_out, double scale, double roi_s, double roi_e) {
  ResizeAxisPlan p;
  const bool wide = stretched(a, scale);
  const int64_t first = wide ? stretched_first(a, scale) : a.mode == "cubic" ? -1 : 0;
  p.taps = a.mode == "nearest" ? 1 : static_cast<int>(2 - 2 * first);
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
    const int64_t base = static_cast<int64_t>(f) + first;
    if (wide) {
      // The stretched filter's weights do not sum to 1 by themselves: normalize them.
      double total = 0;
      for (int k = 0; k < p.taps; ++k) total += w[k] = filter(a, scale * (static_cast<double>(first + k) - s));
      for (int k = 0; k < p.taps; ++k) w[k] /= total;
    } else if (p.taps == 2) {
      w[0] = 1 - s;
      w[1] = s;
    } else {
      cubic_weights(s, a.cubic_a, w);
    }
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

bool is_identity(const ResizeAxisPlan& p, int64_t len_in, int64_t len_out) {
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

std::optional<SeparableResize> separable_resize(const ResizeAttrs& a, const ResizeGeometry& g,
                                                const std::vector<int64_t>& in) {
  SeparableResize r;
  for (size_t d = 0; d < in.size(); ++d) {
    ResizeAxisPlan p = plan_resize_axis(a, in[d], g.out[d], g.scale[d], g.roi_start[d], g.roi_end[d]);
    if (is_identity(p, in[d], g.out[d])) continue;
    for (bool e : p.extrapolate)
      if (e) return std::nullopt;
    r.axes.push_back(d);
    r.plans.push_back(std::move(p));
  }
  if (r.axes.empty() || r.axes.size() > 2) return std::nullopt;
  const size_t d0 = r.axes[0], d1 = r.axes.size() > 1 ? r.axes[1] : in.size();
  for (size_t d = 0; d < in.size(); ++d) {
    if (d < d0) r.outer *= in[d];
    else if (d > d0 && d < d1) (r.axes.size() > 1 ? r.mid : r.inner) *= in[d];
    else if (d > d1) r.inner *= in[d];
  }
  return r;
}

}  // namespace kiln::ops
