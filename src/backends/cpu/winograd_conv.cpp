// kiln's Winograd convolution on channels-last activations, F(4x4, 3x3) (F(2x2, 3x3) on images
// under 20 pixels a side), for 3x3 stride-1 dense convs with few input channels (squeezenet1_1's
// expand convs: 16-64 channels), where oneDNN 2.6's Winograd (on nChw16c, with its reorders)
// gains little over its direct conv. Each (N+2)x(N+2) input tile becomes (N+2)^2
// transformed channel vectors (B^T d B), each position is a small GEMM against the transformed
// weights (G g G^T, made at creation), and each result becomes an NxN output tile (A^T m A) with
// bias and activation applied before the store: 36 multiplies per 16 outputs instead of 144. The image
// goes by blocks of tile rows (about 24 tiles or more, the GEMMs' rows), so a block's transformed
// input and products stay in L2; threads split the blocks. The output may be a channel slice
// of a wider tensor (`ldc`), which kiln.ConvConcat uses to write squeezenet's fire outputs in
// place.
#include "backends/cpu/winograd_conv.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <optional>
#include <utility>

#include "backends/cpu/activation_apply.h"
#include "backends/cpu/avx512_activation.h"
#include "backends/cpu/cache_size.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/onednn_common.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/simd.h"
#include "ops/core/conv_geometry.h"

namespace kiln::backends::cpu {

namespace {

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// Where a GEMM tile sends the next weight panel toward L2 while it computes: `lines` cache
// lines from `at`, spread over the steps of its depth loop.
struct PanelPrefetch {
  const char* at = nullptr;
  int64_t lines = 0;
};

// m[R rows][NV * 16] = v[R rows][K] * u ([K][NV * 16]), rows `K` floats apart in v and `ldm`
// in m.
template <int R, int NV>
__attribute__((target("avx512f"), always_inline)) inline void gemm_tile_inline(const float* __restrict v, int64_t K,
                                                           const float* __restrict u, float* __restrict m,
                                                           int64_t ldm, PanelPrefetch pf = {}) {
  constexpr int W = NV * 16;
  __m512 acc[R][NV];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) acc[r][j] = _mm512_setzero_ps();
  auto step = [&](int64_t k) __attribute__((target("avx512f"), always_inline)) {
    __m512 b[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) b[j] = _mm512_load_ps(u + k * W + 16 * j);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(v[r * K + k]);
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) acc[r][j] = _mm512_fmadd_ps(a, b[j], acc[r][j]);
    }
  };
  // One line a step over the first steps, or, where the lines outnumber the steps, lines / K a
  // step spread evenly over all of them: at a steady rate the requests overlap the FMAs; in
  // bursts (two lines a step, then none) they fill the core's miss buffers and the panel's own
  // loads wait behind them. The steps after carry no prefetch test.
  const int64_t steps = std::min(K, pf.lines);
  const char* line = pf.at;
  int64_t k = 0;
  for (int64_t owed = 0; k < steps; ++k) {
    for (owed += pf.lines; owed >= steps; owed -= steps, line += 64) _mm_prefetch(line, _MM_HINT_T1);
    step(k);
  }
  for (; k < K; ++k) step(k);
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) _mm512_store_ps(m + r * ldm + 16 * j, acc[r][j]);
}

template <int R, int NV>
__attribute__((target("avx512f"), noinline)) void gemm_tile(const float* v, int64_t K, const float* u, float* m,
                                                           int64_t ldm, PanelPrefetch pf) {
  gemm_tile_inline<R, NV>(v, K, u, m, ldm, pf);
}

template <int NV>
constexpr int kRows = NV == 4 ? 6 : NV == 3 ? 8 : NV == 2 ? 12 : 14;

template <int NV>
using GemmFn = void (*)(const float*, int64_t, const float*, float*, int64_t, PanelPrefetch);

template <int NV, int... Rs>
constexpr std::array<GemmFn<NV>, sizeof...(Rs)> gemms_of(std::integer_sequence<int, Rs...>) {
  return {&gemm_tile<Rs + 1, NV>...};
}
template <int NV>
constexpr auto kGemms = gemms_of<NV>(std::make_integer_sequence<int, kRows<NV>>{});

