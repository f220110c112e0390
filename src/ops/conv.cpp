// Convolutions: Conv, ConvTranspose and ConvInteger over 1-, 2- or 3-D (any N-D) spatial dims.
//
// Conv runs as im2col + GEMM per (batch, group): the patch matrix col[Cg*KS, OS] times the
// group's weights [Mg, Cg*KS]. ConvTranspose is the adjoint: GEMM with the transposed weights
// into col[Mg*KS, IS], then col2im scatter-adds the patches into the output. The GEMM is the
// same blocked i-k-j loop as MatMul's, with a contiguous (vectorizable) inner loop over output
// positions; resnet18's 1.8 GMAC run in about a second this way.
#include <algorithm>
#include <type_traits>

#include "ops/core/conv_geometry.h"
#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

// out[M,N] += a[M,K] * b[K,N]; all row-major and contiguous.
template <typename C>
void gemm_acc(int64_t M, int64_t N, int64_t K, const C* __restrict a, const C* __restrict b, C* __restrict out) {
  constexpr int64_t kBlockK = 128, kBlockN = 512;  // a 128x512 float slab of b is 256 KiB
  for (int64_t j0 = 0; j0 < N; j0 += kBlockN) {
    const int64_t j1 = std::min(N, j0 + kBlockN);
    for (int64_t k0 = 0; k0 < K; k0 += kBlockK) {
      const int64_t k1 = std::min(K, k0 + kBlockK);
      for (int64_t i = 0; i < M; ++i) {
        C* __restrict crow = out + i * N;
        const C* arow = a + i * K;
        for (int64_t k = k0; k < k1; ++k) {
          const C av = arow[k];
          const C* __restrict brow = b + k * N;
          for (int64_t j = j0; j < j1; ++j) crow[j] += av * brow[j];
        }
      }
    }
  }
}

using Geom = WindowGeom;

// Reads kernel_shape/strides/dilations/pads (shared by the conv ops) and validates them.
// in_sp: the input's spatial extents; w_sp: the kernel extents the weights imply.
template <typename Ctx>
Geom read_geom(const Ctx& ctx, std::vector<int64_t> in_sp, const std::vector<int64_t>& w_sp) {
  const ir::Node& n = ctx.node();
  Geom g;
  g.nsp = static_cast<int>(in_sp.size());
  g.in = std::move(in_sp);
  const size_t nsp = g.in.size();
  g.kernel = n.attr_ints("kernel_shape", w_sp);
  if (g.kernel.size() != nsp)
    ctx.fail("kernel_shape " + ints_str(g.kernel) + " must have one entry per spatial axis (" + std::to_string(nsp) + ")");
  for (size_t i = 0; i < nsp; ++i) {
    if (w_sp[i] >= 0 && g.kernel[i] != w_sp[i])
      ctx.fail("kernel_shape " + ints_str(g.kernel) + " does not match the weights' spatial dims " + ints_str(w_sp));
    if (g.kernel[i] == 0 || g.kernel[i] < -1) ctx.fail("kernel_shape " + ints_str(g.kernel) + " must be positive");
  }
  g.strides = n.attr_ints("strides", std::vector<int64_t>(nsp, 1));
  g.dilations = n.attr_ints("dilations", std::vector<int64_t>(nsp, 1));
  if (g.strides.size() != nsp || g.dilations.size() != nsp)
    ctx.fail("strides " + ints_str(g.strides) + " and dilations " + ints_str(g.dilations) + " need " +
             std::to_string(nsp) + " entries");
  for (size_t i = 0; i < nsp; ++i)
    if (g.strides[i] < 1 || g.dilations[i] < 1)
      ctx.fail("strides " + ints_str(g.strides) + " and dilations " + ints_str(g.dilations) + " must be >= 1");
  g.read_pads(ctx);
  return g;
}

// Output extents and pads of a (forward) convolution.
template <typename Ctx>
void conv_out(const Ctx& ctx, Geom& g) {
  const AutoPad ap = auto_pad_or_fail(ctx);
  g.out.assign(g.nsp, -1);
  for (int i = 0; i < g.nsp; ++i) {
    if (g.in[i] < 0 || g.kernel[i] < 0) continue;
    const WindowAxis a = g.axis(i, ap);
    if (!a.fits)
      ctx.fail("kernel extent " + std::to_string(a.extent) + " (kernel " + std::to_string(g.kernel[i]) + ", dilation " +
               std::to_string(g.dilations[i]) + ") exceeds the padded input extent " + std::to_string(a.padded) +
               " along spatial axis " + std::to_string(i));
    g.set(i, a);
  }
}

