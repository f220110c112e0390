// DeformConv (opset 19, 22): a convolution whose kernel taps sample X at their regular place
// plus a learned fractional offset, optionally scaled by a mask (Deformable ConvNets v1 and
// v2), over any number of spatial axes.
//
//   X      [N, C, in...]
//   W      [oC, C / group, k...]
//   offset [N, offset_group * prod(k) * nsp, out...]: per offset group and tap, a displacement
//          along each spatial axis (the axis varies fastest)
//   B      [oC], optional
//   mask   [N, offset_group * prod(k), out...], optional (ones)
//   Y      [N, oC, out...], out = (in + pads - dilated kernel extent) / stride + 1 (floor)
//
// The tap k of output position o samples p = o * stride - pad_begin + k * dilation + offset on
// each axis, multilinearly from the 2^nsp grid points around p, where points outside X count
// as zero (ONNX's reference: GridSample, bilinear, zeros padding, align_corners). The C /
// offset_group channels of an offset group share its offsets and mask.
//
// Per batch item the kernel fills the sampled patch matrix col[C * prod(k), prod(out)] (a
// sample's grid points and weights are found once per offset group, then read for each of its
// channels), and each group's outputs are its weights [oC / group, C / group * prod(k)] times
// its own rows of col: the work of one im2col convolution, never an input channel paired with
// an output channel of another group.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "ops/core/conv_geometry.h"
#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

using Dims = std::vector<int64_t>;  // -1: an extent unknown at compile time

struct Layout {
  int64_t group = 1, offset_group = 1;
  WindowGeom g;
};

constexpr size_t kMaxSpatial = 16;

bool known(int64_t d) { return d >= 0; }

// One dim of `what` that must equal `want` where both are known.
template <typename Ctx>
void check_dim(const Ctx& ctx, const std::string& what, const Dims& dims, size_t axis, int64_t want,
               const std::string& because) {
  if (known(dims[axis]) && known(want) && dims[axis] != want)
    ctx.fail(what + " has " + std::to_string(dims[axis]) + " at axis " + std::to_string(axis) + " where " + because +
             " gives " + std::to_string(want) + ", got " + what + " dims " + ints_str(dims));
}

