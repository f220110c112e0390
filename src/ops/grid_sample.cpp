// GridSample (opset 16): samples a 4-D X [N, C, H, W] at the normalized (x, y) locations of a
// grid [N, H_out, W_out, 2], giving Y [N, C, H_out, W_out].
//
// Follows the ONNX reference / onnxruntime formulation (itself PyTorch's): a grid point is
// denormalized to pixel space, a point outside [x_min, x_max] is clamped (border) or reflected
// (reflection) first, then interpolated from its taps; each tap outside the image reads 0
// (zeros), the clamped pixel (border) or the reflected pixel (reflection).
#include <algorithm>
#include <cmath>

#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

enum class Mode { Bilinear, Nearest, Bicubic };
enum class Padding { Zeros, Border, Reflection };

struct Options {
  Mode mode;
  Padding padding;
  bool align_corners;
};

template <typename Ctx>
Options options_of(const Ctx& ctx) {
  const ir::Node& n = ctx.node();
  Options o{};
  const std::string mode = n.attr_string("mode", "bilinear");
  if (mode == "bilinear" || mode == "linear") o.mode = Mode::Bilinear;
  else if (mode == "nearest") o.mode = Mode::Nearest;
  else if (mode == "bicubic" || mode == "cubic") o.mode = Mode::Bicubic;
  else ctx.fail("mode must be bilinear, nearest or bicubic, got '" + mode + "'");
  const std::string pad = n.attr_string("padding_mode", "zeros");
  if (pad == "zeros") o.padding = Padding::Zeros;
  else if (pad == "border") o.padding = Padding::Border;
  else if (pad == "reflection") o.padding = Padding::Reflection;
  else ctx.fail("padding_mode must be zeros, border or reflection, got '" + pad + "'");
  const int64_t ac = n.attr_int("align_corners", 0);
  if (ac != 0 && ac != 1) ctx.fail("align_corners must be 0 or 1, got " + std::to_string(ac));
  o.align_corners = ac != 0;
  return o;
}

void infer_grid_sample(InferContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  const ir::TensorType& g = ctx.input(1);
  options_of(ctx);
  if (x.dtype != DType::Undefined && !dtype_is_float(x.dtype)) ctx.fail("X must be floating-point, got " + x.str());
  if (g.dtype != DType::Undefined && !dtype_is_float(g.dtype)) ctx.fail("grid must be floating-point, got " + g.str());
  // Opset 20 allows N-D (volumetric) sampling, which kiln does not implement.
  if (x.rank_known && x.rank() != 4 && ctx.opset() >= 20 && x.rank() >= 3)
    throw UnsupportedError(ctx.node().describe() + ": " + std::to_string(x.rank() - 2) +
                           "-D sampling is not supported (kiln samples 4-D [N, C, H, W] inputs)");
  if (x.rank_known && x.rank() != 4) ctx.fail("X must be 4-D [N, C, H, W], got " + x.str());
  if (g.rank_known && g.rank() != 4) ctx.fail("grid must be 4-D [N, H_out, W_out, 2], got " + g.str());
  if (g.rank_known && g.dims[3].is_static() && g.dims[3].value != 2)
    ctx.fail("grid's last dim must be 2, got " + g.str());
  if (x.rank_known && g.rank_known && x.dims[0].is_static() && g.dims[0].is_static() && x.dims[0].value != g.dims[0].value)
    ctx.fail("X and grid must have the same batch, got " + x.str() + " and " + g.str());
  auto pick = [&](const ir::Dim& a, const ir::Dim& b) {
    if (a.is_static()) return a;
    if (b.is_static()) return b;
    if (a.is_symbolic()) return a;
    if (b.is_symbolic()) return b;
    return ctx.fresh_dim();
  };
  const ir::Dim none = ir::Dim::unknown();
  ir::Dim n = pick(x.rank_known ? x.dims[0] : none, g.rank_known ? g.dims[0] : none);
  ir::Dim c = pick(x.rank_known ? x.dims[1] : none, none);
  ir::Dim h = pick(g.rank_known ? g.dims[1] : none, none);
  ir::Dim w = pick(g.rank_known ? g.dims[2] : none, none);
  ctx.set_output(0, x.dtype, {n, c, h, w});
}