// Output extents and pads of a transposed convolution.
template <typename Ctx>
void conv_transpose_out(const Ctx& ctx, Geom& g) {
  const ir::Node& n = ctx.node();
  const AutoPad ap = auto_pad_or_fail(ctx);
  const size_t nsp = g.nsp;
  std::vector<int64_t> opad = n.attr_ints("output_padding", std::vector<int64_t>(nsp, 0));
  if (opad.size() != nsp) ctx.fail("output_padding " + ints_str(opad) + " needs " + std::to_string(nsp) + " entries");
  std::vector<int64_t> oshape = n.attr_ints("output_shape");
  if (oshape.size() == nsp + 2) oshape.erase(oshape.begin(), oshape.begin() + 2);  // full N,C,... form
  if (!oshape.empty() && oshape.size() != nsp)
    ctx.fail("output_shape " + ints_str(oshape) + " needs " + std::to_string(nsp) + " spatial entries");
  g.out.assign(nsp, -1);
  for (size_t i = 0; i < nsp; ++i) {
    const int64_t in = g.in[i], k = g.kernel[i], s = g.strides[i];
    if (opad[i] < 0) ctx.fail("output_padding " + ints_str(opad) + " must be >= 0");
    if (k < 0) continue;
    if (!oshape.empty() || is_same_pad(ap)) {
      if (in < 0 && oshape.empty()) continue;
      const int64_t target = !oshape.empty() ? oshape[i] : in * s;
      if (in < 0) { g.out[i] = target; continue; }
      const AxisPads p = conv_transpose_pads(ap, in, target, k, s, g.dilations[i], opad[i]);
      g.pad_begin[i] = p.begin;
      g.pad_end[i] = p.end;
      g.out[i] = target;
    } else {
      if (ap == AutoPad::Valid) g.pad_begin[i] = g.pad_end[i] = 0;
      if (in < 0) continue;
      g.out[i] = s * (in - 1) + opad[i] + dilated_extent(k, g.dilations[i]) - g.pad_begin[i] - g.pad_end[i];
    }
    if (g.out[i] < 1)
      ctx.fail("output extent " + std::to_string(g.out[i]) + " along spatial axis " + std::to_string(i) +
               " is not positive (pads too large)");
  }
}

// patches of x (channels x in...) into col[channels*KS, OS]; out-of-range taps read zero.
template <typename C>
void im2col(const Geom& g, int64_t channels, const C* x, C* col) {
  const int nsp = g.nsp, last = nsp - 1;
  const int64_t IS = product(g.in), OS = product(g.out), KS = product(g.kernel);
  if (OS == 0) return;
  const std::vector<int64_t> in_str = strides_of(g.in);
  const std::vector<int64_t> outer(g.out.begin(), g.out.end() - 1);
  const int64_t w_out = g.out[last], w_in = g.in[last], sw = g.strides[last];
  const int64_t n_outer = OS / w_out;
  std::vector<int64_t> k(nsp), o(nsp - 1);
  for (int64_t c = 0; c < channels; ++c) {
    const C* xc = x + c * IS;
    std::fill(k.begin(), k.end(), 0);
    for (int64_t kidx = 0; kidx < KS; ++kidx, next_index(k, g.kernel)) {
      C* dst = col + (c * KS + kidx) * OS;
      const int64_t off = k[last] * g.dilations[last] - g.pad_begin[last];
      std::fill(o.begin(), o.end(), 0);
      for (int64_t oi = 0; oi < n_outer; ++oi, next_index(o, outer)) {
        C* drow = dst + oi * w_out;
        int64_t base = 0;
        bool valid = true;
        for (int d = 0; d < last && valid; ++d) {
          const int64_t p = o[d] * g.strides[d] - g.pad_begin[d] + k[d] * g.dilations[d];
          valid = p >= 0 && p < g.in[d];
          base += p * in_str[d];
        }
        if (!valid) {
          std::fill(drow, drow + w_out, C{});
          continue;
        }
        const C* src = xc + base;
        for (int64_t ow = 0; ow < w_out; ++ow) {
          const int64_t iw = ow * sw + off;
          drow[ow] = (iw >= 0 && iw < w_in) ? src[iw] : C{};
        }
      }
    }
  }
}

