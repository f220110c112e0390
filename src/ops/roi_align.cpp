// RoiAlign (opset 10, 16): pools each region of interest of a 4-D X [N, C, H, W] into an
// [output_height, output_width] grid of bins, each bin the average (or max) of bilinearly
// interpolated samples on a regular sampling grid, as in Mask R-CNN.
//
// Opset 16 added coordinate_transformation_mode (default half_pixel: ROI corners are shifted
// by -0.5 pixel); opset 10 behaves as output_half_pixel (no shift, ROI extents at least 1).
// Sampling follows the ONNX reference / onnxruntime: samples more than one pixel outside the
// image contribute 0, others are clamped to the image; "max" takes the max over samples of
// the max of the four weighted corner values (that reference's definition).
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

struct Options {
  bool max_mode;
  bool half_pixel;
  int64_t out_h, out_w, sampling_ratio;
  double spatial_scale;
};

template <typename Ctx>
Options options_of(const Ctx& ctx) {
  const ir::Node& n = ctx.node();
  Options o{};
  const std::string mode = n.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") ctx.fail("mode must be 'avg' or 'max', got '" + mode + "'");
  o.max_mode = mode == "max";
  if (ctx.opset() >= 16) {
    const std::string ctm = n.attr_string("coordinate_transformation_mode", "half_pixel");
    if (ctm != "half_pixel" && ctm != "output_half_pixel")
      ctx.fail("coordinate_transformation_mode must be half_pixel or output_half_pixel, got '" + ctm + "'");
    o.half_pixel = ctm == "half_pixel";
  }
  o.out_h = n.attr_int("output_height", 1);
  o.out_w = n.attr_int("output_width", 1);
  o.sampling_ratio = n.attr_int("sampling_ratio", 0);
  o.spatial_scale = n.attr_float("spatial_scale", 1.f);
  if (o.out_h < 1 || o.out_w < 1)
    ctx.fail("output_height and output_width must be >= 1, got " + std::to_string(o.out_h) + " and " +
             std::to_string(o.out_w));
  if (o.sampling_ratio < 0) ctx.fail("sampling_ratio must be >= 0, got " + std::to_string(o.sampling_ratio));
  return o;
}

void infer_roi_align(InferContext& ctx) {
  const Options o = options_of(ctx);
  const ir::TensorType& x = ctx.input(0);
  const ir::TensorType& rois = ctx.input(1);
  const ir::TensorType& bi = ctx.input(2);
  if (x.dtype != DType::Undefined && !dtype_is_float(x.dtype)) ctx.fail("X must be floating-point, got " + x.str());
  if (rois.dtype != DType::Undefined && x.dtype != DType::Undefined && rois.dtype != x.dtype)
    ctx.fail("rois must have X's dtype, got " + rois.str() + " for X " + x.str());
  if (bi.dtype != DType::Undefined && bi.dtype != DType::Int64) ctx.fail("batch_indices must be int64, got " + bi.str());
  if (x.rank_known && x.rank() != 4) ctx.fail("X must be 4-D [N, C, H, W], got " + x.str());
  if (rois.rank_known && (rois.rank() != 2 || (rois.dims[1].is_static() && rois.dims[1].value != 4)))
    ctx.fail("rois must be [num_rois, 4], got " + rois.str());
  if (bi.rank_known && bi.rank() != 1) ctx.fail("batch_indices must be 1-D [num_rois], got " + bi.str());
  ir::Dim r = ir::Dim::unknown();
  if (rois.rank_known) r = rois.dims[0];
  if (bi.rank_known) {
    const ir::Dim& b = bi.dims[0];
    if (r.is_static() && b.is_static() && r.value != b.value)
      ctx.fail("rois " + rois.str() + " and batch_indices " + bi.str() + " disagree on num_rois");
    if (!r.is_static() && (b.is_static() || (!r.is_symbolic() && b.is_symbolic()))) r = b;
  }
  if (!r.is_static() && !r.is_symbolic()) r = ctx.fresh_dim();
  ir::Dim c = x.rank_known ? x.dims[1] : ctx.fresh_dim();
  if (!c.is_static() && !c.is_symbolic()) c = ctx.fresh_dim();
  ctx.set_output(0, x.dtype, {r, c, o.out_h, o.out_w});
}

// One bilinear sample: four pixel offsets and weights (weights all 0 outside the image).
struct Sample {
  int64_t pos[4] = {0, 0, 0, 0};
  double w[4] = {0, 0, 0, 0};
};

Sample make_sample(double y, double x, int64_t h, int64_t w) {
  Sample s;
  if (y < -1.0 || y > static_cast<double>(h) || x < -1.0 || x > static_cast<double>(w)) return s;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  int64_t y_lo = static_cast<int64_t>(y), x_lo = static_cast<int64_t>(x), y_hi, x_hi;
  if (y_lo >= h - 1) {
    y_hi = y_lo = h - 1;
    y = static_cast<double>(y_lo);
  } else {
    y_hi = y_lo + 1;
  }
  if (x_lo >= w - 1) {
    x_hi = x_lo = w - 1;
    x = static_cast<double>(x_lo);
  } else {
    x_hi = x_lo + 1;
  }
  const double ly = y - static_cast<double>(y_lo), lx = x - static_cast<double>(x_lo);
  const double hy = 1 - ly, hx = 1 - lx;
  s.pos[0] = y_lo * w + x_lo;
  s.pos[1] = y_lo * w + x_hi;
  s.pos[2] = y_hi * w + x_lo;
  s.pos[3] = y_hi * w + x_hi;
  s.w[0] = hy * hx;
  s.w[1] = hy * lx;
  s.w[2] = ly * hx;
  s.w[3] = ly * lx;
  return s;
}

