// Pooling: MaxPool (with optional Indices), AveragePool, LpPool, their Global* forms, MaxUnpool
// and MaxRoiPool, over any number of spatial dims.
//
// The windowed pools share one loop: for every output position, each spatial axis' valid taps
// form a range [lo, hi) (taps falling in the padding are skipped), and the window is walked as
// an odometer over those ranges.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <type_traits>

#include "ops/core/conv_geometry.h"
#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

using Geom = WindowGeom;

// Reads the window attributes and computes output extents (ONNX's pool shape rule: floor or,
// with ceil_mode, ceil, where a last window starting past the input and left pad is dropped).
template <typename Ctx>
Geom pool_geom(const Ctx& ctx, std::vector<int64_t> in_sp, bool allow_ceil, bool allow_dilations) {
  const ir::Node& n = ctx.node();
  Geom g;
  g.in = std::move(in_sp);
  const size_t nsp = g.in.size();
  g.nsp = static_cast<int>(nsp);
  if (!n.has_attr("kernel_shape")) ctx.fail("kernel_shape attribute is required");
  g.kernel = n.attr_ints("kernel_shape");
  if (g.kernel.size() != nsp)
    ctx.fail("kernel_shape " + ints_str(g.kernel) + " must have one entry per spatial axis (" + std::to_string(nsp) + ")");
  g.strides = n.attr_ints("strides", std::vector<int64_t>(nsp, 1));
  g.dilations = allow_dilations ? n.attr_ints("dilations", std::vector<int64_t>(nsp, 1)) : std::vector<int64_t>(nsp, 1);
  if (g.strides.size() != nsp || g.dilations.size() != nsp)
    ctx.fail("strides " + ints_str(g.strides) + " and dilations " + ints_str(g.dilations) + " need " +
             std::to_string(nsp) + " entries");
  for (size_t i = 0; i < nsp; ++i)
    if (g.kernel[i] < 1 || g.strides[i] < 1 || g.dilations[i] < 1)
      ctx.fail("kernel_shape " + ints_str(g.kernel) + ", strides " + ints_str(g.strides) + " and dilations " +
               ints_str(g.dilations) + " must be >= 1");
  g.read_pads(ctx);
  const AutoPad ap = auto_pad_or_fail(ctx);
  const bool ceil_mode = allow_ceil && n.attr_int("ceil_mode", 0) != 0;
  g.out.assign(nsp, -1);
  for (int i = 0; i < g.nsp; ++i) {
    if (g.in[i] < 0) continue;
    const WindowAxis a = g.axis(i, ap, ceil_mode);
    if (!a.fits)
      ctx.fail("window extent " + std::to_string(a.extent) + " exceeds the padded input extent " +
               std::to_string(a.padded) + " along spatial axis " + std::to_string(i));
    g.set(i, a);
  }
  return g;
}

std::vector<int64_t> known_dims(const ir::TensorType& t) {
  std::vector<int64_t> d;
  for (const ir::Dim& x : t.dims) d.push_back(x.is_static() ? x.value : -1);
  return d;
}

// Output type [N, C, out...] of a windowed pool; also Indices (int64) for MaxPool.
void infer_pool(InferContext& ctx, bool allow_ceil, bool allow_dilations) {
  const ir::TensorType& x = ctx.input(0);
  if (!x.rank_known) {
    ctx.set_output(0, ir::TensorType::unranked(x.dtype));
    ctx.set_output(1, ir::TensorType::unranked(DType::Int64));
    return;
  }
  if (x.rank() < 3) ctx.fail("input X must have rank >= 3 (N, C, spatial...), got " + x.str());
  const std::vector<int64_t> xd = known_dims(x);
  Geom g = pool_geom(ctx, std::vector<int64_t>(xd.begin() + 2, xd.end()), allow_ceil, allow_dilations);
  std::vector<ir::Dim> out = {x.dims[0], x.dims[1]};
  for (int i = 0; i < g.nsp; ++i) out.push_back(g.out[i] >= 0 ? ir::Dim(g.out[i]) : ctx.fresh_dim());
  ctx.set_output(0, x.dtype, out);
  ctx.set_output(1, DType::Int64, out);
}