// m[t][n0, n0 + NV * 16) for tiles t in [0, T) of one position. `next`, when given, is the
// weight panel the following call reads (`next_bytes`): the row tiles fetch it toward L2 a
// share each, so that memory streams the weights while the tiles after the first compute
// from the panel L2 already holds, instead of each panel's first tile waiting on memory.
template <int NV>
__attribute__((target("avx512f"))) void gemm_block(const float* v, int64_t T, int64_t K, const float* u, float* m,
                                                   int64_t ldm, const float* next = nullptr, int64_t next_bytes = 0) {
  // Tiles of equal height, as in pointwise_conv.cpp: no one-row tile at the end.
  const int64_t tiles = (T + kRows<NV> - 1) / kRows<NV>;
  const int64_t next_lines = next ? (next_bytes + 63) / 64 : 0;
  for (int64_t i = 0; i < tiles; ++i) {
    const int64_t t = T * i / tiles, rows = T * (i + 1) / tiles - t;
    PanelPrefetch pf;
    if (next_lines > 0) {
      const int64_t l0 = next_lines * i / tiles, l1 = next_lines * (i + 1) / tiles;
      pf = {reinterpret_cast<const char*>(next) + l0 * 64, l1 - l0};
    }
    if (rows == kRows<NV>) gemm_tile_inline<kRows<NV>, NV>(v + t * K, K, u, m + t * ldm, ldm, pf);
    else kGemms<NV>[rows - 1](v + t * K, K, u, m + t * ldm, ldm, pf);
  }
}

// The 1-D transforms of F(N, 3), on A = N + 2 channel vectors at stride `st`: the input's
// B^T d and the output's A^T m (N values). N = 2 interpolates at 0 and +-1; N = 4 at 0, -1, 1,
// 1/2 and -2 (with the point at infinity both): products of the same size as at 0, +-1, +-2,
// and in float about half the rounding error (Barabasz et al., "Error analysis and improving the
// accuracy of Winograd convolution for deep neural networks"; on random 256-channel tiles the
// largest error 1.9e-4 against 5.4e-4).
template <int N>
__attribute__((target("avx512f"), always_inline)) inline void input_1d(__m512* d, int st) {
  if constexpr (N == 2) {
    const __m512 d0 = d[0], d1 = d[st], d2 = d[2 * st], d3 = d[3 * st];
    d[0] = _mm512_sub_ps(d0, d2);
    d[st] = _mm512_add_ps(d1, d2);
    d[2 * st] = _mm512_sub_ps(d2, d1);
    d[3 * st] = _mm512_sub_ps(d1, d3);
  } else {
    // B^T = [[1, -3/2, -2, 3/2, 1, 0], [0, 1, -5/2, 1/2, 1, 0], [0, -1, 1/2, 5/2, 1, 0],
    //        [0, -2, -1, 2, 1, 0], [0, 1/2, -1, -1/2, 1, 0], [0, 1, -3/2, -2, 3/2, 1]]
    const __m512 d0 = d[0], d1 = d[st], d2 = d[2 * st], d3 = d[3 * st], d4 = d[4 * st], d5 = d[5 * st];
    const __m512 half = _mm512_set1_ps(.5f), three_halves = _mm512_set1_ps(1.5f), two = _mm512_set1_ps(2.f),
                 five_halves = _mm512_set1_ps(2.5f);
    const __m512 e = _mm512_sub_ps(d3, d1), c = _mm512_sub_ps(d4, d2);
    d[0] = _mm512_fmadd_ps(three_halves, e, _mm512_fnmadd_ps(two, d2, _mm512_add_ps(d0, d4)));
    d[st] = _mm512_fmadd_ps(half, d3, _mm512_fnmadd_ps(five_halves, d2, _mm512_add_ps(d4, d1)));
    d[2 * st] = _mm512_fmadd_ps(five_halves, d3, _mm512_fmadd_ps(half, d2, _mm512_sub_ps(d4, d1)));
    d[3 * st] = _mm512_fmadd_ps(two, e, c);
    d[4 * st] = _mm512_fnmadd_ps(half, e, c);
    d[5 * st] = _mm512_fmadd_ps(three_halves, c, _mm512_fnmadd_ps(two, d3, _mm512_add_ps(d5, d1)));
  }
}