// Checks that X, W, offset, B and mask (b, mask: nullptr when absent) and the attributes fit
// together, on dims that may hold unknowns, and works out the geometry. g.out takes the
// offset's or the mask's spatial dims where X's leave it unknown.
template <typename Ctx>
Layout check_shapes(const Ctx& ctx, const Dims& x, const Dims& w, const Dims& off, const Dims* b, const Dims* mask) {
  const ir::Node& n = ctx.node();
  if (x.size() < 3) ctx.fail("X must have rank >= 3 (N, C, spatial...), got dims " + ints_str(x));
  const size_t rank = x.size(), nsp = rank - 2;
  // A sample reads 2^nsp grid points.
  if (nsp > kMaxSpatial) ctx.fail("X has " + std::to_string(nsp) + " spatial axes; kiln samples at most 16");
  for (const auto& [what, dims] : {std::pair{"W", &w}, std::pair{"offset", &off}, std::pair{"mask", mask}})
    if (dims && dims->size() != rank)
      ctx.fail(std::string(what) + " has rank " + std::to_string(dims->size()) + " but X has rank " + std::to_string(rank));
  if (b && b->size() != 1) ctx.fail("bias B must be 1-D [oC], got dims " + ints_str(*b));
  Layout L;
  L.group = n.attr_int("group", 1);
  L.offset_group = n.attr_int("offset_group", 1);
  if (L.group < 1 || L.offset_group < 1)
    ctx.fail("group and offset_group must be >= 1, got " + std::to_string(L.group) + " and " +
             std::to_string(L.offset_group));
  const int64_t c = x[1], oc = w[0];
  if (known(c) && known(w[1]) && c != w[1] * L.group)
    ctx.fail("X has " + std::to_string(c) + " channels but W expects " + std::to_string(w[1]) + " per group x " +
             std::to_string(L.group) + " groups");
  if (known(oc) && oc % L.group != 0)
    ctx.fail("W's " + std::to_string(oc) + " output channels are not divisible by group " + std::to_string(L.group));
  if (known(c) && c % L.offset_group != 0)
    ctx.fail("X's " + std::to_string(c) + " channels are not divisible by offset_group " + std::to_string(L.offset_group));
  if (b) check_dim(ctx, "bias B", *b, 0, oc, "W's output channel count");

  WindowGeom& g = L.g;
  g.nsp = static_cast<int>(nsp);
  g.in.assign(x.begin() + 2, x.end());
  const Dims wk(w.begin() + 2, w.end());
  g.kernel = n.attr_ints("kernel_shape", wk);
  if (g.kernel.size() != nsp)
    ctx.fail("kernel_shape " + ints_str(g.kernel) + " must have one entry per spatial axis (" + std::to_string(nsp) + ")");
  for (size_t i = 0; i < nsp; ++i) {
    if (known(wk[i]) && g.kernel[i] != wk[i])
      ctx.fail("kernel_shape " + ints_str(g.kernel) + " does not match W's spatial dims " + ints_str(wk));
    if (g.kernel[i] == 0 || g.kernel[i] < -1) ctx.fail("kernel_shape " + ints_str(g.kernel) + " must be positive");
  }
  g.strides = n.attr_ints("strides", Dims(nsp, 1));
  g.dilations = n.attr_ints("dilations", Dims(nsp, 1));
  if (g.strides.size() != nsp || g.dilations.size() != nsp)
    ctx.fail("strides " + ints_str(g.strides) + " and dilations " + ints_str(g.dilations) + " need " + std::to_string(nsp) +
             " entries");
  for (size_t i = 0; i < nsp; ++i)
    if (g.strides[i] < 1 || g.dilations[i] < 1)
      ctx.fail("strides " + ints_str(g.strides) + " and dilations " + ints_str(g.dilations) + " must be >= 1");
  g.read_pads(ctx);
  g.out.assign(nsp, -1);
  for (size_t i = 0; i < nsp; ++i) {
    if (!known(g.in[i]) || !known(g.kernel[i])) continue;
    const WindowAxis a = g.axis(static_cast<int>(i), AutoPad::NotSet);
    if (!a.fits)
      ctx.fail("kernel extent " + std::to_string(a.extent) + " (kernel " + std::to_string(g.kernel[i]) + ", dilation " +
               std::to_string(g.dilations[i]) + ") exceeds the padded input extent " + std::to_string(a.padded) +
               " along spatial axis " + std::to_string(i));
    g.out[i] = a.out;
  }

  bool all_known = true;
  for (int64_t k : g.kernel) all_known = all_known && known(k);
  const int64_t taps = all_known ? product(g.kernel) : -1;
  check_dim(ctx, "offset", off, 0, x[0], "X's batch");
  check_dim(ctx, "offset", off, 1, known(taps) ? L.offset_group * taps * static_cast<int64_t>(nsp) : -1,
            "offset_group * prod(kernel_shape) * spatial rank");
  for (const Dims* sampled : {&off, mask}) {
    if (!sampled) continue;
    const std::string what = sampled == &off ? "offset" : "mask";
    for (size_t i = 0; i < nsp; ++i) {
      check_dim(ctx, what, *sampled, i + 2, g.out[i], "the convolution's output extent");
      if (!known(g.out[i])) g.out[i] = (*sampled)[i + 2];
    }
  }
  if (mask) {
    check_dim(ctx, "mask", *mask, 0, x[0], "X's batch");
    check_dim(ctx, "mask", *mask, 1, known(taps) ? L.offset_group * taps : -1, "offset_group * prod(kernel_shape)");
  }
  return L;
}

// t's dims with -1 for every extent not static; `rank` unknowns when its rank is unknown.
Dims known_dims(const ir::TensorType& t, size_t rank) {
  if (!t.rank_known) return Dims(rank, -1);
  Dims d;
  for (const ir::Dim& x : t.dims) d.push_back(x.is_static() ? x.value : -1);
  return d;
}

// A dim as an output dim: kept when static or symbolic, else a fresh symbol.
ir::Dim named(InferContext& ctx, const ir::Dim& d) { return d.is_static() || d.is_symbolic() ? d : ctx.fresh_dim(); }