enum class Kind { Max, Avg, Lp };

struct PoolParams {
  Kind kind = Kind::Max;
  bool count_include_pad = false;
  double p = 2;
  bool column_major_indices = false;  // MaxPool storage_order = 1
};

// Pools `planes` (N*C) planes of x into y (and indices, for Max, when non-null).
template <typename T>
void pool_planes(const Geom& g, int64_t planes, const T* x, T* y, int64_t* indices, const PoolParams& pp) {
  using C = compute_t<T>;
  const int nsp = g.nsp;
  const int64_t IS = product(g.in), OS = product(g.out);
  const std::vector<int64_t> in_str = strides_of(g.in);
  std::vector<int64_t> cm_str(nsp, 1);  // column-major strides for storage_order = 1
  for (int d = 1; d < nsp; ++d) cm_str[d] = cm_str[d - 1] * g.in[d - 1];
  std::vector<int64_t> o(nsp), start(nsp), lo(nsp), hi(nsp), k(nsp);
  for (int64_t pl = 0; pl < planes; ++pl) {
    const T* xp = x + pl * IS;
    std::fill(o.begin(), o.end(), 0);
    for (int64_t oi = 0; oi < OS; ++oi, next_index(o, g.out)) {
      bool empty = false;
      int64_t padded_count = 1;
      for (int d = 0; d < nsp; ++d) {
        const int64_t dil = g.dilations[d];
        start[d] = o[d] * g.strides[d] - g.pad_begin[d];
        lo[d] = start[d] < 0 ? ceil_div(-start[d], dil) : 0;
        hi[d] = std::min(g.kernel[d], std::max<int64_t>(0, ceil_div(g.in[d] - start[d], dil)));
        empty = empty || lo[d] >= hi[d];
        // Taps inside input-plus-padding; a ceil_mode window may hang past the end pad.
        padded_count *= std::min(g.kernel[d], ceil_div(g.in[d] + g.pad_end[d] - start[d], dil));
      }
      const int64_t yo = pl * OS + oi;
      if (empty) {
        y[yo] = pp.kind == Kind::Max ? static_cast<T>(std::numeric_limits<C>::lowest()) : T{};
        if (indices) indices[yo] = -1;
        continue;
      }
      C best = C{}, acc = C{};
      int64_t best_off = -1, count = 0;
      std::copy(lo.begin(), lo.end(), k.begin());
      while (true) {
        int64_t off = 0;
        for (int d = 0; d < nsp; ++d) off += (start[d] + k[d] * g.dilations[d]) * in_str[d];
        const C v = static_cast<C>(xp[off]);
        if (pp.kind == Kind::Max) {
          if (best_off < 0 || v > best) {
            best = v;
            best_off = off;
          }
        } else if (pp.kind == Kind::Avg) {
          acc += v;
        } else {
          if constexpr (is_float_v<T>) acc += static_cast<C>(std::pow(std::abs(v), static_cast<C>(pp.p)));
        }
        ++count;
        int d = nsp - 1;
        for (; d >= 0; --d) {
          if (++k[d] < hi[d]) break;
          k[d] = lo[d];
        }
        if (d < 0) break;
      }
      if (pp.kind == Kind::Max) {
        y[yo] = static_cast<T>(best);
        if (indices) {
          int64_t idx = best_off;
          if (pp.column_major_indices) {
            idx = 0;
            for (int d = 0; d < nsp; ++d) idx += ((best_off / in_str[d]) % g.in[d]) * cm_str[d];
          }
          indices[yo] = pl * IS + idx;
        }
      } else if (pp.kind == Kind::Avg) {
        y[yo] = static_cast<T>(acc / static_cast<C>(pp.count_include_pad ? padded_count : count));
      } else {
        if constexpr (is_float_v<T>) y[yo] = static_cast<T>(std::pow(acc, static_cast<C>(1.0 / pp.p)));
      }
    }
  }
}