double denormalize(double v, int64_t length, bool align_corners) {
  return align_corners ? (v + 1) / 2.0 * static_cast<double>(length - 1)
                       : ((v + 1) * static_cast<double>(length) - 1) / 2.0;
}

// Reflects x by the nearer border until it lies in [lo, hi].
double reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    const double dx = lo - x;
    const int64_t n = static_cast<int64_t>(dx / range);
    const double r = dx - static_cast<double>(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi;
    const int64_t n = static_cast<int64_t>(dx / range);
    const double r = dx - static_cast<double>(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

// Cubic convolution weights (A = -0.75) of the four taps around a point at fraction t.
void cubic_coeffs(double t, double c[4]) {
  constexpr double A = -0.75;
  const double t1 = t + 1, t2 = 1 - t, t3 = 2 - t;
  c[0] = ((A * t1 - 5 * A) * t1 + 8 * A) * t1 - 4 * A;
  c[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
  c[2] = ((A + 2) * t2 - (A + 3)) * t2 * t2 + 1;
  c[3] = ((A * t3 - 5 * A) * t3 + 8 * A) * t3 - 4 * A;
}

struct Plane {
  const double* p;  // one [H, W] channel, already in double
  int64_t h, w;
  double x_lo, x_hi, y_lo, y_hi;  // the valid coordinate range (depends on align_corners)
  Padding padding;

  double at(int64_t y, int64_t x) const {
    switch (padding) {
      case Padding::Zeros:
        if (x < 0 || x >= w || y < 0 || y >= h) return 0;
        break;
      case Padding::Border:
        x = std::clamp<int64_t>(x, 0, w - 1);
        y = std::clamp<int64_t>(y, 0, h - 1);
        break;
      case Padding::Reflection:
        x = static_cast<int64_t>(reflect(static_cast<double>(x), x_lo, x_hi));
        y = static_cast<int64_t>(reflect(static_cast<double>(y), y_lo, y_hi));
        x = std::clamp<int64_t>(x, 0, w - 1);
        y = std::clamp<int64_t>(y, 0, h - 1);
        break;
    }
    return p[y * w + x];
  }
};

void grid_sample_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& grid = ctx.input(1);
  const Options o = options_of(ctx);
  if (x.rank() != 4) ctx.fail("X must be 4-D [N, C, H, W], got " + x.describe());
  if (grid.rank() != 4 || grid.dim(3) != 2 || grid.dim(0) != x.dim(0))
    ctx.fail("grid must be [N, H_out, W_out, 2] with X's N, got " + grid.describe() + " for X " + x.describe());
  if (!dtype_is_float(grid.dtype())) ctx.fail("grid must be floating-point, got " + grid.describe());
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), HO = grid.dim(1), WO = grid.dim(2);
  const int64_t npts = HO * WO;
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using F = compute_t<T>;
    const T* xp = x.data<T>();
    T* yp = ctx.make_output(0, x.dtype(), {N, C, HO, WO}).template data<T>();
    if (H == 0 || W == 0) {
      if (o.padding != Padding::Zeros && N * C * npts > 0) ctx.fail("cannot pad an empty image by border/reflection");
      return;
    }
    Plane pl{nullptr, H, W, 0, 0, 0, 0, o.padding};
    pl.x_lo = o.align_corners ? 0 : -0.5;
    pl.x_hi = o.align_corners ? static_cast<double>(W - 1) : static_cast<double>(W) - 0.5;
    pl.y_lo = o.align_corners ? 0 : -0.5;
    pl.y_hi = o.align_corners ? static_cast<double>(H - 1) : static_cast<double>(H) - 0.5;
    std::vector<double> plane(static_cast<size_t>(H * W));
    std::vector<double> gx(static_cast<size_t>(npts)), gy(static_cast<size_t>(npts));
    for (int64_t n = 0; n < N; ++n) {
      // Pixel-space sample positions for this batch entry, shared by every channel.
      for (int64_t i = 0; i < npts; ++i) {
        double px = denormalize(grid.as_double((n * npts + i) * 2), W, o.align_corners);
        double py = denormalize(grid.as_double((n * npts + i) * 2 + 1), H, o.align_corners);
        if (o.mode == Mode::Nearest) {
          // Round half to even, as the reference's nearbyint.
          px = std::nearbyint(px);
          py = std::nearbyint(py);
        }
        if (px < pl.x_lo || px > pl.x_hi || py < pl.y_lo || py > pl.y_hi) {
          if (o.padding == Padding::Border) {
            px = std::clamp(px, 0.0, static_cast<double>(W - 1));
            py = std::clamp(py, 0.0, static_cast<double>(H - 1));
          } else if (o.padding == Padding::Reflection) {
            px = reflect(px, pl.x_lo, pl.x_hi);
            py = reflect(py, pl.y_lo, pl.y_hi);
          }
        }
        gx[i] = px;
        gy[i] = py;
      }
      for (int64_t c = 0; c < C; ++c) {
        const T* src = xp + (n * C + c) * H * W;
        for (int64_t i = 0; i < H * W; ++i) plane[i] = static_cast<double>(static_cast<F>(src[i]));
        pl.p = plane.data();
        T* dst = yp + (n * C + c) * npts;
        for (int64_t i = 0; i < npts; ++i) {
          const double px = gx[i], py = gy[i];
          if (std::isnan(px) || std::isnan(py)) {
            dst[i] = static_cast<T>(static_cast<F>(std::nan("")));
            continue;
          }
          double v = 0;
          if (o.mode == Mode::Nearest) {
            v = pl.at(static_cast<int64_t>(py), static_cast<int64_t>(px));
          } else if (o.mode == Mode::Bilinear) {
            const double fx = std::floor(px), fy = std::floor(py);
            const int64_t x1 = static_cast<int64_t>(fx), y1 = static_cast<int64_t>(fy);
            const double dx = px - fx, dy = py - fy;
            v = (1 - dy) * ((1 - dx) * pl.at(y1, x1) + dx * pl.at(y1, x1 + 1)) +
                dy * ((1 - dx) * pl.at(y1 + 1, x1) + dx * pl.at(y1 + 1, x1 + 1));
          } else {
            const double fx = std::floor(px), fy = std::floor(py);
            const int64_t x0 = static_cast<int64_t>(fx) - 1, y0 = static_cast<int64_t>(fy) - 1;
            double cx[4], cy[4];
            cubic_coeffs(px - fx, cx);
            cubic_coeffs(py - fy, cy);
            for (int a = 0; a < 4; ++a) {
              double row = 0;
              for (int b = 0; b < 4; ++b) row += cx[b] * pl.at(y0 + a, x0 + b);
              v += cy[a] * row;
            }
          }
          dst[i] = static_cast<T>(static_cast<F>(v));
        }
      }
    }
  });
}