void infer_deform_conv(InferContext& ctx) {
  const char* names[] = {"X", "W", "offset", "B", "mask"};
  const ir::TensorType& x = ctx.input(0);
  for (int i = 0; i < 5; ++i) {
    if (!ctx.has_input(i) || ctx.input(i).dtype == DType::Undefined) continue;
    const ir::TensorType& t = ctx.input(i);
    if (!dtype_is_float(t.dtype)) ctx.fail(std::string(names[i]) + " must be floating-point, got " + t.str());
    if (x.dtype != DType::Undefined && t.dtype != x.dtype)
      ctx.fail(std::string(names[i]) + " is " + t.str() + " but X is " + x.str() + "; they must share a dtype");
  }
  // X, W, offset and mask share one rank; when none of them has a known rank, Y has none.
  size_t rank = 0;
  for (int i : {0, 1, 2, 4})
    if (ctx.has_input(i) && ctx.input(i).rank_known) rank = ctx.input(i).dims.size();
  if (rank == 0) return ctx.set_output(0, ir::TensorType::unranked(x.dtype));
  const ir::TensorType& w = ctx.input(1);
  const ir::TensorType& off = ctx.input(2);
  const Dims b = ctx.has_input(3) ? known_dims(ctx.input(3), 1) : Dims{};
  const Dims mask = ctx.has_input(4) ? known_dims(ctx.input(4), rank) : Dims{};
  const Layout L = check_shapes(ctx, known_dims(x, rank), known_dims(w, rank), known_dims(off, rank),
                                ctx.has_input(3) ? &b : nullptr, ctx.has_input(4) ? &mask : nullptr);
  std::vector<ir::Dim> out;
  out.push_back(named(ctx, x.rank_known ? x.dims[0] : off.rank_known ? off.dims[0] : ir::Dim()));
  out.push_back(named(ctx, w.rank_known ? w.dims[0] : ir::Dim()));
  for (int64_t o : L.g.out) out.push_back(known(o) ? ir::Dim(o) : ctx.fresh_dim());
  ctx.set_output(0, x.dtype, out);
}

// t's elements in the compute type C: its own buffer when that already is C.
template <typename T, typename C>
const C* compute_view(const Tensor& t, std::vector<C>& storage) {
  if constexpr (std::is_same_v<T, C>) {
    return t.data<T>();
  } else {
    const T* p = t.data<T>();
    storage.resize(static_cast<size_t>(t.numel()));
    for (int64_t i = 0; i < t.numel(); ++i) storage[i] = static_cast<C>(p[i]);
    return storage.data();
  }
}

// One grid point of a multilinear sample: its offset within a channel of X and its weight.
template <typename C>
struct GridPoint {
  int64_t at;
  C weight;
};