double lp_order(const ir::Node& n, const std::function<void(const std::string&)>& fail) {
  // p was a float attribute before opset 2 and an int since; accept either.
  const ir::Attribute* a = n.attr("p");
  double p = 2;
  if (a) p = a->kind == ir::Attribute::Kind::Float ? a->f : static_cast<double>(a->i);
  if (!(p > 0)) fail("LpPool's p must be positive, got " + std::to_string(p));
  return p;
}

void pool_kernel(KernelContext& ctx, Kind kind) {
  const Tensor& x = ctx.input(0);
  const ir::Node& n = ctx.node();
  if (x.rank() < 3) ctx.fail("input X must have rank >= 3 (N, C, spatial...), got " + x.describe());
  const bool lp_old = kind == Kind::Lp && ctx.opset() < 18;
  const bool dilations = kind == Kind::Max || (kind == Kind::Lp && !lp_old) || (kind == Kind::Avg && ctx.opset() >= 19);
  Geom g = pool_geom(ctx, std::vector<int64_t>(x.dims().begin() + 2, x.dims().end()), !lp_old, dilations);
  PoolParams pp;
  pp.kind = kind;
  pp.count_include_pad = n.attr_int("count_include_pad", 0) != 0;
  if (kind == Kind::Lp) pp.p = lp_order(n, [&](const std::string& m) { ctx.fail(m); });
  const int64_t so = n.attr_int("storage_order", 0);
  if (so != 0 && so != 1) ctx.fail("storage_order must be 0 or 1, got " + std::to_string(so));
  pp.column_major_indices = so == 1;
  std::vector<int64_t> ydims = {x.dim(0), x.dim(1)};
  ydims.insert(ydims.end(), g.out.begin(), g.out.end());
  const int64_t planes = x.dim(0) * x.dim(1);
  auto run = [&](auto tag) {
    using T = decltype(tag);
    Tensor& y = ctx.make_output(0, x.dtype(), ydims);
    int64_t* ind = nullptr;
    if (ctx.has_output(1)) ind = ctx.make_output(1, DType::Int64, ydims).data<int64_t>();
    pool_planes<T>(g, planes, x.data<T>(), y.data<T>(), ind, pp);
  };
  if (kind == Kind::Max)
    dispatch_numeric(x.dtype(), run);
  else
    dispatch_float(x.dtype(), run);
}

// ---------------------------------------------------------------- global pools

void infer_global(InferContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (!x.rank_known) return ctx.set_output(0, ir::TensorType::unranked(x.dtype));
  if (x.rank() < 2) ctx.fail("input X must have rank >= 2 (N, C, spatial...), got " + x.str());
  std::vector<ir::Dim> out = x.dims;
  for (size_t i = 2; i < out.size(); ++i) out[i] = ir::Dim(1);
  ctx.set_output(0, x.dtype, out);
}

void global_kernel(KernelContext& ctx, Kind kind) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("input X must have rank >= 2 (N, C, spatial...), got " + x.describe());
  std::vector<int64_t> ydims = x.dims();
  for (size_t i = 2; i < ydims.size(); ++i) ydims[i] = 1;
  const int64_t planes = x.dim(0) * x.dim(1), IS = product(x.dims(), 2);
  const double p = kind == Kind::Lp ? lp_order(ctx.node(), [&](const std::string& m) { ctx.fail(m); }) : 2;
  if (IS == 0 && kind == Kind::Max) ctx.fail("GlobalMaxPool over an empty spatial extent");
  auto run = [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* xp = x.data<T>();
    T* yp = ctx.make_output(0, x.dtype(), ydims).template data<T>();
    for (int64_t pl = 0; pl < planes; ++pl) {
      const T* s = xp + pl * IS;
      if (kind == Kind::Max) {
        C best = static_cast<C>(s[0]);
        for (int64_t i = 1; i < IS; ++i) best = std::max(best, static_cast<C>(s[i]));
        yp[pl] = static_cast<T>(best);
      } else if constexpr (is_float_v<T>) {
        // Accumulate in double: a 7x7 or larger plane summed in float16 would lose digits.
        double acc = 0;
        if (kind == Kind::Avg) {
          for (int64_t i = 0; i < IS; ++i) acc += static_cast<double>(static_cast<C>(s[i]));
          yp[pl] = static_cast<T>(static_cast<C>(IS ? acc / static_cast<double>(IS) : 0.0));
        } else {
          for (int64_t i = 0; i < IS; ++i) acc += std::pow(std::abs(static_cast<double>(static_cast<C>(s[i]))), p);
          yp[pl] = static_cast<T>(static_cast<C>(std::pow(acc, 1.0 / p)));
        }
      }
    }
  };
  if (kind == Kind::Max)
    dispatch_numeric(x.dtype(), run);
  else
    dispatch_float(x.dtype(), run);
}

