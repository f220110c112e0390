// kiln's Winograd F(2x2, 3x3) convolution on channels-last activations, for 3x3 stride-1
// dense convs with few input channels (squeezenet1_1's expand convs: 16-64 channels), where
// oneDNN 2.6's Winograd (F(4x4, 3x3) on nChw16c, with its reorders) gained only 1.2-1.4x over
// its direct conv. Each 4x4 input tile becomes 16 transformed vectors (B^T d B, additions
// only), each of the 16 positions is a small GEMM against the transformed weights (G g G^T,
// made at creation), and each 4x4 result becomes a 2x2 output tile (A^T m A) with bias and
// activation applied before the store: 16 multiplies per 4 outputs instead of 36. The image
// goes by blocks of tile rows (about 24 tiles or more, the GEMMs' rows), so a block's transformed
// input and products stay in L2; threads split the blocks. The output may be a channel slice
// of a wider tensor (`ldc`), which kiln.ConvConcat uses to write squeezenet's fire outputs in
// place.
#include "backends/cpu/winograd_conv.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <utility>

#include "backends/cpu/activation_apply.h"
#include "backends/cpu/avx512_activation.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/onednn_common.h"
#include "backends/cpu/parallel.h"

namespace kiln::backends::cpu {

namespace {

const bool kHasAvx512 = __builtin_cpu_supports("avx512f");

constexpr int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }


#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// m[R rows][NV * 16] = v[R rows][K] * u ([K][NV * 16]), rows `K` floats apart in v and `ldm`
// in m.
template <int R, int NV>
__attribute__((target("avx512f"), always_inline)) inline void gemm_tile_inline(const float* __restrict v, int64_t K,
                                                           const float* __restrict u, float* __restrict m,
                                                           int64_t ldm) {
  constexpr int W = NV * 16;
  __m512 acc[R][NV];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) acc[r][j] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    __m512 b[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) b[j] = _mm512_load_ps(u + k * W + 16 * j);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(v[r * K + k]);
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) acc[r][j] = _mm512_fmadd_ps(a, b[j], acc[r][j]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) _mm512_store_ps(m + r * ldm + 16 * j, acc[r][j]);
}

template <int R, int NV>
__attribute__((target("avx512f"), noinline)) void gemm_tile(const float* v, int64_t K, const float* u, float* m,
                                                           int64_t ldm) {
  gemm_tile_inline<R, NV>(v, K, u, m, ldm);
}

template <int NV>
constexpr int kRows = NV == 4 ? 6 : NV == 3 ? 8 : NV == 2 ? 12 : 14;

template <int NV>
using GemmFn = void (*)(const float*, int64_t, const float*, float*, int64_t);

template <int NV, int... Rs>
constexpr std::array<GemmFn<NV>, sizeof...(Rs)> gemms_of(std::integer_sequence<int, Rs...>) {
  return {&gemm_tile<Rs + 1, NV>...};
}
template <int NV>
constexpr auto kGemms = gemms_of<NV>(std::make_integer_sequence<int, kRows<NV>>{});

// m[t][n0, n0 + NV * 16) for tiles t in [0, T) of one position.
template <int NV>
__attribute__((target("avx512f"))) void gemm_block(const float* v, int64_t T, int64_t K, const float* u, float* m,
                                                   int64_t ldm) {
  constexpr int R = kRows<NV>;
  int64_t t = 0;
  for (; t + R <= T; t += R) gemm_tile_inline<R, NV>(v + t * K, K, u, m + t * ldm, ldm);
  if (t < T) kGemms<NV>[T - t - 1](v + t * K, K, u, m + t * ldm, ldm);
}

// B^T d B over a 4x4 tile of channel vectors d[i][j] (rows i, columns j), in place.
__attribute__((target("avx512f"), always_inline)) inline void input_transform(__m512 d[4][4]) {
  for (int j = 0; j < 4; ++j) {
    const __m512 d0 = d[0][j], d1 = d[1][j], d2 = d[2][j], d3 = d[3][j];
    d[0][j] = _mm512_sub_ps(d0, d2);
    d[1][j] = _mm512_add_ps(d1, d2);
    d[2][j] = _mm512_sub_ps(d2, d1);
    d[3][j] = _mm512_sub_ps(d1, d3);
  }
  for (int i = 0; i < 4; ++i) {
    const __m512 d0 = d[i][0], d1 = d[i][1], d2 = d[i][2], d3 = d[i][3];
    d[i][0] = _mm512_sub_ps(d0, d2);
    d[i][1] = _mm512_add_ps(d1, d2);
    d[i][2] = _mm512_sub_ps(d2, d1);
    d[i][3] = _mm512_sub_ps(d1, d3);
  }
}