template <typename C>
void deform_conv_compute(const Layout& L, int64_t N, int64_t Cin, int64_t M, const C* x, const C* w, const C* off,
                         const C* b, const C* mask, C* y) {
  const WindowGeom& g = L.g;
  const int nsp = g.nsp;
  const int64_t IS = product(g.in), OS = product(g.out), KS = product(g.kernel);
  const int64_t Cg = Cin / L.group, Mg = M / L.group, Co = Cin / L.offset_group;
  // A tensor, not a vector: its size comes from the model, and a Tensor over the memory cap is
  // a kiln::Error.
  Tensor col_buffer(dtype_of<C>::value, {mul_dims(Cin, KS), OS});
  C* col = col_buffer.data<C>();
  std::vector<GridPoint<C>> points;
  Dims k(nsp), o(nsp), lo(nsp);
  std::vector<double> frac(nsp);
  for (int64_t n = 0; n < N; ++n) {
    const C* xn = x + n * Cin * IS;
    for (int64_t og = 0; og < L.offset_group; ++og) {
      std::fill(k.begin(), k.end(), 0);
      for (int64_t kidx = 0; kidx < KS; ++kidx, next_index(k, g.kernel)) {
        const C* tap_off = off + ((n * L.offset_group + og) * KS + kidx) * nsp * OS;
        const C* tap_mask = mask ? mask + ((n * L.offset_group + og) * KS + kidx) * OS : nullptr;
        std::fill(o.begin(), o.end(), 0);
        for (int64_t oi = 0; oi < OS; ++oi, next_index(o, g.out)) {
          // The sample position on each axis; a NaN one makes the sample NaN, one at or past a
          // full pixel outside makes it zero.
          bool nan = false, outside = false;
          for (int d = 0; d < nsp; ++d) {
            const double p = static_cast<double>(o[d] * g.strides[d] - g.pad_begin[d] + k[d] * g.dilations[d]) +
                             static_cast<double>(tap_off[d * OS + oi]);
            if (std::isnan(p)) {
              nan = true;
            } else if (p <= -1 || p >= static_cast<double>(g.in[d])) {
              outside = true;
            } else {
              lo[d] = static_cast<int64_t>(std::floor(p));
              frac[d] = p - static_cast<double>(lo[d]);
            }
          }
          points.clear();
          if (!nan && !outside)
            for (int corner = 0; corner < (1 << nsp); ++corner) {
              int64_t at = 0;
              double weight = 1;
              bool inside = true;
              for (int d = 0; d < nsp && inside; ++d) {
                const int up = (corner >> (nsp - 1 - d)) & 1;
                const int64_t q = lo[d] + up;
                inside = q >= 0 && q < g.in[d];
                at = at * g.in[d] + q;
                weight *= up ? frac[d] : 1 - frac[d];
              }
              if (inside) points.push_back({at, static_cast<C>(weight)});
            }
          const C scale = tap_mask ? tap_mask[oi] : C(1);
          for (int64_t c = og * Co; c < (og + 1) * Co; ++c) {
            C v = nan ? std::numeric_limits<C>::quiet_NaN() : C(0);
            for (const GridPoint<C>& pt : points) v += pt.weight * xn[c * IS + pt.at];
            col[(c * KS + kidx) * OS + oi] = v * scale;
          }
        }
      }
    }
    // Each group: y[Mg, OS] = w[Mg, Cg * KS] x its rows of col, plus the bias.
    for (int64_t grp = 0; grp < L.group; ++grp) {
      const C* cg = col + grp * Cg * KS * OS;
      for (int64_t m = grp * Mg; m < (grp + 1) * Mg; ++m) {
        C* ym = y + (n * M + m) * OS;
        std::fill(ym, ym + OS, b ? b[m] : C(0));
        const C* wm = w + m * Cg * KS;
        for (int64_t r = 0; r < Cg * KS; ++r) {
          const C wv = wm[r];
          const C* crow = cg + r * OS;
          for (int64_t i = 0; i < OS; ++i) ym[i] += wv * crow[i];
        }
      }
    }
  }
}

void deform_conv_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor& off = ctx.input(2);
  const Tensor* b = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  const Tensor* mask = ctx.has_input(4) ? &ctx.input(4) : nullptr;
  if (!dtype_is_float(x.dtype())) ctx.fail("X must be floating-point, got " + x.describe());
  for (const Tensor* t : {&w, &off, b, mask})
    if (t && t->dtype() != x.dtype())
      ctx.fail("X, W, offset, B and mask must share a dtype, got X " + x.describe() + " and " + t->describe());
  const Layout L =
      check_shapes(ctx, x.dims(), w.dims(), off.dims(), b ? &b->dims() : nullptr, mask ? &mask->dims() : nullptr);
  const int64_t N = x.dim(0), Cin = x.dim(1), M = w.dim(0);
  Dims ydims = {N, M};
  ydims.insert(ydims.end(), L.g.out.begin(), L.g.out.end());
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    std::vector<C> xs, ws, os, bs, ms;
    const C* xp = compute_view<T, C>(x, xs);
    const C* wp = compute_view<T, C>(w, ws);
    const C* op = compute_view<T, C>(off, os);
    const C* bp = b ? compute_view<T, C>(*b, bs) : nullptr;
    const C* mp = mask ? compute_view<T, C>(*mask, ms) : nullptr;
    Tensor& y = ctx.make_output(0, x.dtype(), ydims);
    if constexpr (std::is_same_v<T, C>) {
      deform_conv_compute<C>(L, N, Cin, M, xp, wp, op, bp, mp, y.data<T>());
    } else {
      std::vector<C> yv(static_cast<size_t>(y.numel()));
      deform_conv_compute<C>(L, N, Cin, M, xp, wp, op, bp, mp, yv.data());
      T* yt = y.data<T>();
      for (int64_t i = 0; i < y.numel(); ++i) yt[i] = static_cast<T>(yv[i]);
    }
  });
}

}  // namespace

KILN_REGISTER_OPS(deform_conv) {
  reg.add({.name = "DeformConv", .since_version = 19, .max_version = 22, .min_inputs = 3, .max_inputs = 5,
           .pattern = PatternKind::Opaque, .infer = infer_deform_conv, .kernel = deform_conv_kernel});
}

}  // namespace kiln::ops