// ---------------------------------------------------------------- MaxUnpool

// The unpooled shape implied by the attributes: (in - 1) * stride + kernel - pads.
template <typename Ctx>
std::vector<int64_t> unpool_default_dims(const Ctx& ctx, const std::vector<int64_t>& xd) {
  if (xd.size() < 3) ctx.fail("input X must have rank >= 3 (N, C, spatial...), got rank " + std::to_string(xd.size()));
  Geom g = pool_geom(ctx, std::vector<int64_t>(xd.size() - 2, -1), false, false);
  std::vector<int64_t> out = {xd[0], xd[1]};
  for (int i = 0; i < g.nsp; ++i) {
    const int64_t in = xd[2 + i];
    int64_t o = in < 0 ? -1 : (in - 1) * g.strides[i] + g.kernel[i] - g.pad_begin[i] - g.pad_end[i];
    if (in >= 0 && o < 1)
      ctx.fail("unpooled extent " + std::to_string(o) + " along spatial axis " + std::to_string(i) + " is not positive");
    out.push_back(o);
  }
  return out;
}

void infer_max_unpool(InferContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  const ir::TensorType& ind = ctx.input(1);
  if (ind.dtype != DType::Undefined && ind.dtype != DType::Int64) ctx.fail("indices I must be int64, got " + ind.str());
  if (ctx.has_input(2)) {
    if (const Tensor* v = ctx.value(2)) {
      std::vector<int64_t> d = v->to_int64_vector();
      if (x.rank_known && static_cast<int>(d.size()) != x.rank())
        ctx.fail("output_shape " + ints_str(d) + " must have X's rank " + std::to_string(x.rank()));
      return ctx.set_output(0, ir::TensorType::from_dims(x.dtype, d));
    }
    const ir::TensorType& s = ctx.input(2);
    int64_t r = x.rank_known ? x.rank() : (s.rank_known && s.rank() == 1 && s.dims[0].is_static() ? s.dims[0].value : -1);
    if (r < 0) return ctx.set_output(0, ir::TensorType::unranked(x.dtype));
    std::vector<ir::Dim> out;
    for (int64_t i = 0; i < r; ++i) out.push_back(ctx.fresh_dim());
    return ctx.set_output(0, x.dtype, out);
  }
  if (!x.rank_known) return ctx.set_output(0, ir::TensorType::unranked(x.dtype));
  const std::vector<int64_t> d = unpool_default_dims(ctx, known_dims(x));
  std::vector<ir::Dim> out = {x.dims[0], x.dims[1]};
  for (size_t i = 2; i < d.size(); ++i) out.push_back(d[i] >= 0 ? ir::Dim(d[i]) : ctx.fresh_dim());
  ctx.set_output(0, x.dtype, out);
}