template <int N>
__attribute__((target("avx512f"), always_inline)) inline void output_1d(const __m512* m, int st, __m512* o) {
  if constexpr (N == 2) {
    o[0] = _mm512_add_ps(_mm512_add_ps(m[0], m[st]), m[2 * st]);
    o[1] = _mm512_sub_ps(_mm512_sub_ps(m[st], m[2 * st]), m[3 * st]);
  } else {
    // A^T = [[1, 1, 1, 1, 1, 0], [0, -1, 1, 1/2, -2, 0], [0, 1, 1, 1/4, 4, 0], [0, -1, 1, 1/8, -8, 1]]
    const __m512 s = _mm512_add_ps(m[st], m[2 * st]), d = _mm512_sub_ps(m[2 * st], m[st]);
    const __m512 m3 = m[3 * st], m4 = m[4 * st];
    o[0] = _mm512_add_ps(_mm512_add_ps(m[0], s), _mm512_add_ps(m3, m4));
    o[1] = _mm512_fmadd_ps(_mm512_set1_ps(.5f), m3, _mm512_fnmadd_ps(_mm512_set1_ps(2.f), m4, d));
    o[2] = _mm512_fmadd_ps(_mm512_set1_ps(.25f), m3, _mm512_fmadd_ps(_mm512_set1_ps(4.f), m4, s));
    o[3] = _mm512_fmadd_ps(_mm512_set1_ps(.125f), m3,
                           _mm512_fnmadd_ps(_mm512_set1_ps(8.f), m4, _mm512_add_ps(d, m[5 * st])));
  }
}

#pragma GCC diagnostic pop

// F(N x N, 3x3)'s weight transform G g G^T for one 3x3 filter: (N + 2)^2 values, row-major.
std::vector<float> weight_transform(const float* g, int n) {
  static const double G2[4][3] = {{1., 0., 0.}, {.5, .5, .5}, {.5, -.5, .5}, {0., 0., 1.}};
  // Row j: (p^0, p^1, p^2) / prod over the other finite points q of (p - q), at the points
  // p = 0, -1, 1, 1/2, -2; the last row is the point at infinity's.
  static const double G4[6][3] = {{1., 0., 0.},
                                  {-1. / 3, 1. / 3, -1. / 3},
                                  {1. / 3, 1. / 3, 1. / 3},
                                  {-16. / 15, -8. / 15, -4. / 15},
                                  {1. / 15, -2. / 15, 4. / 15},
                                  {0., 0., 1.}};
  const int a = n + 2;
  auto G = [&](int i, int j) { return n == 2 ? G2[i][j] : G4[i][j]; };
  std::vector<double> t(static_cast<size_t>(a * 3));
  for (int i = 0; i < a; ++i)
    for (int j = 0; j < 3; ++j) t[i * 3 + j] = G(i, 0) * g[0 * 3 + j] + G(i, 1) * g[1 * 3 + j] + G(i, 2) * g[2 * 3 + j];
  std::vector<float> u(static_cast<size_t>(a * a));
  for (int i = 0; i < a; ++i)
    for (int j = 0; j < a; ++j)
      u[i * a + j] = static_cast<float>(t[i * 3 + 0] * G(j, 0) + t[i * 3 + 1] * G(j, 1) + t[i * 3 + 2] * G(j, 2));
  return u;
}

}  // namespace

WinogradConv::WinogradConv(const WinogradShape& s, const float* weights, const float* bias, ops::Activation act,
                           int threads, int tile, int64_t min_block_tiles, bool split_outputs)
    : s_(s), act_(act), threads_(std::max(1, threads)), split_outputs_(split_outputs && threads > 1), n_(tile) {
  if (s.KH != 3 || s.KW != 3) throw Error("winograd conv: 3x3 kernels only");
  if (n_ != 2 && n_ != 4) throw Error("winograd conv: output tiles of 2x2 or 4x4 only");
  positions_ = (n_ + 2) * (n_ + 2);
  C16_ = round16(s.C);
  OC16_ = round16(s.OC);
  tiles_w_ = (s.OW + n_ - 1) / n_;
  tiles_ = tiles_w_ * ((s.OH + n_ - 1) / n_);
  // Blocks of consecutive tiles (row-major), as many as fit `min_block_tiles` each and a multiple
  // of the threads, so every thread gets the same number of tiles.
  blocks_ = std::max<int64_t>(1, tiles_ / std::max<int64_t>(1, min_block_tiles));
  if (!split_outputs_) blocks_ = (blocks_ + threads_ - 1) / threads_ * threads_;
  blocks_ = std::min(blocks_, tiles_);
  max_block_tiles_ = (tiles_ + blocks_ - 1) / blocks_;
  // u[pos][block of 64 outputs][C16][width]: each block as the GEMM reads it.
  const size_t floats = static_cast<size_t>(positions_ * C16_ * OC16_);
  u_ = packed_floats(floats, "kiln_winograd/F" + std::to_string(n_), [&](float* u) {
    for (int64_t oc = 0; oc < s.OC; ++oc)
      for (int64_t c = 0; c < s.C; ++c) {
        const std::vector<float> t = weight_transform(weights + (oc * s.C + c) * 9, n_);
        const int64_t n0 = oc / 64 * 64, width = std::min<int64_t>(64, OC16_ - n0);
        for (int p = 0; p < positions_; ++p) u[p * C16_ * OC16_ + n0 * C16_ + c * width + (oc - n0)] = t[p];
      }
  });
  bias_.assign(static_cast<size_t>(OC16_), 0.f);
  if (bias) std::copy(bias, bias + s.OC, bias_.begin());
}