#pragma GCC diagnostic pop

// F(2x2, 3x3)'s weight transform G g G^T for one 3x3 filter: 16 values, row-major.
std::array<float, 16> weight_transform(const float* g) {
  // G = [[1, 0, 0], [1/2, 1/2, 1/2], [1/2, -1/2, 1/2], [0, 0, 1]]
  const float G[4][3] = {{1.f, 0.f, 0.f}, {.5f, .5f, .5f}, {.5f, -.5f, .5f}, {0.f, 0.f, 1.f}};
  float t[4][3];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) t[i][j] = G[i][0] * g[0 * 3 + j] + G[i][1] * g[1 * 3 + j] + G[i][2] * g[2 * 3 + j];
  std::array<float, 16> u;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) u[i * 4 + j] = t[i][0] * G[j][0] + t[i][1] * G[j][1] + t[i][2] * G[j][2];
  return u;
}

}  // namespace

WinogradConv::WinogradConv(const WinogradShape& s, const float* weights, const float* bias, ops::Activation act,
                           int threads, int64_t min_block_tiles)
    : s_(s), act_(act), threads_(std::max(1, threads)) {
  if (s.KH != 3 || s.KW != 3) throw Error("winograd conv: 3x3 kernels only");
  C16_ = round16(s.C);
  OC16_ = round16(s.OC);
  const int64_t TW = (s.OW + 1) / 2;
  // Blocks of consecutive tiles (row-major), as many as fit `min_block_tiles` each and a multiple
  // of the threads, so every thread gets the same number of tiles.
  const int64_t tiles = TW * ((s.OH + 1) / 2);
  blocks_ = std::max<int64_t>(1, tiles / std::max<int64_t>(1, min_block_tiles));
  blocks_ = (blocks_ + threads_ - 1) / threads_ * threads_;
  blocks_ = std::min(blocks_, tiles);
  max_block_tiles_ = (tiles + blocks_ - 1) / blocks_;
  // u[pos][block of 64 outputs][C16][width]: each block as the GEMM reads it.
  const size_t floats = static_cast<size_t>(16 * C16_ * OC16_);
  u_ = std::shared_ptr<float>(static_cast<float*>(std::aligned_alloc(64, floats * sizeof(float))), Free());
  if (!u_) throw Error("winograd conv: out of memory transforming the weights");
  std::fill(u_.get(), u_.get() + floats, 0.f);
  for (int64_t oc = 0; oc < s.OC; ++oc)
    for (int64_t c = 0; c < s.C; ++c) {
      const std::array<float, 16> t = weight_transform(weights + (oc * s.C + c) * 9);
      const int64_t n0 = oc / 64 * 64, width = std::min<int64_t>(64, OC16_ - n0);
      for (int p = 0; p < 16; ++p) u_.get()[p * C16_ * OC16_ + n0 * C16_ + c * width + (oc - n0)] = t[p];
    }
  bias_.assign(static_cast<size_t>(OC16_), 0.f);
  if (bias) std::copy(bias, bias + s.OC, bias_.begin());
}

void WinogradConv::Free::operator()(float* p) const { std::free(p); }

size_t WinogradConv::scratch_floats() const {
  return static_cast<size_t>(16 * max_block_tiles_ * (C16_ + OC16_));
}