// Indices address the default unpooled shape (as MaxPool produced them); an explicit, larger
// output_shape pads that shape at the end of each axis, so indices are remapped by coordinates.
void max_unpool_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  if (ind.dtype() != DType::Int64) ctx.fail("indices I must be int64, got " + ind.describe());
  if (ind.dims() != x.dims()) ctx.fail("indices I " + ind.describe() + " must have X's shape " + x.describe());
  const std::vector<int64_t> def = unpool_default_dims(ctx, x.dims());
  std::vector<int64_t> out = def;
  if (ctx.has_input(2)) {
    out = ctx.input(2).to_int64_vector();
    if (out.size() != def.size()) ctx.fail("output_shape " + ints_str(out) + " must have X's rank " + std::to_string(def.size()));
    for (size_t i = 0; i < out.size(); ++i)
      if (out[i] < def[i])
        ctx.fail("output_shape " + ints_str(out) + " is smaller than the unpooled shape " + ints_str(def));
  }
  const std::vector<int64_t> def_str = strides_of(def), out_str = strides_of(out);
  const int64_t def_numel = product(def);
  const int64_t* ip = ind.data<int64_t>();
  dispatch_all(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    T* yp = ctx.make_output(0, x.dtype(), out).template data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      int64_t idx = ip[i];
      if (idx < 0 || idx >= def_numel)
        ctx.fail("index " + std::to_string(idx) + " is outside the unpooled tensor of " + std::to_string(def_numel) +
                 " elements");
      int64_t o = 0;
      for (size_t d = 0; d < def.size(); ++d) {
        o += (idx / def_str[d]) * out_str[d];
        idx %= def_str[d];
      }
      yp[o] = xp[i];
    }
  });
}

// ---------------------------------------------------------------- MaxRoiPool

void infer_max_roi_pool(InferContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  const ir::TensorType& rois = ctx.input(1);
  std::vector<int64_t> ps = ctx.node().attr_ints("pooled_shape");
  if (ps.size() != 2 || ps[0] < 1 || ps[1] < 1) ctx.fail("pooled_shape must be two positive ints, got " + ints_str(ps));
  if (x.rank_known && x.rank() != 4) ctx.fail("MaxRoiPool takes a 4-D X, got " + x.str());
  if (rois.rank_known && (rois.rank() != 2 || (rois.dims[1].is_static() && rois.dims[1].value != 5)))
    ctx.fail("rois must be [num_rois, 5], got " + rois.str());
  ir::Dim r = rois.rank_known ? rois.dims[0] : ctx.fresh_dim();
  ir::Dim c = x.rank_known ? x.dims[1] : ctx.fresh_dim();
  ctx.set_output(0, x.dtype, {r, c, ps[0], ps[1]});
}