size_t WinogradConv::scratch_floats() const {
  return static_cast<size_t>(positions_ * max_block_tiles_ * (C16_ + OC16_));
}

// GCC 12 warns of the undefined pass-through operand inside its own _mm512_min_ps/_mm512_max_ps.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
template <int N>
__attribute__((target("avx512f"))) void WinogradConv::block(const float* x, float* y, int64_t ldc, const float* z,
                                                            int64_t t0, int64_t t1, float* v, float* m,
                                                            int64_t n_begin, int64_t n_end) const {
  constexpr int A = N + 2, P = A * A;
  const WinogradShape& s = s_;
  const int64_t TW = tiles_w_, T = t1 - t0;
  // Input transform: v[pos][t][C16].
  for (int64_t tile = t0; tile < t1; ++tile) {
    const int64_t t = tile - t0, iy0 = N * (tile / TW) - s.PT, ix0 = N * (tile % TW) - s.PL;
    for (int64_t c0 = 0; c0 < C16_; c0 += 16) {
      const __mmask16 mask = static_cast<__mmask16>((1u << std::min<int64_t>(16, s.C - c0)) - 1);
      __m512 d[P];
      for (int i = 0; i < A; ++i) {
        const int64_t iy = iy0 + i;
        for (int j = 0; j < A; ++j) {
          const int64_t ix = ix0 + j;
          d[i * A + j] = iy >= 0 && iy < s.H && ix >= 0 && ix < s.W
                             ? _mm512_maskz_loadu_ps(mask, x + (iy * s.W + ix) * s.C + c0)
                             : _mm512_setzero_ps();
        }
      }
      for (int j = 0; j < A; ++j) input_1d<N>(d + j, A);      // B^T d: down each column
      for (int i = 0; i < A; ++i) input_1d<N>(d + i * A, 1);  // (B^T d) B: along each row
      for (int p = 0; p < P; ++p) _mm512_store_ps(v + (p * T + t) * C16_ + c0, d[p]);
    }
  }
  // The GEMMs, one per position: m[pos][t][OC16] = v[pos][t][:] * u[pos]. Each reads panels of
  // the weights, 64 outputs wide, in the order they lie in u (outputs within a position), and
  // fetches the next one as it goes (gemm_block): at the conv's start the weights come from
  // beyond the L2 even where a thread's share would fit it, since the network's other layers ran
  // since the last run (a block of 25 tiles on a 10x10 image reads each panel once).
  auto panel = [&](int p, int64_t n0) { return u_.get() + p * C16_ * OC16_ + n0 * C16_; };
  auto width = [&](int64_t n0) { return std::min<int64_t>(64, OC16_ - n0); };
  for (int p = 0; p < P; ++p)
    for (int64_t n0 = n_begin; n0 < n_end; n0 += 64) {
      const int64_t nv = width(n0) / 16;
      const float* vp = v + p * T * C16_;
      const float* up = panel(p, n0);
      float* mp = m + p * T * OC16_ + n0;
      const float* next = nullptr;
      int64_t next_bytes = 0;
      if (n0 + 64 < n_end) next = panel(p, n0 + 64), next_bytes = C16_ * width(n0 + 64) * 4;
      else if (p + 1 < P) next = panel(p + 1, n_begin), next_bytes = C16_ * width(n_begin) * 4;
      switch (nv) {
        case 4: gemm_block<4>(vp, T, C16_, up, mp, OC16_, next, next_bytes); break;
        case 3: gemm_block<3>(vp, T, C16_, up, mp, OC16_, next, next_bytes); break;
        case 2: gemm_block<2>(vp, T, C16_, up, mp, OC16_, next, next_bytes); break;
        default: gemm_block<1>(vp, T, C16_, up, mp, OC16_, next, next_bytes); break;
      }
    }
  // Output transform A^T m A, then bias and activation, stored where the tile is in the image.
  const bool in_registers = activation_in_registers(act_);
  const __m512 lo = activation_lo(act_), hi = activation_hi(act_);
  for (int64_t tile = t0; tile < t1; ++tile) {
    const int64_t t = tile - t0, oy = N * (tile / TW), ox = N * (tile % TW);
    const int rows = static_cast<int>(std::min<int64_t>(N, s.OH - oy)), cols = static_cast<int>(std::min<int64_t>(N, s.OW - ox));
    for (int64_t n0 = n_begin; n0 < n_end; n0 += 16) {
      const __mmask16 mask = static_cast<__mmask16>((1u << std::min<int64_t>(16, s.OC - n0)) - 1);
      __m512 mv[P], q[N * A], o[N];
      for (int p = 0; p < P; ++p) mv[p] = _mm512_load_ps(m + (p * T + t) * OC16_ + n0);
      for (int j = 0; j < A; ++j) {  // A^T m: down each column, N rows of A
        __m512 col[N];
        output_1d<N>(mv + j, A, col);
        for (int r = 0; r < N; ++r) q[r * A + j] = col[r];
      }
      const __m512 b = _mm512_loadu_ps(bias_.data() + n0);
      for (int r = 0; r < rows; ++r) {
        output_1d<N>(q + r * A, 1, o);  // (A^T m) A: along the row
        float* out = y + ((oy + r) * s.OW + ox) * ldc + n0;
        const float* res = z ? z + ((oy + r) * s.OW + ox) * s.OC + n0 : nullptr;
        for (int c = 0; c < cols; ++c) {
          __m512 sum = _mm512_add_ps(o[c], b);
          if (res) sum = _mm512_add_ps(sum, _mm512_maskz_loadu_ps(mask, res + c * s.OC));
          _mm512_mask_storeu_ps(out + c * ldc, mask, in_registers ? activation_ps(sum, act_.kind, lo, hi) : sum);
        }
      }
    }
  }
  if (!in_registers)
    for (int64_t tile = t0; tile < t1; ++tile)
      for (int64_t oy = N * (tile / TW); oy < std::min(N * (tile / TW) + N, s.OH); ++oy)
        for (int64_t ox = N * (tile % TW); ox < std::min(N * (tile % TW) + N, s.OW); ++ox)
          apply_activation(act_, y + (oy * s.OW + ox) * ldc + n_begin, std::min(n_end, s.OC) - n_begin);
}
#pragma GCC diagnostic pop