// ---------------------------------------------------------------- AffineGrid (opset 20)

// The sampling grid GridSample reads for an affine transform: theta [N, 2, 3] (or [N, 3, 4])
// applied to the normalized coordinates of an output of size [N, C, H, W] (or [N, C, D, H, W]),
// giving [N, H, W, 2] (x, y) (or [N, D, H, W, 3] (x, y, z)).
template <typename Ctx>
std::vector<int64_t> affine_size(const Ctx& ctx, const Tensor& size) {
  if (size.rank() != 1 || (size.numel() != 4 && size.numel() != 5) || (size.dtype() != DType::Int64 && size.dtype() != DType::Int32))
    ctx.fail("size must be 1-D int64 [N, C, H, W] or [N, C, D, H, W], got " + size.describe());
  std::vector<int64_t> s = size.to_int64_vector();
  for (int64_t d : s)
    if (d < 0) ctx.fail("size must be non-negative");
  return s;
}

void infer_affine_grid(InferContext& ctx) {
  const ir::TensorType& theta = ctx.input(0);
  if (!dtype_is_float(theta.dtype)) ctx.fail("theta must be floating-point, got " + theta.str());
  const Tensor* size = ctx.value(1);
  if (!size) {
    if (ctx.input(1).rank_known && ctx.input(1).dims[0].is_static()) {
      const int64_t n = ctx.input(1).dims[0].value;
      std::vector<ir::Dim> dims;
      for (int64_t i = 0; i + 1 < n; ++i) dims.push_back(ctx.fresh_dim());
      dims.push_back(ir::Dim(n - 2));
      return ctx.set_output(0, theta.dtype, dims);
    }
    return ctx.set_output(0, ir::TensorType::unranked(theta.dtype));
  }
  const std::vector<int64_t> s = affine_size(ctx, *size);
  std::vector<ir::Dim> dims = {ir::Dim(s[0])};
  for (size_t i = 2; i < s.size(); ++i) dims.push_back(ir::Dim(s[i]));
  dims.push_back(ir::Dim(static_cast<int64_t>(s.size()) - 2));
  ctx.set_output(0, theta.dtype, dims);
}