// Adjoint of im2col: scatter-adds col[channels*KS, IS] (patches indexed by input position of a
// transposed conv, g.in) into y (channels x out...).
template <typename C>
void col2im(const Geom& g, int64_t channels, const C* col, C* y) {
  const int nsp = g.nsp, last = nsp - 1;
  const int64_t IS = product(g.in), OS = product(g.out), KS = product(g.kernel);
  if (IS == 0) return;
  const std::vector<int64_t> out_str = strides_of(g.out);
  const std::vector<int64_t> outer(g.in.begin(), g.in.end() - 1);
  const int64_t w_in = g.in[last], w_out = g.out[last], sw = g.strides[last];
  const int64_t n_outer = IS / w_in;
  std::vector<int64_t> k(nsp), ii(nsp - 1);
  for (int64_t c = 0; c < channels; ++c) {
    C* yc = y + c * OS;
    std::fill(k.begin(), k.end(), 0);
    for (int64_t kidx = 0; kidx < KS; ++kidx, next_index(k, g.kernel)) {
      const C* src = col + (c * KS + kidx) * IS;
      const int64_t off = k[last] * g.dilations[last] - g.pad_begin[last];
      std::fill(ii.begin(), ii.end(), 0);
      for (int64_t r = 0; r < n_outer; ++r, next_index(ii, outer)) {
        int64_t base = 0;
        bool valid = true;
        for (int d = 0; d < last && valid; ++d) {
          const int64_t p = ii[d] * g.strides[d] - g.pad_begin[d] + k[d] * g.dilations[d];
          valid = p >= 0 && p < g.out[d];
          base += p * out_str[d];
        }
        if (!valid) continue;
        const C* srow = src + r * w_in;
        C* dst = yc + base;
        for (int64_t iw = 0; iw < w_in; ++iw) {
          const int64_t ow = iw * sw + off;
          if (ow >= 0 && ow < w_out) dst[ow] += srow[iw];
        }
      }
    }
  }
}

// y[N, M, out...] = conv(x[N, Cin, in...], w[M, Cin/group, k...]) + b.
template <typename C>
void conv_compute(const Geom& g, int64_t N, int64_t Cin, int64_t M, int64_t group, const C* x, const C* w,
                  const C* b, C* y) {
  const int64_t Cg = Cin / group, Mg = M / group;
  const int64_t IS = product(g.in), OS = product(g.out), KS = product(g.kernel);
  bool direct = true;  // 1x1, stride 1, no padding: the input already is the patch matrix
  for (int i = 0; i < g.nsp; ++i)
    direct = direct && g.kernel[i] == 1 && g.strides[i] == 1 && g.pad_begin[i] == 0 && g.pad_end[i] == 0;
  std::vector<C> col(direct ? 0 : static_cast<size_t>(Cg * KS * OS));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t grp = 0; grp < group; ++grp) {
      const C* xg = x + (n * Cin + grp * Cg) * IS;
      C* yg = y + (n * M + grp * Mg) * OS;
      if (b)
        for (int64_t m = 0; m < Mg; ++m) std::fill(yg + m * OS, yg + (m + 1) * OS, b[grp * Mg + m]);
      const C* patches = xg;
      if (!direct) {
        im2col(g, Cg, xg, col.data());
        patches = col.data();
      }
      gemm_acc<C>(Mg, OS, Cg * KS, w + grp * Mg * Cg * KS, patches, yg);
    }
}