void roi_align_kernel(KernelContext& ctx) {
  const Options o = options_of(ctx);
  const Tensor& x = ctx.input(0);
  const Tensor& rois = ctx.input(1);
  const Tensor& bi = ctx.input(2);
  if (x.rank() != 4) ctx.fail("X must be 4-D [N, C, H, W], got " + x.describe());
  if (rois.rank() != 2 || rois.dim(1) != 4) ctx.fail("rois must be [num_rois, 4], got " + rois.describe());
  if (rois.dtype() != x.dtype()) ctx.fail("rois must have X's dtype, got " + rois.describe());
  if (bi.dtype() != DType::Int64 || bi.rank() != 1 || bi.dim(0) != rois.dim(0))
    ctx.fail("batch_indices must be int64 [num_rois], got " + bi.describe() + " for rois " + rois.describe());
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), R = rois.dim(0);
  const int64_t PH = o.out_h, PW = o.out_w;
  const int64_t* bp = bi.data<int64_t>();
  const double offset = o.half_pixel ? 0.5 : 0.0;
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using F = compute_t<T>;
    const T* xp = x.data<T>();
    T* yp = ctx.make_output(0, x.dtype(), {R, C, PH, PW}).template data<T>();
    if (H == 0 || W == 0) return;  // nothing to sample: every bin stays 0
    std::vector<Sample> samples;
    for (int64_t r = 0; r < R; ++r) {
      const int64_t b = bp[r];
      if (b < 0 || b >= N)
        ctx.fail("roi " + std::to_string(r) + " names batch " + std::to_string(b) + " outside [0, " + std::to_string(N) + ")");
      const double sx = rois.as_double(r * 4) * o.spatial_scale - offset;
      const double sy = rois.as_double(r * 4 + 1) * o.spatial_scale - offset;
      const double ex = rois.as_double(r * 4 + 2) * o.spatial_scale - offset;
      const double ey = rois.as_double(r * 4 + 3) * o.spatial_scale - offset;
      double rw = ex - sx, rh = ey - sy;
      if (!o.half_pixel) {
        // Legacy behaviour: malformed ROIs are forced to at least 1x1.
        rw = std::max(rw, 1.0);
        rh = std::max(rh, 1.0);
      }
      const double bin_h = rh / static_cast<double>(PH), bin_w = rw / static_cast<double>(PW);
      const int64_t gh = o.sampling_ratio > 0 ? o.sampling_ratio : static_cast<int64_t>(std::ceil(rh / static_cast<double>(PH)));
      const int64_t gw = o.sampling_ratio > 0 ? o.sampling_ratio : static_cast<int64_t>(std::ceil(rw / static_cast<double>(PW)));
      const int64_t count = std::max<int64_t>(gh * gw, 1);
      // Sample geometry is the same for every channel.
      samples.clear();
      for (int64_t ph = 0; ph < PH; ++ph)
        for (int64_t pw = 0; pw < PW; ++pw)
          for (int64_t iy = 0; iy < gh; ++iy) {
            const double y = sy + static_cast<double>(ph) * bin_h + (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(gh);
            for (int64_t ix = 0; ix < gw; ++ix) {
              const double xx = sx + static_cast<double>(pw) * bin_w + (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(gw);
              samples.push_back(make_sample(y, xx, H, W));
            }
          }
      const int64_t per_bin = std::max<int64_t>(gh, 0) * std::max<int64_t>(gw, 0);
      for (int64_t c = 0; c < C; ++c) {
        const T* img = xp + (b * C + c) * H * W;
        T* out = yp + (r * C + c) * PH * PW;
        for (int64_t bin = 0; bin < PH * PW; ++bin) {
          const Sample* s = samples.data() + bin * per_bin;
          double acc = o.max_mode ? -std::numeric_limits<double>::infinity() : 0.0;
          for (int64_t k = 0; k < per_bin; ++k) {
            if (o.max_mode) {
              double v = s[k].w[0] * static_cast<double>(static_cast<F>(img[s[k].pos[0]]));
              for (int q = 1; q < 4; ++q) v = std::max(v, s[k].w[q] * static_cast<double>(static_cast<F>(img[s[k].pos[q]])));
              acc = std::max(acc, v);
            } else {
              for (int q = 0; q < 4; ++q) acc += s[k].w[q] * static_cast<double>(static_cast<F>(img[s[k].pos[q]]));
            }
          }
          if (o.max_mode && per_bin == 0) acc = 0;
          out[bin] = static_cast<T>(static_cast<F>(o.max_mode ? acc : acc / static_cast<double>(count)));
        }
      }
    }
  });
}

}  // namespace

KILN_REGISTER_OPS(roi_align) {
  reg.add({.name = "RoiAlign", .since_version = 10, .min_inputs = 3, .max_inputs = 3, .pattern = PatternKind::Opaque,
           .infer = infer_roi_align, .kernel = roi_align_kernel});
}

}  // namespace kiln::ops