void WinogradConv::run(const float* x, float* y, int64_t ldc, const float* z) const {
  // Blocks [b0, b1) of tiles, outputs [n0, n1).
  auto blocks = [&](int64_t b0, int64_t b1, int64_t n0, int64_t n1) {
    float* v = static_cast<float*>(dnnl_util::scratch(scratch_floats() * sizeof(float)));
    float* m = v + positions_ * max_block_tiles_ * C16_;
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t t0 = tiles_ * b / blocks_, t1 = tiles_ * (b + 1) / blocks_;
      if (n_ == 4) block<4>(x, y, ldc, z, t0, t1, v, m, n0, n1);
      else block<2>(x, y, ldc, z, t0, t1, v, m, n0, n1);
    }
  };
  if (split_outputs_) {
    parallel_for((OC16_ + 63) / 64, threads_,
                 [&](int64_t q0, int64_t q1) { blocks(0, blocks_, q0 * 64, std::min(q1 * 64, OC16_)); });
  } else {
    parallel_for(blocks_, threads_, [&](int64_t b0, int64_t b1) { blocks(b0, b1, 0, OC16_); });
  }
}

int64_t winograd_block_tiles(const WinogradShape& s, int tile, int threads) {
  const double positions = (tile + 2.0) * (tile + 2), l2 = static_cast<double>(l2_cache_bytes());
  const double weights = positions * round16(s.C) * round16(s.OC) * sizeof(float);
  if (weights <= l2 / 2) return kWinogradBlockTiles;
  // The L2 less the panels of weights in flight (the one the GEMMs read, the next one
  // prefetched: 64 outputs of every input channel), over a tile's transformed input and
  // products.
  const double room = l2 - 2.0 * round16(s.C) * 64 * sizeof(float);
  const int64_t fit = static_cast<int64_t>(room / (positions * (round16(s.C) + round16(s.OC)) * sizeof(float)));
  if (fit <= kWinogradBlockTiles) return kWinogradBlockTiles;
  const int64_t tiles = ((s.OH + tile - 1) / tile) * ((s.OW + tile - 1) / tile);
  const int64_t per_thread = (tiles + threads - 1) / std::max(1, threads);
  // The fewest blocks of at most `fit` tiles for each thread's share, as a block size that
  // WinogradConv's floor(tiles / block_tiles) blocks come back to.
  const int64_t blocks = (per_thread + fit - 1) / fit;
  return std::max<int64_t>(kWinogradBlockTiles, per_thread / blocks);
}