// GCC 12 warns of the undefined pass-through operand inside its own _mm512_min_ps/_mm512_max_ps.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f"))) void WinogradConv::block(const float* x, float* y, int64_t ldc, int64_t t0,
                                                            int64_t t1, float* v, float* m) const {
  const WinogradShape& s = s_;
  const int64_t TW = (s.OW + 1) / 2, T = t1 - t0;
  // Input transform: v[pos][t][C16].
  for (int64_t tile = t0; tile < t1; ++tile) {
      const int64_t ty = tile / TW, tx = tile % TW;
      const int64_t t = tile - t0, iy0 = 2 * ty - s.PT, ix0 = 2 * tx - s.PL;
      for (int64_t c0 = 0; c0 < C16_; c0 += 16) {
        const __mmask16 mask = static_cast<__mmask16>((1u << std::min<int64_t>(16, s.C - c0)) - 1);
        __m512 d[4][4];
        for (int i = 0; i < 4; ++i) {
          const int64_t iy = iy0 + i;
          for (int j = 0; j < 4; ++j) {
            const int64_t ix = ix0 + j;
            d[i][j] = iy >= 0 && iy < s.H && ix >= 0 && ix < s.W && c0 < s.C
                          ? _mm512_maskz_loadu_ps(mask, x + (iy * s.W + ix) * s.C + c0)
                          : _mm512_setzero_ps();
          }
        }
        input_transform(d);
        for (int p = 0; p < 16; ++p) _mm512_store_ps(v + (p * T + t) * C16_ + c0, d[p / 4][p % 4]);
      }
    }
  // The 16 GEMMs: m[pos][t][OC16] = v[pos][t][:] * u[pos].
  for (int p = 0; p < 16; ++p)
    for (int64_t n0 = 0; n0 < OC16_; n0 += 64) {
      const int64_t nv = std::min<int64_t>(4, (OC16_ - n0) / 16);
      const float* vp = v + p * T * C16_;
      const float* up = u_.get() + p * C16_ * OC16_ + n0 * C16_;
      float* mp = m + p * T * OC16_ + n0;
      switch (nv) {
        case 4: gemm_block<4>(vp, T, C16_, up, mp, OC16_); break;
        case 3: gemm_block<3>(vp, T, C16_, up, mp, OC16_); break;
        case 2: gemm_block<2>(vp, T, C16_, up, mp, OC16_); break;
        default: gemm_block<1>(vp, T, C16_, up, mp, OC16_); break;
      }
    }
  // Output transform A^T m A, A^T = [[1, 1, 1, 0], [0, 1, -1, -1]], then bias and activation.
  const bool in_registers = activation_in_registers(act_);
  const __m512 lo = activation_lo(act_), hi = activation_hi(act_);
  for (int64_t tile = t0; tile < t1; ++tile) {
      const int64_t t = tile - t0, oy = 2 * (tile / TW), ox = 2 * (tile % TW);
      for (int64_t n0 = 0; n0 < OC16_; n0 += 16) {
        const __mmask16 mask = static_cast<__mmask16>((1u << std::min<int64_t>(16, s.OC - n0)) - 1);
        __m512 q[4][2];  // A^T applied to the columns: rows i of m -> 2 rows
        for (int j = 0; j < 4; ++j) {
          const __m512 m0 = _mm512_load_ps(m + ((0 * 4 + j) * T + t) * OC16_ + n0);
          const __m512 m1 = _mm512_load_ps(m + ((1 * 4 + j) * T + t) * OC16_ + n0);
          const __m512 m2 = _mm512_load_ps(m + ((2 * 4 + j) * T + t) * OC16_ + n0);
          const __m512 m3 = _mm512_load_ps(m + ((3 * 4 + j) * T + t) * OC16_ + n0);
          q[j][0] = _mm512_add_ps(_mm512_add_ps(m0, m1), m2);
          q[j][1] = _mm512_sub_ps(_mm512_sub_ps(m1, m2), m3);
        }
        const __m512 b = _mm512_loadu_ps(bias_.data() + n0);
        for (int r = 0; r < 2; ++r) {
          if (oy + r >= s.OH) break;
          const __m512 o0 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(q[0][r], q[1][r]), q[2][r]), b);
          const __m512 o1 = _mm512_add_ps(_mm512_sub_ps(_mm512_sub_ps(q[1][r], q[2][r]), q[3][r]), b);
          float* row = y + ((oy + r) * s.OW + ox) * ldc + n0;
          _mm512_mask_storeu_ps(row, mask, in_registers ? activation_ps(o0, act_.kind, lo, hi) : o0);
          if (ox + 1 < s.OW) _mm512_mask_storeu_ps(row + ldc, mask, in_registers ? activation_ps(o1, act_.kind, lo, hi) : o1);
        }
      }
    }
  if (!in_registers)
    for (int64_t tile = t0; tile < t1; ++tile)
      for (int64_t oy = 2 * (tile / TW); oy < std::min(2 * (tile / TW) + 2, s.OH); ++oy)
        for (int64_t ox = 2 * (tile % TW); ox < std::min(2 * (tile % TW) + 2, s.OW); ++ox)
          apply_activation(act_, y + (oy * s.OW + ox) * ldc, s.OC);
}
#pragma GCC diagnostic pop