// y[N, M, out...] = conv_transpose(x[N, Cin, in...], w[Cin, M/group, k...]) + b.
template <typename C>
void conv_transpose_compute(const Geom& g, int64_t N, int64_t Cin, int64_t M, int64_t group, const C* x,
                            const C* w, const C* b, C* y) {
  const int64_t Cg = Cin / group, Mg = M / group;
  const int64_t IS = product(g.in), OS = product(g.out), KS = product(g.kernel);
  const int64_t rows = Mg * KS;
  // Per group, w is [Cg, Mg*KS]; the GEMM wants its transpose [Mg*KS, Cg].
  std::vector<C> wt(static_cast<size_t>(group * rows * Cg));
  for (int64_t grp = 0; grp < group; ++grp)
    for (int64_t c = 0; c < Cg; ++c)
      for (int64_t r = 0; r < rows; ++r) wt[(grp * rows + r) * Cg + c] = w[(grp * Cg + c) * rows + r];
  std::vector<C> col(static_cast<size_t>(rows * IS));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t grp = 0; grp < group; ++grp) {
      C* yg = y + (n * M + grp * Mg) * OS;
      std::fill(col.begin(), col.end(), C{});
      gemm_acc<C>(rows, IS, Cg, wt.data() + grp * rows * Cg, x + (n * Cin + grp * Cg) * IS, col.data());
      col2im(g, Mg, col.data(), yg);
      if (b)
        for (int64_t m = 0; m < Mg; ++m)
          for (int64_t i = 0; i < OS; ++i) yg[m * OS + i] += b[grp * Mg + m];
    }
}

std::vector<int64_t> known_dims(const ir::TensorType& t) {
  std::vector<int64_t> d;
  for (const ir::Dim& x : t.dims) d.push_back(x.is_static() ? x.value : -1);
  return d;
}

// Static checks of X [N, C, in...], W and the group count shared by the conv ops. For Conv,
// W is [M, C/group, k...]; for ConvTranspose [C, M/group, k...]. Returns the spatial rank.
template <typename Ctx>
int check_operands(const Ctx& ctx, const std::vector<int64_t>& x, const std::vector<int64_t>& w, bool transpose,
                   int64_t group) {
  if (x.size() < 3) ctx.fail("input X must have rank >= 3 (N, C, spatial...), got rank " + std::to_string(x.size()));
  if (w.size() != x.size())
    ctx.fail("weights W rank " + std::to_string(w.size()) + " differs from X rank " + std::to_string(x.size()));
  if (group < 1) ctx.fail("group must be >= 1, got " + std::to_string(group));
  const int64_t c = x[1];
  if (!transpose) {
    if (c >= 0 && w[1] >= 0 && c != w[1] * group)
      ctx.fail("X has " + std::to_string(c) + " channels but W expects " + std::to_string(w[1]) + " per group x " +
               std::to_string(group) + " groups");
    if (w[0] >= 0 && w[0] % group != 0)
      ctx.fail("W's " + std::to_string(w[0]) + " output channels are not divisible by group " + std::to_string(group));
  } else {
    if (c >= 0 && w[0] >= 0 && c != w[0])
      ctx.fail("X has " + std::to_string(c) + " channels but W's first dim is " + std::to_string(w[0]));
    if (c >= 0 && c % group != 0)
      ctx.fail("X's " + std::to_string(c) + " channels are not divisible by group " + std::to_string(group));
  }
  return static_cast<int>(x.size()) - 2;
}

template <typename Ctx>
void check_bias(const Ctx& ctx, const std::vector<int64_t>& b, int64_t m) {
  if (b.size() != 1) ctx.fail("bias B must be 1-D, got rank " + std::to_string(b.size()));
  if (m >= 0 && b[0] >= 0 && b[0] != m)
    ctx.fail("bias B has " + std::to_string(b[0]) + " entries for " + std::to_string(m) + " output channels");
}

