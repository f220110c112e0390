// GridSample (opset 16; N-D from opset 20): samples X [N, C, D1, ..., Dk] at the normalized
// locations of a grid [N, O1, ..., Ok, k] (the last dim lists the coordinates innermost axis
// first: x, y[, z]), giving Y [N, C, O1, ..., Ok]. Opset 16 has only the 4-D form.
//
// Follows the ONNX reference / onnxruntime formulation (itself PyTorch's): a grid point is
// denormalized to pixel space, a point outside [x_min, x_max] is clamped (border) or reflected
// (reflection) first, then interpolated from its taps; each tap outside the image reads 0
// (zeros), the clamped pixel (border) or the reflected pixel (reflection). Padding acts on each
// axis alone, so every interpolation is a tensor product of per-axis taps (1 nearest, 2 linear,
// 4 cubic), summed in double.
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

// The rank X may have: 4 before opset 20, any rank from 3 (one spatial axis) after. Cubic
// sampling is defined by PyTorch and onnxruntime for 2 spatial axes only.
template <typename Ctx>
void check_rank(const Ctx& ctx, const Options& o, int64_t rank, const std::string& what) {
  if (ctx.opset() < 20 && rank != 4) ctx.fail("X must be 4-D [N, C, H, W] before opset 20, got " + what);
  if (rank < 3) ctx.fail("X must be [N, C, D1, ...] with at least one spatial axis, got " + what);
  if (o.mode == Mode::Bicubic && rank != 4)
    throw UnsupportedError(ctx.node().describe() + ": cubic sampling of " + std::to_string(rank - 2) +
                           "-D inputs is not supported (only 4-D [N, C, H, W] X), got " + what);
}