void affine_grid_kernel(KernelContext& ctx) {
  const Tensor& theta = ctx.input(0);
  const std::vector<int64_t> s = affine_size(ctx, ctx.input(1));
  const int64_t nd = static_cast<int64_t>(s.size()) - 2;  // 2 or 3 spatial dims
  if (theta.dims() != std::vector<int64_t>{s[0], nd, nd + 1})
    ctx.fail("theta must be [" + std::to_string(s[0]) + ", " + std::to_string(nd) + ", " + std::to_string(nd + 1) +
             "] for size " + ints_str(s) + ", got " + theta.describe());
  const bool align = ctx.node().attr_int("align_corners", 0) != 0;
  // Normalized coordinate of index i along an axis of n: the pixel centres in [-1, 1], or the
  // corners with align_corners.
  auto coord = [align](int64_t i, int64_t n) -> double {
    if (align) return n > 1 ? -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(n - 1) : 0.0;
    return (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(n) - 1.0;
  };
  std::vector<int64_t> out = {s[0]};
  for (int64_t i = 2; i < static_cast<int64_t>(s.size()); ++i) out.push_back(s[i]);
  out.push_back(nd);
  dispatch_float(theta.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* th = theta.data<T>();
    T* g = ctx.make_output(0, theta.dtype(), out).template data<T>();
    const int64_t D = nd == 3 ? s[2] : 1, H = s[nd == 3 ? 3 : 2], W = s[nd == 3 ? 4 : 3];
    for (int64_t n = 0; n < s[0]; ++n) {
      const T* t = th + n * nd * (nd + 1);
      for (int64_t d = 0; d < D; ++d)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t w = 0; w < W; ++w) {
            // Base coordinates (x, y[, z]) and a trailing 1.
            const double base[4] = {coord(w, W), coord(h, H), nd == 3 ? coord(d, D) : 1.0, 1.0};
            for (int64_t r = 0; r < nd; ++r) {
              double v = 0;
              for (int64_t c = 0; c < nd; ++c) v += static_cast<double>(static_cast<compute_t<T>>(t[r * (nd + 1) + c])) * base[c];
              v += static_cast<double>(static_cast<compute_t<T>>(t[r * (nd + 1) + nd]));
              *g++ = static_cast<T>(static_cast<compute_t<T>>(v));
            }
          }
    }
  });
}

}  // namespace

KILN_REGISTER_OPS(grid_sample) {
  reg.add({.name = "AffineGrid", .since_version = 20, .min_inputs = 2, .max_inputs = 2, .pattern = PatternKind::Opaque,
           .infer = infer_affine_grid, .kernel = affine_grid_kernel});
  reg.add({.name = "GridSample", .since_version = 16, .max_version = 20, .min_inputs = 2, .max_inputs = 2,
           .pattern = PatternKind::Opaque, .infer = infer_grid_sample, .kernel = grid_sample_kernel});
}

}  // namespace kiln::ops