// Shape inference for the three ops. out_dtype: the output's dtype (Undefined = X's).
void infer_conv(InferContext& ctx, bool transpose, DType out_dtype, bool has_bias) {
  const ir::TensorType& x = ctx.input(0);
  const ir::TensorType& w = ctx.input(1);
  const DType dt = out_dtype == DType::Undefined ? x.dtype : out_dtype;
  const int64_t group = ctx.node().attr_int("group", 1);
  if (!x.rank_known && !w.rank_known) return ctx.set_output(0, ir::TensorType::unranked(dt));
  std::vector<int64_t> xd, wd;
  std::vector<ir::Dim> xdims = x.dims;
  if (!x.rank_known) {
    xdims.assign(w.rank(), ir::Dim());
    if (!xdims.empty()) xdims[0] = ctx.fresh_dim();
  }
  wd = w.rank_known ? known_dims(w) : std::vector<int64_t>(xdims.size(), -1);
  xd = x.rank_known ? known_dims(x) : std::vector<int64_t>(xdims.size(), -1);
  const int nsp = check_operands(ctx, xd, wd, transpose, group);
  if (!transpose && has_bias && ctx.has_input(2) && ctx.input(2).rank_known) check_bias(ctx, known_dims(ctx.input(2)), wd[0]);
  Geom g = read_geom(ctx, std::vector<int64_t>(xd.begin() + 2, xd.end()), std::vector<int64_t>(wd.begin() + 2, wd.end()));
  if (transpose)
    conv_transpose_out(ctx, g);
  else
    conv_out(ctx, g);
  std::vector<ir::Dim> out;
  out.push_back(xdims[0]);
  if (!transpose) {
    out.push_back(w.rank_known ? w.dims[0] : ctx.fresh_dim());
  } else if (wd[1] >= 0) {
    out.push_back(ir::Dim(wd[1] * group));
  } else {
    out.push_back(w.rank_known && group == 1 ? w.dims[1] : ctx.fresh_dim());
  }
  for (int i = 0; i < nsp; ++i) out.push_back(g.out[i] >= 0 ? ir::Dim(g.out[i]) : ctx.fresh_dim());
  if (transpose && ctx.has_input(2) && ctx.input(2).rank_known) check_bias(ctx, known_dims(ctx.input(2)), out[1].value);
  ctx.set_output(0, dt, out);
}

template <typename T, typename C>
std::vector<C> to_compute(const Tensor& t) {
  const T* p = t.data<T>();
  std::vector<C> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = static_cast<C>(p[i]);
  return v;
}

void conv_kernel(KernelContext& ctx, bool transpose) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (w.dtype() != x.dtype() || (b && b->dtype() != x.dtype()))
    ctx.fail("X, W and B must share a dtype, got " + x.describe() + ", " + w.describe() + (b ? ", " + b->describe() : ""));
  const int64_t group = ctx.node().attr_int("group", 1);
  const int nsp = check_operands(ctx, x.dims(), w.dims(), transpose, group);
  Geom g = read_geom(ctx, std::vector<int64_t>(x.dims().begin() + 2, x.dims().end()),
                     std::vector<int64_t>(w.dims().begin() + 2, w.dims().end()));
  if (transpose)
    conv_transpose_out(ctx, g);
  else
    conv_out(ctx, g);
  const int64_t N = x.dim(0), Cin = x.dim(1), M = transpose ? w.dim(1) * group : w.dim(0);
  if (b) check_bias(ctx, b->dims(), M);
  std::vector<int64_t> ydims = {N, M};
  ydims.insert(ydims.end(), g.out.begin(), g.out.end());
  (void)nsp;
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    Tensor& y = ctx.make_output(0, x.dtype(), ydims);
    auto run = [&](const C* xp, const C* wp, const C* bp, C* yp) {
      if (transpose)
        conv_transpose_compute<C>(g, N, Cin, M, group, xp, wp, bp, yp);
      else
        conv_compute<C>(g, N, Cin, M, group, xp, wp, bp, yp);
    };
    if constexpr (std::is_same_v<T, C>) {
      run(x.data<T>(), w.data<T>(), b ? b->data<T>() : nullptr, y.data<T>());
    } else {
      std::vector<C> xv = to_compute<T, C>(x), wv = to_compute<T, C>(w), yv(y.numel(), C{});
      std::vector<C> bv = b ? to_compute<T, C>(*b) : std::vector<C>();
      run(xv.data(), wv.data(), b ? bv.data() : nullptr, yv.data());
      T* yp = y.data<T>();
      for (int64_t i = 0; i < y.numel(); ++i) yp[i] = static_cast<T>(yv[i]);
    }
  });
}

// ---------------------------------------------------------------- ConvInteger

bool is_int8_type(DType t) { return t == DType::UInt8 || t == DType::Int8; }

void infer_conv_integer(InferContext& ctx) {
  for (int i = 0; i < 2; ++i) {
    DType t = ctx.input(i).dtype;
    if (t != DType::Undefined && !is_int8_type(t)) ctx.fail("ConvInteger takes uint8/int8 X and W, got " + ctx.input(i).str());
  }
  infer_conv(ctx, false, DType::Int32, false);
}