void infer_grid_sample(InferContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  const ir::TensorType& g = ctx.input(1);
  const Options o = options_of(ctx);
  if (x.dtype != DType::Undefined && !dtype_is_float(x.dtype)) ctx.fail("X must be floating-point, got " + x.str());
  if (g.dtype != DType::Undefined && !dtype_is_float(g.dtype)) ctx.fail("grid must be floating-point, got " + g.str());
  if (x.rank_known && g.rank_known && x.rank() != g.rank())
    ctx.fail("X and grid must have the same rank, got " + x.str() + " and " + g.str());
  if (!x.rank_known && !g.rank_known) return ctx.set_output(0, ir::TensorType::unranked(x.dtype));
  const int rank = x.rank_known ? x.rank() : g.rank();
  check_rank(ctx, o, rank, x.rank_known ? x.str() : "grid " + g.str());
  if (g.rank_known && g.dims.back().is_static() && g.dims.back().value != rank - 2)
    ctx.fail("grid's last dim must be " + std::to_string(rank - 2) + ", got " + g.str());
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
  std::vector<ir::Dim> dims = {pick(x.rank_known ? x.dims[0] : none, g.rank_known ? g.dims[0] : none),
                               pick(x.rank_known ? x.dims[1] : none, none)};
  for (int i = 1; i + 1 < rank; ++i) dims.push_back(pick(g.rank_known ? g.dims[i] : none, none));
  ctx.set_output(0, x.dtype, dims);
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

// One spatial axis: its extent and the valid coordinate range (which depends on align_corners).
struct Axis {
  int64_t len;
  double lo, hi;
};

// The element a tap index reads along one axis, or -1 for zero padding.
int64_t resolve(int64_t i, const Axis& a, Padding padding) {
  switch (padding) {
    case Padding::Zeros: return i >= 0 && i < a.len ? i : -1;
    case Padding::Border: return std::clamp<int64_t>(i, 0, a.len - 1);
    case Padding::Reflection:
      return std::clamp<int64_t>(static_cast<int64_t>(reflect(static_cast<double>(i), a.lo, a.hi)), 0, a.len - 1);
  }
  return -1;
}

// Taps per axis: nearest 1, linear 2, cubic 4.
constexpr int kMaxTaps = 4;
int taps_of(Mode m) { return m == Mode::Nearest ? 1 : m == Mode::Bilinear ? 2 : 4; }

// The taps of a (padding-adjusted) pixel coordinate p along one axis: element indices (-1:
// reads 0) and weights, taps_of(mode) of them.
void axis_taps(const Options& o, const Axis& a, double p, int64_t* idx, double* w) {
  if (o.mode == Mode::Nearest) {
    idx[0] = resolve(static_cast<int64_t>(p), a, o.padding);
    w[0] = 1;
    return;
  }
  const double f = std::floor(p);
  const int64_t base = static_cast<int64_t>(f);
  if (o.mode == Mode::Bilinear) {
    w[0] = 1 - (p - f);
    w[1] = p - f;
    for (int k = 0; k < 2; ++k) idx[k] = resolve(base + k, a, o.padding);
    return;
  }
  cubic_coeffs(p - f, w);
  for (int k = 0; k < 4; ++k) idx[k] = resolve(base - 1 + k, a, o.padding);
}

void grid_sample_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& grid = ctx.input(1);
  const Options o = options_of(ctx);
  check_rank(ctx, o, x.rank(), x.describe());
  const int S = x.rank() - 2;  // spatial axes
  if (grid.rank() != x.rank() || grid.dims().back() != S || grid.dim(0) != x.dim(0))
    ctx.fail("grid must be [N, O1, ..., O" + std::to_string(S) + ", " + std::to_string(S) + "] with X's N, got " +
             grid.describe() + " for X " + x.describe());
  if (!dtype_is_float(grid.dtype())) ctx.fail("grid must be floating-point, got " + grid.describe());
  const int64_t N = x.dim(0), C = x.dim(1);
  std::vector<Axis> axes;
  std::vector<int64_t> strides(S, 1), out_dims = {N, C};
  int64_t plane = 1, npts = 1;
  for (int d = 0; d < S; ++d) {
    const int64_t len = x.dim(2 + d);
    axes.push_back({len, o.align_corners ? 0.0 : -0.5,
                    o.align_corners ? static_cast<double>(len - 1) : static_cast<double>(len) - 0.5});
    plane *= len;
    npts *= grid.dim(1 + d);
    out_dims.push_back(grid.dim(1 + d));
  }
  for (int d = S - 2; d >= 0; --d) strides[d] = strides[d + 1] * axes[d + 1].len;
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using F = compute_t<T>;
    const T* xp = x.data<T>();
    T* yp = ctx.make_output(0, x.dtype(), out_dims).template data<T>();
    if (plane == 0 && o.padding != Padding::Zeros && N * C * npts > 0)
      ctx.fail("cannot pad an empty image by border/reflection");
    // Per point of one batch entry, shared by every channel: per axis the taps' indices and
    // weights, and whether a coordinate is NaN.
    std::vector<int64_t> tap_idx(static_cast<size_t>(npts * S * kMaxTaps));
    std::vector<double> tap_w(tap_idx.size());
    std::vector<bool> nan(static_cast<size_t>(npts));
    const int taps = taps_of(o.mode);
    std::vector<int> k(static_cast<size_t>(S));
    std::vector<double> src(static_cast<size_t>(plane));
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t i = 0; i < npts; ++i) {
        nan[i] = false;
        for (int d = 0; d < S; ++d) {
          // The grid lists the innermost axis first.
          double p = denormalize(grid.as_double((n * npts + i) * S + (S - 1 - d)), axes[d].len, o.align_corners);
          nan[i] = nan[i] || std::isnan(p);
          // The spec rounds halves to the even index (nearbyint), in every rank.
          if (o.mode == Mode::Nearest) p = std::nearbyint(p);
          if (p < axes[d].lo || p > axes[d].hi) {
            if (o.padding == Padding::Border) p = std::clamp(p, 0.0, static_cast<double>(axes[d].len - 1));
            else if (o.padding == Padding::Reflection) p = reflect(p, axes[d].lo, axes[d].hi);
          }
          if (nan[i]) continue;
          const size_t at = static_cast<size_t>((i * S + d) * kMaxTaps);
          axis_taps(o, axes[d], p, &tap_idx[at], &tap_w[at]);
        }
      }
      for (int64_t c = 0; c < C; ++c) {
        const T* s = xp + (n * C + c) * plane;
        for (int64_t i = 0; i < plane; ++i) src[i] = static_cast<double>(static_cast<F>(s[i]));
        T* dst = yp + (n * C + c) * npts;
        for (int64_t i = 0; i < npts; ++i) {
          if (nan[i]) {
            dst[i] = static_cast<T>(static_cast<F>(std::nan("")));
            continue;
          }
          const int64_t* idx = &tap_idx[static_cast<size_t>(i * S * kMaxTaps)];
          const double* w = &tap_w[static_cast<size_t>(i * S * kMaxTaps)];
          // The tensor product of the per-axis taps, one odometer over taps^S corners.
          std::fill(k.begin(), k.end(), 0);
          double v = 0;
          for (;;) {
            double weight = 1;
            int64_t offset = 0;
            for (int d = 0; d < S && offset >= 0; ++d) {
              const int64_t e = idx[d * kMaxTaps + k[d]];
              weight *= w[d * kMaxTaps + k[d]];
              offset = e < 0 ? -1 : offset + e * strides[d];
            }
            if (offset >= 0) v += weight * src[offset];
            int d = S - 1;
            while (d >= 0 && ++k[d] == taps) k[d--] = 0;
            if (d < 0) break;
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