void WinogradConv::run(const float* x, float* y, int64_t ldc) const {
  const int64_t tiles = ((s_.OW + 1) / 2) * ((s_.OH + 1) / 2);
  parallel_for(blocks_, threads_, [&](int64_t b0, int64_t b1) {
    float* v = static_cast<float*>(dnnl_util::scratch(scratch_floats() * sizeof(float)));
    float* m = v + 16 * max_block_tiles_ * C16_;
    for (int64_t b = b0; b < b1; ++b) block(x, y, ldc, tiles * b / blocks_, tiles * (b + 1) / blocks_, v, m);
  });
}

namespace {

class WinogradKernel : public Kernel {
 public:
  WinogradKernel(WinogradConv conv, int64_t images, int64_t ldc) : conv_(std::move(conv)), images_(images), ldc_(ldc) {}
  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const WinogradShape& s = conv_.shape();
    const float* x = inputs[0]->data<float>();
    float* y = static_cast<float*>(outputs[0]->raw());
    for (int64_t i = 0; i < images_; ++i) conv_.run(x + i * s.H * s.W * s.C, y + i * s.OH * s.OW * ldc_, ldc_);
  }

 private:
  WinogradConv conv_;
  int64_t images_, ldc_;
};

}  // namespace

std::unique_ptr<Kernel> make_kiln_winograd(const ir::Node& node, int threads, int64_t out_channels_total) {
  if (!kHasAvx512 || node.domain() != "kiln" || node.op_type() != "FusedConv") return nullptr;
  if (!node.attr_int("channels_last", 0) || node.attr_int("x_blocked", 0) || node.attr_int("y_blocked", 0))
    return nullptr;
  if (node.num_inputs() < 2 || node.num_outputs() != 1 || node.attr_int("group", 1) != 1) return nullptr;
  for (int i = 3; i < node.num_inputs(); ++i)  // a residual Z or channel scale S
    if (node.input(i)) return nullptr;
  const ir::Value *x = node.input(0), *w = node.input(1), *y = node.output(0);
  const ir::Value* b = node.num_inputs() > 2 ? node.input(2) : nullptr;
  if (!dnnl_util::static_float(x) || !dnnl_util::static_float(w) || !dnnl_util::static_float(y)) return nullptr;
  if (!w->is_constant() || (b && (!b->is_constant() || !dnnl_util::static_float(b)))) return nullptr;
  if (node.attr_string("auto_pad", "NOTSET") != "NOTSET") return nullptr;
  if (node.attr_ints("strides", {1, 1}) != std::vector<int64_t>{1, 1} ||
      node.attr_ints("dilations", {1, 1}) != std::vector<int64_t>{1, 1})
    return nullptr;
  const auto xd = x->type.static_dims(), wd = w->type.static_dims(), yd = y->type.static_dims();
  if (xd.size() != 4 || wd.size() != 4 || yd.size() != 4 || wd[2] != 3 || wd[3] != 3 || xd[0] != yd[0]) return nullptr;
  const auto pads = node.attr_ints("pads", {0, 0, 0, 0});
  if (pads.size() != 4 || wd[1] != xd[3] || wd[0] != yd[3]) return nullptr;
  WinogradShape s{xd[1], xd[2], xd[3], yd[1], yd[2], yd[3], 3, 3, pads[0], pads[1]};
  if (s.H + pads[0] + pads[2] - 2 != s.OH || s.W + pads[1] + pads[3] - 2 != s.OW || s.OH < 1 || s.OW < 1) return nullptr;
  if (b && b->type.static_dims() != std::vector<int64_t>{s.OC}) return nullptr;
  const std::optional<ops::Activation> act = epilogue_of(node);
  if (!act) return nullptr;
  const int64_t ldc = out_channels_total > 0 ? out_channels_total : s.OC;
  WinogradConv conv(s, w->constant().data<float>(), b ? b->constant().data<float>() : nullptr, *act, threads);
  return std::make_unique<WinogradKernel>(std::move(conv), xd[0], ldc);
}

void add_kiln_winograd_kernels(std::vector<KernelFactory>& table) {
  table.push_back({"kiln", "FusedConv", [](const ir::Node& n, int t) { return make_kiln_winograd(n, t); },
                   "kiln_winograd"});
}

}  // namespace kiln::backends::cpu