// Subtracting the zero points first makes padding (which ONNX fills with the zero point) zero.
void conv_integer_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  if (!is_int8_type(x.dtype()) || !is_int8_type(w.dtype()))
    ctx.fail("ConvInteger takes uint8/int8 X and W, got " + x.describe() + " and " + w.describe());
  const int64_t group = ctx.node().attr_int("group", 1);
  check_operands(ctx, x.dims(), w.dims(), false, group);
  Geom g = read_geom(ctx, std::vector<int64_t>(x.dims().begin() + 2, x.dims().end()),
                     std::vector<int64_t>(w.dims().begin() + 2, w.dims().end()));
  conv_out(ctx, g);
  const int64_t N = x.dim(0), Cin = x.dim(1), M = w.dim(0);
  int32_t xzp = 0;
  if (ctx.has_input(2)) {
    const Tensor& z = ctx.input(2);
    if (z.numel() != 1 || z.dtype() != x.dtype()) ctx.fail("x_zero_point must be a scalar of X's dtype, got " + z.describe());
    xzp = static_cast<int32_t>(z.as_int64(0));
  }
  std::vector<int32_t> wzp(static_cast<size_t>(M), 0);
  if (ctx.has_input(3)) {
    const Tensor& z = ctx.input(3);
    if (z.dtype() != w.dtype() || (z.numel() != 1 && z.numel() != M))
      ctx.fail("w_zero_point must be a scalar or have one entry per output channel, got " + z.describe());
    for (int64_t m = 0; m < M; ++m) wzp[m] = static_cast<int32_t>(z.as_int64(z.numel() == 1 ? 0 : m));
  }
  std::vector<int32_t> xv(static_cast<size_t>(x.numel())), wv(static_cast<size_t>(w.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) xv[i] = static_cast<int32_t>(x.as_int64(i)) - xzp;
  const int64_t per_m = M ? w.numel() / M : 0;
  for (int64_t i = 0; i < w.numel(); ++i) wv[i] = static_cast<int32_t>(w.as_int64(i)) - wzp[i / per_m];
  std::vector<int64_t> ydims = {N, M};
  ydims.insert(ydims.end(), g.out.begin(), g.out.end());
  Tensor& y = ctx.make_output(0, DType::Int32, ydims);
  conv_compute<int32_t>(g, N, Cin, M, group, xv.data(), wv.data(), nullptr, y.data<int32_t>());
}

// ---------------------------------------------------------------- Col2Im (opset 18)

// The inverse of im2col: input [N, C * prod(block_shape), L] holds, per block position l, the
// block's values; each is added into image [N, C, image_shape...] at its place (overlapping
// blocks sum). L must be the number of block positions the geometry (strides, pads,
// dilations) gives.
struct Col2ImGeom {
  std::vector<int64_t> image, block, strides, dilations, pads, positions;  // pads: begins then ends
};

template <typename Ctx>
Col2ImGeom col2im_geom(const Ctx& ctx, const Tensor& image_shape, const Tensor& block_shape) {
  const ir::Node& n = ctx.node();
  Col2ImGeom g;
  g.image = image_shape.to_int64_vector();
  g.block = block_shape.to_int64_vector();
  const size_t nd = g.image.size();
  if (nd == 0 || g.block.size() != nd) ctx.fail("image_shape and block_shape must list the same spatial dims");
  g.strides = n.attr_ints("strides", std::vector<int64_t>(nd, 1));
  g.dilations = n.attr_ints("dilations", std::vector<int64_t>(nd, 1));
  g.pads = n.attr_ints("pads", std::vector<int64_t>(2 * nd, 0));
  if (g.strides.size() != nd || g.dilations.size() != nd || g.pads.size() != 2 * nd)
    ctx.fail("strides, dilations and pads must match the " + std::to_string(nd) + " spatial dims");
  for (size_t i = 0; i < nd; ++i) {
    if (g.image[i] < 1 || g.block[i] < 1 || g.strides[i] < 1 || g.dilations[i] < 1 || g.pads[i] < 0 || g.pads[i + nd] < 0)
      ctx.fail("image_shape, block_shape, strides and dilations must be positive, pads non-negative");
    const int64_t span = g.dilations[i] * (g.block[i] - 1) + 1, room = g.image[i] + g.pads[i] + g.pads[i + nd];
    if (room < span) ctx.fail("the block does not fit the padded image on spatial dim " + std::to_string(i));
    g.positions.push_back((room - span) / g.strides[i] + 1);
  }
  return g;
}