std::string winograd_split(const WinogradShape& s, int tile, int threads, int64_t block_tiles) {
  const int64_t blocks = (round16(s.OC) + 63) / 64;
  if (threads < 2 || blocks % threads != 0) return "tiles";
  // Weights a core's L2 holds come from it for every block after the first either way.
  const double weights = (tile + 2.0) * (tile + 2) * round16(s.C) * round16(s.OC) * sizeof(float);
  if (weights <= static_cast<double>(l2_cache_bytes())) return "tiles";
  // Otherwise a thread reads the weights once per block of tiles it does: by tiles, all of them
  // for each of its share of the blocks; by outputs, its part of them for every block, and the
  // whole input besides, and every thread transforms the whole input. Splitting the outputs pays
  // only where the tiles make fewer blocks than threads (a small image): where every thread gets
  // a block of its own, the weights' reads overlap the block's GEMMs and the doubled input
  // transform is the larger cost (make kernel-bench, Winograd_*: by tiles faster on every such
  // shape).
  // A thread's share of the tiles is a block of its own where it holds `block_tiles` of them
  // (winograd_block_tiles sizes blocks larger than kWinogradBlockTiles to a thread's share, and
  // WinogradConv gives every thread as many blocks).
  const int64_t tiles = ((s.OH + tile - 1) / tile) * ((s.OW + tile - 1) / tile);
  if ((tiles + threads - 1) / threads >= block_tiles) return "tiles";
  const int64_t image_blocks = std::max<int64_t>(1, tiles / std::max<int64_t>(1, block_tiles));
  const double by_tiles = weights * static_cast<double>((image_blocks + threads - 1) / threads);
  const double by_outputs = weights / threads * static_cast<double>(image_blocks);
  const double input = static_cast<double>(s.H) * s.W * s.C * sizeof(float);
  return by_tiles - by_outputs > input ? "outputs" : "tiles";
}

namespace {

// 4x4 tiles from 20 pixels a side: below that their edge tiles waste a third of the work
// (13x13: 34%) and F(2x2, 3x3) is the faster form (docs/performance.md).
int rule_tile(int64_t OH, int64_t OW) { return std::min(OH, OW) >= 20 ? 4 : 2; }

class WinogradKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  // The output transform reads each residual element just before it stores that output.
  bool writes_over(int input) const override { return input == 3 && ldc_ == conv_.shape().OC; }
  WinogradKernel(WinogradConv conv, int64_t images, int64_t ldc) : conv_(std::move(conv)), images_(images), ldc_(ldc) {}
  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const WinogradShape& s = conv_.shape();
    const float* x = inputs[0]->data<float>();
    float* y = static_cast<float*>(outputs[0]->raw());
    const float* z = inputs.size() > 3 && inputs[3] ? inputs[3]->data<float>() : nullptr;
    const int64_t out_pixels = s.OH * s.OW;
    for (int64_t i = 0; i < images_; ++i)
      conv_.run(x + i * s.H * s.W * s.C, y + i * out_pixels * ldc_, ldc_, z ? z + i * out_pixels * s.OC : nullptr);
  }

 private:
  WinogradConv conv_;
  int64_t images_, ldc_;
};

}  // namespace