void max_roi_pool_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& rois = ctx.input(1);
  const std::vector<int64_t> ps = ctx.node().attr_ints("pooled_shape");
  if (ps.size() != 2 || ps[0] < 1 || ps[1] < 1) ctx.fail("pooled_shape must be two positive ints, got " + ints_str(ps));
  const float scale = ctx.node().attr_float("spatial_scale", 1.f);
  if (x.rank() != 4) ctx.fail("MaxRoiPool takes a 4-D X, got " + x.describe());
  if (rois.rank() != 2 || rois.dim(1) != 5) ctx.fail("rois must be [num_rois, 5], got " + rois.describe());
  if (rois.dtype() != x.dtype()) ctx.fail("rois dtype differs from X's: " + rois.describe());
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), R = rois.dim(0), PH = ps[0], PW = ps[1];
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using F = compute_t<T>;
    const T* xp = x.data<T>();
    T* yp = ctx.make_output(0, x.dtype(), {R, C, PH, PW}).template data<T>();
    for (int64_t r = 0; r < R; ++r) {
      const int64_t b = static_cast<int64_t>(rois.as_double(r * 5));
      if (b < 0 || b >= N) ctx.fail("roi " + std::to_string(r) + " names batch " + std::to_string(b) + " outside [0, " + std::to_string(N) + ")");
      // Caffe's RoIPool: corners rounded to the feature grid, inclusive ends.
      const int64_t x1 = std::lround(rois.as_double(r * 5 + 1) * scale), y1 = std::lround(rois.as_double(r * 5 + 2) * scale);
      const int64_t x2 = std::lround(rois.as_double(r * 5 + 3) * scale), y2 = std::lround(rois.as_double(r * 5 + 4) * scale);
      const double bin_h = static_cast<double>(std::max<int64_t>(y2 - y1 + 1, 1)) / static_cast<double>(PH);
      const double bin_w = static_cast<double>(std::max<int64_t>(x2 - x1 + 1, 1)) / static_cast<double>(PW);
      for (int64_t c = 0; c < C; ++c) {
        const T* plane = xp + (b * C + c) * H * W;
        for (int64_t ph = 0; ph < PH; ++ph)
          for (int64_t pw = 0; pw < PW; ++pw) {
            const int64_t hs = std::clamp<int64_t>(static_cast<int64_t>(std::floor(ph * bin_h)) + y1, 0, H);
            const int64_t he = std::clamp<int64_t>(static_cast<int64_t>(std::ceil((ph + 1) * bin_h)) + y1, 0, H);
            const int64_t ws = std::clamp<int64_t>(static_cast<int64_t>(std::floor(pw * bin_w)) + x1, 0, W);
            const int64_t we = std::clamp<int64_t>(static_cast<int64_t>(std::ceil((pw + 1) * bin_w)) + x1, 0, W);
            F best = F{};
            bool any = false;
            for (int64_t h = hs; h < he; ++h)
              for (int64_t w = ws; w < we; ++w) {
                const F v = static_cast<F>(plane[h * W + w]);
                if (!any || v > best) best = v;
                any = true;
              }
            yp[((r * C + c) * PH + ph) * PW + pw] = static_cast<T>(any ? best : F{});
          }
      }
    }
  });
}

}  // namespace

KILN_REGISTER_OPS(pool) {
  reg.add({.name = "MaxPool", .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 2,
           .pattern = PatternKind::OutEWiseFusable,
           .infer = [](InferContext& ctx) { infer_pool(ctx, true, true); },
           .kernel = [](KernelContext& ctx) { pool_kernel(ctx, Kind::Max); }});
  reg.add({.name = "AveragePool", .max_version = 19, .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::OutEWiseFusable,
           // dilations arrived in opset 19.
           .infer = [](InferContext& ctx) { infer_pool(ctx, true, ctx.opset() >= 19); },
           .kernel = [](KernelContext& ctx) { pool_kernel(ctx, Kind::Avg); }});
  // ceil_mode and dilations arrived in opset 18; earlier LpPools ignore them.
  reg.add({.name = "LpPool", .max_version = 18, .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::OutEWiseFusable,
           .infer = [](InferContext& ctx) { infer_pool(ctx, ctx.opset() >= 18, ctx.opset() >= 18); },
           .kernel = [](KernelContext& ctx) { pool_kernel(ctx, Kind::Lp); }});
  reg.add({.name = "GlobalAveragePool", .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::OutEWiseFusable,
           .infer = infer_global, .kernel = [](KernelContext& ctx) { global_kernel(ctx, Kind::Avg); }});
  reg.add({.name = "GlobalMaxPool", .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::OutEWiseFusable,
           .infer = infer_global, .kernel = [](KernelContext& ctx) { global_kernel(ctx, Kind::Max); }});
  reg.add({.name = "GlobalLpPool", .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::OutEWiseFusable,
           .infer = infer_global, .kernel = [](KernelContext& ctx) { global_kernel(ctx, Kind::Lp); }});
  reg.add({.name = "MaxUnpool", .since_version = 9, .min_inputs = 2, .max_inputs = 3, .pattern = PatternKind::Opaque,
           .infer = infer_max_unpool, .kernel = max_unpool_kernel});
  reg.add({.name = "MaxRoiPool", .min_inputs = 2, .max_inputs = 2, .pattern = PatternKind::Opaque,
           .infer = infer_max_roi_pool, .kernel = max_roi_pool_kernel});
}

}  // namespace kiln::ops