void infer_col2im(InferContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  const Tensor *img = ctx.value(1), *blk = ctx.value(2);
  if (x.rank_known && x.rank() != 3) ctx.fail("input must be [N, C * prod(block_shape), L], got " + x.str());
  if (!img || !blk || !x.rank_known) return ctx.set_output(0, ir::TensorType::unranked(x.dtype));
  const Col2ImGeom g = col2im_geom(ctx, *img, *blk);
  std::vector<ir::Dim> dims = {x.dims[0]};
  const int64_t k = product(g.block);
  dims.push_back(x.dims[1].is_static() ? ir::Dim(x.dims[1].value / k) : ctx.fresh_dim());
  if (x.dims[1].is_static() && x.dims[1].value % k != 0)
    ctx.fail("input channels " + x.dims[1].str() + " are not a multiple of the block size " + std::to_string(k));
  for (int64_t d : g.image) dims.push_back(ir::Dim(d));
  ctx.set_output(0, x.dtype, dims);
}

void col2im_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 3) ctx.fail("input must be [N, C * prod(block_shape), L], got " + x.describe());
  const Col2ImGeom g = col2im_geom(ctx, ctx.input(1), ctx.input(2));
  const int64_t nd = static_cast<int64_t>(g.image.size()), K = product(g.block), L = product(g.positions);
  if (x.dim(1) % K != 0 || x.dim(2) != L)
    ctx.fail("input " + x.describe() + " must be [N, C * " + std::to_string(K) + ", " + std::to_string(L) + "]");
  const int64_t N = x.dim(0), C = x.dim(1) / K, P = product(g.image);
  std::vector<int64_t> out = {N, C};
  out.insert(out.end(), g.image.begin(), g.image.end());
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Acc = compute_t<T>;
    std::vector<Acc> acc(static_cast<size_t>(N * C * P), Acc(0));
    const T* px = x.data<T>();
    std::vector<int64_t> pos(nd), kk(nd);
    for (int64_t nc = 0; nc < N * C; ++nc)
      for (int64_t k = 0; k < K; ++k) {
        for (int64_t d = nd - 1, r = k; d >= 0; --d) kk[d] = r % g.block[d], r /= g.block[d];
        for (int64_t l = 0; l < L; ++l) {
          for (int64_t d = nd - 1, r = l; d >= 0; --d) pos[d] = r % g.positions[d], r /= g.positions[d];
          int64_t at = 0;
          bool inside = true;
          for (int64_t d = 0; d < nd && inside; ++d) {
            const int64_t c = pos[d] * g.strides[d] - g.pads[d] + kk[d] * g.dilations[d];
            inside = c >= 0 && c < g.image[d];
            at = at * g.image[d] + c;
          }
          if (inside) acc[nc * P + at] += static_cast<Acc>(px[(nc * K + k) * L + l]);
        }
      }
    T* py = ctx.make_output(0, x.dtype(), out).template data<T>();
    for (size_t i = 0; i < acc.size(); ++i) py[i] = static_cast<T>(acc[i]);
  });
}

}  // namespace

KILN_REGISTER_OPS(conv) {
  reg.add({.name = "Col2Im", .since_version = 18, .min_inputs = 3, .max_inputs = 3, .pattern = PatternKind::Opaque,
           .infer = infer_col2im, .kernel = col2im_kernel});
  reg.add({.name = "Conv", .min_inputs = 2, .max_inputs = 3, .pattern = PatternKind::OutEWiseFusable,
           .infer = [](InferContext& ctx) { infer_conv(ctx, false, DType::Undefined, true); },
           .kernel = [](KernelContext& ctx) { conv_kernel(ctx, false); }});
  reg.add({.name = "ConvTranspose", .min_inputs = 2, .max_inputs = 3, .pattern = PatternKind::OutEWiseFusable,
           .infer = [](InferContext& ctx) { infer_conv(ctx, true, DType::Undefined, true); },
           .kernel = [](KernelContext& ctx) { conv_kernel(ctx, true); }});
  reg.add({.name = "ConvInteger", .since_version = 10, .min_inputs = 2, .max_inputs = 4,
           .pattern = PatternKind::OutEWiseFusable, .infer = infer_conv_integer, .kernel = conv_integer_kernel});
}

}  // namespace kiln::ops