bool winograd_pays(const WinogradShape& s) {
  const int n = rule_tile(s.OH, s.OW);
  // The costs of winograd_conv.h. The transforms' own cost is left out, which can only favour
  // Winograd: large images, where it matters, take Winograd anyway.
  const double C = static_cast<double>(s.C), OC = static_cast<double>(s.OC), positions = (n + 2.0) * (n + 2.0);
  const double tiles = static_cast<double>((s.OH + n - 1) / n) * static_cast<double>((s.OW + n - 1) / n);
  // The transforms work on 16-lane channel vectors and the products' depth is the channels
  // padded to 16: on a few-channel image (a 3-channel input) the (n + 2)^2 / n^2 products per
  // output over 16 lanes outnumber the direct conv's 9 per channel, whatever the call costs.
  if ((n + 2) * (n + 2) * round16(s.C) >= 9 * n * n * s.C) return false;
  const double winograd = tiles * positions * static_cast<double>(round16(s.C)) * OC +
                          kWinogradWeightByteCost * positions * C * OC * sizeof(float);
  const double direct = static_cast<double>(s.OH) * static_cast<double>(s.OW) * 9 * C * OC +
                        kDirectWeightByteCost * 9 * C * OC * sizeof(float) + kOnednnCallCost;
  return winograd < direct;
}

bool winograd_pays(const ir::Node& node) {
  if (node.num_inputs() < 2 || node.num_outputs() < 1) return false;
  const ir::Value *x = node.input(0), *w = node.input(1), *y = node.output(0);
  if (!x || !w || !y || !x->type.is_static() || !w->type.is_static() || !y->type.is_static()) return false;
  const auto xd = x->type.static_dims(), wd = w->type.static_dims(), yd = y->type.static_dims();
  if (xd.size() != 4 || wd.size() != 4 || yd.size() != 4 || wd[2] != 3 || wd[3] != 3) return false;
  if (node.attr_int("channels_last", 0)) return winograd_pays({xd[1], xd[2], xd[3], yd[1], yd[2], yd[3]});
  return winograd_pays({xd[2], xd[3], xd[1], yd[2], yd[3], yd[1]});
}

std::map<std::string, plan::ParamValue> winograd_params(const ir::Node& node, int threads) {
  const ir::Value* y = node.num_outputs() == 1 ? node.output(0) : nullptr;
  const ir::Value* x = node.num_inputs() > 0 ? node.input(0) : nullptr;
  if (!y || !y->type.is_static() || y->type.rank() != 4) return {};
  if (!x || !x->type.is_static() || x->type.rank() != 4) return {};
  const auto yd = y->type.static_dims(), xd = x->type.static_dims();
  const int tile = rule_tile(yd[1], yd[2]);
  WinogradShape s{xd[1], xd[2], xd[3], yd[1], yd[2], yd[3]};
  const int64_t block_tiles = winograd_block_tiles(s, tile, threads);
  return {{"tile", int64_t{tile}}, {"block_tiles", block_tiles}, {"split", winograd_split(s, tile, threads, block_tiles)}};
}

namespace {

// The conv's shape when kiln's Winograd takes the node, else nothing.
std::optional<WinogradShape> winograd_shape(const ir::Node& node) {
  if (!has_avx512() || node.domain() != "kiln" || node.op_type() != "FusedConv") return std::nullopt;
  if (!node.attr_int("channels_last", 0) || node.attr_int("x_blocked", 0) || node.attr_int("y_blocked", 0) ||
      node.attr_int("z_blocked", 0))
    return std::nullopt;
  if (node.num_inputs() < 2 || node.num_outputs() != 1 || node.attr_int("group", 1) != 1) return std::nullopt;
  if (node.num_inputs() > 4 && node.input(4)) return std::nullopt;  // a channel scale S
  const ir::Value *x = node.input(0), *w = node.input(1), *y = node.output(0);
  const ir::Value* b = node.num_inputs() > 2 ? node.input(2) : nullptr;
  const ir::Value* z = node.num_inputs() > 3 ? node.input(3) : nullptr;
  if (!dnnl_util::static_float(x) || !dnnl_util::static_float(w) || !dnnl_util::static_float(y)) return std::nullopt;
  if (!w->is_constant() || (b && (!b->is_constant() || !dnnl_util::static_float(b)))) return std::nullopt;
  if (z && (!dnnl_util::static_float(z) || z->type.static_dims() != y->type.static_dims())) return std::nullopt;
  if (ops::auto_pad_of(node) != ops::AutoPad::NotSet) return std::nullopt;
  if (node.attr_ints("strides", {1, 1}) != std::vector<int64_t>{1, 1} ||
      node.attr_ints("dilations", {1, 1}) != std::vector<int64_t>{1, 1})
    return std::nullopt;
  const auto xd = x->type.static_dims(), wd = w->type.static_dims(), yd = y->type.static_dims();
  if (xd.size() != 4 || wd.size() != 4 || yd.size() != 4 || wd[2] != 3 || wd[3] != 3 || xd[0] != yd[0])
    return std::nullopt;
  const auto pads = node.attr_ints("pads", {0, 0, 0, 0});
  if (pads.size() != 4 || wd[1] != xd[3] || wd[0] != yd[3]) return std::nullopt;
  WinogradShape s{xd[1], xd[2], xd[3], yd[1], yd[2], yd[3], 3, 3, pads[0], pads[1]};
  if (s.H + pads[0] + pads[2] - 2 != s.OH || s.W + pads[1] + pads[3] - 2 != s.OW || s.OH < 1 || s.OW < 1)
    return std::nullopt;
  if (b && b->type.static_dims() != std::vector<int64_t>{s.OC}) return std::nullopt;
  if (!epilogue_of(node)) return std::nullopt;
  if (!winograd_pays(s)) return std::nullopt;
  return s;
}

}  // namespace

bool kiln_winograd_accepts(const ir::Node& node) { return winograd_shape(node).has_value(); }

std::unique_ptr<Kernel> make_kiln_winograd(const ir::Node& node, int threads, int64_t out_channels_total, int tile,
                                           int64_t block_tiles, const std::string& split_choice) {
  if (tile == 0 || block_tiles == 0) {
    const auto p = winograd_params(node, threads);
    if (p.empty()) return nullptr;
    if (tile == 0) tile = static_cast<int>(std::get<int64_t>(p.at("tile")));
    if (block_tiles == 0) block_tiles = std::get<int64_t>(p.at("block_tiles"));
  }
  if ((tile != 2 && tile != 4) || block_tiles < 1 || block_tiles > 4096) return nullptr;
  if (!split_choice.empty() && split_choice != "tiles" && split_choice != "outputs") return nullptr;
  const std::optional<WinogradShape> s = winograd_shape(node);
  if (!s) return nullptr;
  const ir::Value* w = node.input(1);
  const ir::Value* b = node.num_inputs() > 2 ? node.input(2) : nullptr;
  const int64_t ldc = out_channels_total > 0 ? out_channels_total : s->OC;
  const std::string split = split_choice.empty() ? winograd_split(*s, tile, threads, block_tiles) : split_choice;
  WinogradConv conv(*s, w->constant().data<float>(), b ? b->constant().data<float>() : nullptr, *epilogue_of(node),
                    threads, tile, block_tiles, split == "outputs");
  return std::make_unique<WinogradKernel>(std::move(conv), node.input(0)->type.static_dims()[0], ldc);
}

void add_kiln_winograd_kernels(std::vector<KernelFactory>& table) {
  table.push_back({.domain = "kiln",
                   .op = "FusedConv",
                   .make = [](const ir::Node& n, int t) { return make_kiln_winograd(n, t); },
                   .name = "kiln_winograd",
                   .choose = [](const ir::Node& n, int threads) { return winograd_params(n, threads); },
                   .make_spec =
                       [](const ir::Node& n, const plan::KernelSpec& s) -> std::unique_ptr<Kernel> {
                     if (!s.params.count("tile") || !s.params.count("block_tiles")) return nullptr;
                     // Plans written before the split was a parameter split the tiles.
                     const std::string split = s.params.count("split") ? s.get_string("split") : "tiles";
                     return make_kiln_winograd(n, s.threads, 0, static_cast<int>(s.get_int("tile")),
                                               s.get_int("block_tiles"), split);
                   },
                   .choices = [](const ir::Node&, int threads) -> plan::ParamChoices {
                     plan::ParamChoices c = {{"tile", {int64_t{2}, int64_t{4}}},
                                             {"block_tiles", {int64_t{8}, kWinogradBlockTiles, int64_t{48}}}};
                     if (threads > 1) c["split"] = {std::string("tiles"), std::string("outputs")};
                     return c;
                   }});
}

}  // namespace kiln::backends::cpu
