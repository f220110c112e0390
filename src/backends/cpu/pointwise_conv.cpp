// kiln's 1x1 convolution for few pixels and wide weights: the late layers of mobilenet_v2 and
// efficientnet_b0 (7x7 and 14x14 images, 0.1-1.6 MB of weights each). There the weights come
// from L3 on every run (a model's weights do not fit the L2), and oneDNN 2.6's 1x1 conv pays
// that read on top of its compute. Here the weights are packed at creation in the order the kernel
// reads them (blocks of up to 64 outputs, each [K][width]), the pixels are taken in tiles of up to 14
// rows whose outputs accumulate in registers, and the input channels in ranges (range_depth), so a
// block's weights for one range stay in L1 across all tiles; while the tiles work on a range
// they prefetch the next range into L2, so the weights stream from L3 behind the FMAs
// instead of before them. Bias, residual and activation are applied in registers before the
// store; a channel scale S (efficientnet's squeeze-excitation folded into a project conv)
// multiplies each range's weights once per call, in a thread buffer, or in pair mode each
// weight vector as it is loaded ("kiln_pointwise_scaled"). The prefetch is what puts this kernel
// ahead of oneDNN's on these layers: without it, it is slower (`kiln bench --pair-disable
// kiln_pointwise` measures it; numbers in bench/results/history-code-comments.md).
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>

#include "backends/cpu/activation_apply.h"
#include "backends/cpu/aligned_floats.h"
#include "backends/cpu/avx512_activation.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/onednn_common.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/pointwise_conv.h"
#include "backends/cpu/simd.h"
#include "ops/core/conv_geometry.h"

namespace kiln::backends::cpu {

namespace {

struct Epilogue {
  const float* bias;  // [N rounded up to 16], zero when the node has none
  const float* z;     // residual [M][N] (rows N apart) or nullptr
  const float* s;     // channel scale [K] (FusedConv's S: X * S is convolved) or nullptr
  int64_t N;
  ops::Activation act;
  int64_t depth;  // range_depth()
};

// Loads and stores of a tile's vector v: the last vector of the last block may be partial
// (N not a multiple of 16), so it goes through `tail`, all ones elsewhere.
template <int NV>
__attribute__((target("avx512f"), always_inline)) inline __m512 load_out(const float* p, int v, __mmask16 tail) {
  return v == NV - 1 ? _mm512_maskz_loadu_ps(tail, p) : _mm512_loadu_ps(p);
}
template <int NV>
__attribute__((target("avx512f"), always_inline)) inline void store_out(float* p, int v, __mmask16 tail, __m512 x) {
  if (v == NV - 1) _mm512_mask_storeu_ps(p, tail, x);
  else _mm512_storeu_ps(p, x);
}

// Rows per tile for NV output vectors: R * NV accumulators, NV weight vectors and the broadcast
// input within the 32 registers (7 x 4 spilled one accumulator).
template <int NV>
constexpr int kRows = NV == 4 ? 6 : NV == 3 ? 8 : NV == 2 ? 12 : 14;

// The inputs' channels are taken at most this many at a time for 64 outputs, so that a block's
// weights for them stay in L1 across all tiles of pixels. One thread takes 64 (16 KiB of a
// block's weights, leaving room in a 48 KiB L1 for the tiles' inputs); a team keeps 128, which
// measured faster than 64 at 2 threads (paired, on the shared models; the numbers are in
// bench/results/history-code-comments.md).
constexpr int64_t kMaxRangeDepth = 128;
int64_t range_depth(int threads) { return threads > 1 ? kMaxRangeDepth : 64; }

int64_t round16_(int64_t n) { return (n + 15) / 16 * 16; }
// PointwiseRows::parts() for K x N with or without pair mode.
int64_t parts_of(int64_t N, bool pair) { return pair ? 1 : (round16_(N) / 16 + 3) / 4; }
bool pair_allowed(int64_t K, int64_t N) { return N <= 24 && K <= kPairMaxK; }

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// One input channel k of a tile: acc[r][v] += x[r][k] * w[k][v].
template <int R, int NV>
__attribute__((target("avx512f"), always_inline)) inline void tile_step(__m512 (&acc)[R][NV], const float* xk,
                                                                       const float* wk, int64_t K, int64_t k) {
  __m512 b[NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) b[v] = _mm512_load_ps(wk + k * NV * 16 + 16 * v);
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    const __m512 a = _mm512_set1_ps(xk[r * K + k]);
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(a, b[v], acc[r][v]);
  }
}

// y[R rows][NV * 16 outputs from n0] (+)= x[R rows][k0, k0 + kc) * wk (y's rows `N` floats
// apart: a channel slice of a wider tensor in a kiln.ConvConcat), wk being the range's weights
// [kc][NV * 16] (rows k0 on of the block's), for `count` tiles of R rows one after another. The first range
// of k starts from the bias, the others from the partial sums in y; the last applies the
// residual and the activation. One function per shape (noinline) keeps the k loop's registers
// to itself, and a run of tiles per call spreads its set-up, which a short k loop (few input
// channels) cannot hide.
template <int R, int NV>
__attribute__((target("avx512f"), noinline)) void tile(const float* __restrict x, int64_t K, int64_t k0, int64_t kc,
                                                      const float* __restrict wk, float* __restrict y, int64_t N,
                                                      int64_t n0, const Epilogue& e, int64_t m, int64_t count,
                                                      const char* pf, int64_t pf_per_tile, int64_t pf_left,
                                                      __mmask16 tail) {
  const bool last_range = k0 + kc >= K;
  const __m512 lo = activation_lo(e.act), hi = activation_hi(e.act);
  for (int64_t t = 0; t < count; ++t, x += R * K, y += R * N, m += R, pf += pf_per_tile * 64, pf_left -= pf_per_tile) {
    __m512 acc[R][NV];
    if (k0 == 0) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        const __m512 b = _mm512_loadu_ps(e.bias + n0 + 16 * v);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) acc[r][v] = b;
      }
    } else {
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[r][v] = load_out<NV>(y + r * N + n0 + 16 * v, v, tail);
    }
    const float* xk = x + k0;
    // This tile's share of the next range's weights into L2 (`pf_per_tile` lines from `pf`, of
    // the `pf_left` still to fetch), one line per weight vector loaded over the first steps, so
    // the requests spread over the loop; the steps after carry no prefetch test.
    const int64_t pf_lines = std::min(pf_per_tile, std::max<int64_t>(0, pf_left));
    int64_t k = 0;
    for (; k < kc && k * NV < pf_lines; ++k) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
        if (k * NV + v < pf_lines) _mm_prefetch(pf + (k * NV + v) * 64, _MM_HINT_T1);
      tile_step<R, NV>(acc, xk, wk, K, k);
    }
    for (; k < kc; ++k) tile_step<R, NV>(acc, xk, wk, K, k);
    if (last_range) {
      if (e.z) {
        const float* z = e.z + m * e.N + n0;
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
          for (int v = 0; v < NV; ++v)
            acc[r][v] = _mm512_add_ps(acc[r][v], load_out<NV>(z + r * e.N + 16 * v, v, tail));
      }
      if (e.act.kind != ops::Activation::None) {
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
          for (int v = 0; v < NV; ++v) acc[r][v] = activation_ps(acc[r][v], e.act.kind, lo, hi);
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) store_out<NV>(y + r * N + n0 + 16 * v, v, tail, acc[r][v]);
  }
}

#pragma GCC diagnostic pop

template <int NV>
using TileFn = void (*)(const float*, int64_t, int64_t, int64_t, const float*, float*, int64_t, int64_t,
                        const Epilogue&, int64_t, int64_t, const char*, int64_t, int64_t, __mmask16);

// tile<r, NV> for r in [1, kRows<NV>].
template <int NV, int... Rs>
constexpr std::array<TileFn<NV>, sizeof...(Rs)> tiles_of(std::integer_sequence<int, Rs...>) {
  return {&tile<Rs + 1, NV>...};
}
template <int NV>
constexpr auto kTiles = tiles_of<NV>(std::make_integer_sequence<int, kRows<NV>>{});

// One range's weights w ([kc][width]) with row k times s[k], in this thread's buffer (a range
// holds at most kMaxRangeDepth rows of 64 outputs' weights: column_block).
__attribute__((target("avx512f"))) const float* scaled_range(const float* w, const float* s, int64_t kc,
                                                             int64_t width) {
  alignas(64) static thread_local float buf[kMaxRangeDepth * 64];
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 sk = _mm512_set1_ps(s[k]);
    for (int64_t l = 0; l < width; l += 16)
      _mm512_store_ps(buf + k * width + l, _mm512_mul_ps(_mm512_load_ps(w + k * width + l), sk));
  }
  return buf;
}

// Outputs [n0, n0 + NV * 16) of pixels [m0, m1), from the block's weights w ([K][NV * 16]).
template <int NV>
void column_block(const float* x, int64_t m0, int64_t m1, int64_t K, const float* w, float* y, int64_t N,
                  const Epilogue& e, int64_t n0, __mmask16 tail) {
  // Tiles of equal height (49 rows: 4 of 6 and 5 of 5, not 8 of 6 and 1 of 1): a one-row tile
  // has too few accumulators to hide the FMA latency and costs more than two rows. The taller ones
  // first, each height one run.
  if (m1 <= m0) return;
  const int64_t tiles = (m1 - m0 + kRows<NV> - 1) / kRows<NV>, height = (m1 - m0) / tiles,
                taller = (m1 - m0) % tiles;
  // Ranges of equal depth, each block's weights for a range at most e.depth rows of 64 outputs
  // (twice as deep at 32): with depth 128, 144 input channels on 24 outputs are one range, not
  // 128 and a 16-deep one that reloads every partial sum.
  const int64_t max_depth = e.depth * 4 / NV, ranges = (K + max_depth - 1) / max_depth;
  const auto& fns = kTiles<NV>;
  for (int64_t r = 0; r < ranges; ++r) {
    const int64_t k0 = K * r / ranges, kc = K * (r + 1) / ranges - k0;
    // With a channel scale S (efficientnet's squeeze-excitation folded into a project conv) the
    // range is scaled once into a buffer that all its tiles read, rather than each tile
    // multiplying every weight vector it loads (NV multiplies per R * NV FMAs, on the FMA
    // ports).
    const float* wr = e.s ? scaled_range(w + k0 * NV * 16, e.s + k0, kc, NV * 16) : w + k0 * NV * 16;
    // The next range's weights (the next block's first range after the last), into L2, a
    // share per tile: all from the first tile fills the line fill buffers in bursts and
    // stalls its own loads. One range ahead: two ahead measured slower.
    const char* next = reinterpret_cast<const char*>(w + (k0 + kc) * NV * 16);
    const int64_t lines = kc * NV, per = (lines + tiles - 1) / tiles;
    if (taller)
      fns[height](x + m0 * K, K, k0, kc, wr, y + m0 * N, N, n0, e, m0, taller, next, per, lines, tail);
    const int64_t m = m0 + taller * (height + 1);
    if (tiles > taller)
      fns[height - 1](x + m * K, K, k0, kc, wr, y + m * N, N, n0, e, m, tiles - taller, next + taller * per * 64, per,
                      lines - taller * per, tail);
  }
}

// Pair mode, for at most 24 outputs (the projections to 16 and 24 channels of mobilenet's and
// efficientnet's early blocks): with one output vector per pixel the loop loads a broadcast per
// FMA (16 outputs), or wastes a third of the lanes (24 = 16 + 8). Here each accumulator lane
// holds one output for one parity of k: lane 2i + j sums w[n0 + i][2p + j] * x[2p + j] over the
// pairs p, one 8-byte broadcast of (x[2p], x[2p + 1]) feeding every vector. NVP vectors of 8
// outputs each; the two parities are added and the even lanes gathered before the epilogue.
template <int NVP>
constexpr int kPairRows = NVP == 3 ? 9 : 14;

// GCC 12 warns of the undefined pass-through operand inside its own _mm512_permute_ps and
// _mm512_permutexvar_ps.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

// Pair p of input channels for a pair tile: the last pair of an odd K (Odd) has one input, its
// odd lanes' weights zero.
template <int R, int NVP, bool Scaled, bool Odd>
__attribute__((target("avx512f"), always_inline)) inline void pair_step(__m512 (&acc)[R][NVP], const float* x,
                                                                       int64_t K, const float* w, const float* s,
                                                                       int64_t p) {
  __m512 b[NVP];
#pragma GCC unroll 3
  for (int v = 0; v < NVP; ++v) {
    b[v] = _mm512_load_ps(w + (p * NVP + v) * 16);
    if constexpr (Scaled) {
      double pair;  // s[2p], s[2p + 1] (memcpy: an unaligned 8-byte load)
      if (!Odd) std::memcpy(&pair, s + 2 * p, sizeof pair);
      b[v] = _mm512_mul_ps(b[v], Odd ? _mm512_set1_ps(s[2 * p]) : _mm512_castpd_ps(_mm512_set1_pd(pair)));
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    __m512 a;
    if (Odd) {
      a = _mm512_set1_ps(x[r * K + 2 * p]);
    } else {
      double d;
      std::memcpy(&d, x + r * K + 2 * p, sizeof d);
      a = _mm512_castpd_ps(_mm512_set1_pd(d));
    }
#pragma GCC unroll 3
    for (int v = 0; v < NVP; ++v) acc[r][v] = _mm512_fmadd_ps(a, b[v], acc[r][v]);
  }
}

// `count` pair tiles of R pixels from pixel m, one after another (a run per call, as tile()).
template <int R, int NVP, bool Scaled>
__attribute__((target("avx512f"), noinline)) void pair_tile(const float* __restrict x, int64_t K,
                                                           const float* __restrict w, float* __restrict y,
                                                           int64_t ldy, const Epilogue& e, int64_t m, int64_t count) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512 lo = activation_lo(e.act), hi = activation_hi(e.act);
  constexpr int kOut = (NVP + 1) / 2;  // output vectors of 16
  const int64_t full = K / 2;
  for (int64_t t = 0; t < count; ++t, x += R * K, y += R * ldy, m += R) {
    __m512 acc[R][NVP];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 3
      for (int v = 0; v < NVP; ++v) acc[r][v] = _mm512_setzero_ps();
    for (int64_t p = 0; p < full; ++p) pair_step<R, NVP, Scaled, false>(acc, x, K, w, e.s, p);
    if (K % 2) pair_step<R, NVP, Scaled, true>(acc, x, K, w, e.s, full);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      __m512 sum[NVP];
#pragma GCC unroll 3
      for (int v = 0; v < NVP; ++v) sum[v] = _mm512_add_ps(acc[r][v], _mm512_permute_ps(acc[r][v], 0xB1));
#pragma GCC unroll 2
      for (int j = 0; j < kOut; ++j) {
        __m512 o = 2 * j + 1 < NVP ? _mm512_permutex2var_ps(sum[2 * j], even, sum[std::min(2 * j + 1, NVP - 1)])
                                   : _mm512_permutexvar_ps(even, sum[2 * j]);
        const int64_t n = 16 * j, valid = std::min<int64_t>(16, e.N - n);
        const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1);
        o = _mm512_add_ps(o, _mm512_loadu_ps(e.bias + n));
        if (e.z) o = _mm512_add_ps(o, _mm512_maskz_loadu_ps(mask, e.z + (m + r) * e.N + n));
        if (e.act.kind != ops::Activation::None) o = activation_ps(o, e.act.kind, lo, hi);
        _mm512_mask_storeu_ps(y + r * ldy + n, mask, o);
      }
    }
  }
}

#pragma GCC diagnostic pop

template <int NVP>
using PairFn = void (*)(const float*, int64_t, const float*, float*, int64_t, const Epilogue&, int64_t, int64_t);
template <int NVP, bool Scaled, int... Rs>
constexpr std::array<PairFn<NVP>, sizeof...(Rs)> pair_tiles_of(std::integer_sequence<int, Rs...>) {
  return {&pair_tile<Rs + 1, NVP, Scaled>...};
}
template <int NVP, bool Scaled>
constexpr auto kPairTiles = pair_tiles_of<NVP, Scaled>(std::make_integer_sequence<int, kPairRows<NVP>>{});

template <int NVP>
void pair_rows(const float* x, int64_t m0, int64_t m1, int64_t K, const float* w, float* y, int64_t ldy,
               const Epilogue& e) {
  if (m1 <= m0) return;
  // Tiles of equal height, the taller ones first, each height one run (as column_block).
  const int64_t tiles = (m1 - m0 + kPairRows<NVP> - 1) / kPairRows<NVP>, height = (m1 - m0) / tiles,
                taller = (m1 - m0) % tiles;
  const auto& fns = e.s ? kPairTiles<NVP, true> : kPairTiles<NVP, false>;
  if (taller) fns[height](x + m0 * K, K, w, y + m0 * ldy, ldy, e, m0, taller);
  const int64_t m = m0 + taller * (height + 1);
  if (tiles > taller) fns[height - 1](x + m * K, K, w, y + m * ldy, ldy, e, m, tiles - taller);
}

}  // namespace

PointwiseChoice pointwise_rule(int64_t K, int64_t N, int threads, int64_t split_min_bytes) {
  PointwiseChoice c;
  c.depth = range_depth(threads);
  c.pair = pair_allowed(K, N);
  c.split_outputs = K * N * 4 >= split_min_bytes && parts_of(N, c.pair) >= 2 * std::max(1, threads);
  return c;
}

std::map<std::string, plan::ParamValue> pointwise_params(const PointwiseChoice& c) {
  return {{"depth", c.depth}, {"pair", int64_t{c.pair}}, {"split", std::string(c.split_outputs ? "outputs" : "pixels")}};
}

plan::ParamChoices pointwise_choices(int64_t K, int64_t N, int threads) {
  plan::ParamChoices c;
  using Values = std::vector<plan::ParamValue>;
  c["depth"] = Values{int64_t{32}, int64_t{64}, int64_t{128}};
  c["pair"] = pair_allowed(K, N) ? Values{int64_t{0}, int64_t{1}} : Values{int64_t{0}};
  c["split"] = parts_of(N, false) >= 2 * std::max(1, threads) ? Values{std::string("pixels"), std::string("outputs")}
                                                               : Values{std::string("pixels")};
  return c;
}

std::function<std::map<std::string, plan::ParamValue>(const ir::Node&, int)> pointwise_chooser(PointwiseDimsOf dims_of,
                                                                                               int64_t split_min_bytes) {
  return [=](const ir::Node& n, int t) -> std::map<std::string, plan::ParamValue> {
    const auto kn = dims_of(n);
    return kn ? pointwise_params(pointwise_rule(kn->first, kn->second, t, split_min_bytes))
              : std::map<std::string, plan::ParamValue>{};
  };
}

std::function<plan::ParamChoices(const ir::Node&, int)> pointwise_lister(PointwiseDimsOf dims_of) {
  return [=](const ir::Node& n, int t) {
    const auto kn = dims_of(n);
    return kn ? pointwise_choices(kn->first, kn->second, t) : plan::ParamChoices{};
  };
}

std::optional<PointwiseChoice> pointwise_choice_of(const plan::KernelSpec& s, int64_t K, int64_t N) {
  for (const char* p : {"depth", "pair", "split"})
    if (!s.params.count(p)) return std::nullopt;
  PointwiseChoice c;
  c.depth = s.get_int("depth");
  c.pair = s.get_int("pair") != 0;
  c.split_outputs = s.get_string("split") == "outputs";
  if (c.depth < 16 || c.depth > 1024 || c.depth % 16 != 0) return std::nullopt;
  if (s.get_int("pair") != 0 && s.get_int("pair") != 1) return std::nullopt;
  if (c.pair && !pair_allowed(K, N)) return std::nullopt;
  if (s.get_string("split") != "outputs" && s.get_string("split") != "pixels") return std::nullopt;
  if (c.split_outputs && parts_of(N, c.pair) < 2 * std::max(1, s.threads)) return std::nullopt;
  return c;
}

PointwiseRows::PointwiseRows(int64_t K, int64_t N, RowWeights w, const float* bias, ops::Activation act,
                             int64_t ldy, int threads)
    : PointwiseRows(K, N, w, bias, act, ldy, pointwise_rule(K, N, threads, kSplitOutputsMinWeightBytes)) {}

PointwiseRows::PointwiseRows(int64_t K, int64_t N, RowWeights w, const float* bias, ops::Activation act,
                             int64_t ldy, const PointwiseChoice& c)
    : K_(K), N_(N), ldy_(ldy), act_(act), depth_(c.depth), bias_(static_cast<size_t>(round16(N)), 0.f) {
  if (bias) std::copy(bias, bias + N, bias_.begin());
  pair_vectors_ = c.pair && pair_allowed(K, N) ? (N + 7) / 8 : 0;
  if (pair_vectors_) {  // [pair][vector][16]: lane 2i + j is w[8 * vector + i][2 * pair + j]
    const int64_t pairs = (K + 1) / 2;
    packed_ = packed_floats(static_cast<size_t>(pairs * pair_vectors_ * 16), "kiln_pointwise/pairs", [&](float* packed) {
      for (int64_t p = 0; p < pairs; ++p)
        for (int64_t v = 0; v < pair_vectors_; ++v)
          for (int l = 0; l < 16; ++l) {
            const int64_t n = 8 * v + l / 2, k = 2 * p + l % 2;
            packed[(p * pair_vectors_ + v) * 16 + l] = n < N && k < K ? w.at(n, k, K, N) : 0.f;
          }
    });
    return;
  }
  // Blocks of equal width, at most 4 vectors: 144 outputs as 3 x 48 rather than 64 + 64 + 16,
  // whose 16-wide block loads a broadcast per FMA (14 rows of 1 vector); 96 as 2 x 48 rather than
  // 64 + 32 (12 rows of 2 vectors: 14 loads per 24 FMAs). PointwiseRows_* in bench/kernels
  // time these shapes.
  const int64_t vectors = round16(N) / 16, nblocks = (vectors + 3) / 4;
  for (int64_t i = 0, n0 = 0; n0 < N; ++i) {
    const int64_t bv = vectors * (i + 1) / nblocks - vectors * i / nblocks;
    const int64_t valid = std::min<int64_t>(16 * bv, N - n0), width = round16(valid), last = valid - (width - 16);
    blocks_.push_back(Block{n0, width / 16, n0 * K, static_cast<__mmask16>((1u << last) - 1)});
    n0 += valid;
  }
  packed_ = packed_floats(static_cast<size_t>(K * round16(N)), "kiln_pointwise/blocks", [&](float* packed) {
    for (const Block& b : blocks_) {
      const int64_t width = 16 * b.nv, valid = std::min(width, N - b.n0);
      for (int64_t k = 0; k < K; ++k)
        for (int64_t l = 0; l < width; ++l) packed[b.offset + k * width + l] = l < valid ? w.at(b.n0 + l, k, K, N) : 0.f;
    }
  });
}

void PointwiseRows::rows(const float* x, int64_t m0, int64_t m1, float* y, const float* z, const float* s) const {
  rows(x, m0, m1, y, z, s, 0, parts());
}

int64_t PointwiseRows::parts() const { return pair_vectors_ ? 1 : static_cast<int64_t>(blocks_.size()); }

void PointwiseRows::rows(const float* x, int64_t m0, int64_t m1, float* y, const float* z, const float* s,
                         int64_t part0, int64_t part1) const {
  if (part1 <= part0) return;
  const Epilogue e{bias_.data(), z, s, N_, act_, depth_};
  if (pair_vectors_) {
    switch (pair_vectors_) {
      case 3: pair_rows<3>(x, m0, m1, K_, packed_.get(), y, ldy_, e); break;
      case 2: pair_rows<2>(x, m0, m1, K_, packed_.get(), y, ldy_, e); break;
      default: pair_rows<1>(x, m0, m1, K_, packed_.get(), y, ldy_, e);
    }
    if (!activation_in_registers(act_))
      for (int64_t m = m0; m < m1; ++m) apply_activation(act_, y + m * ldy_, N_);
    return;
  }
  for (int64_t i = part0; i < part1; ++i) {
    const Block& b = blocks_[i];
    const float* w = packed_.get() + b.offset;
    switch (b.nv) {
      case 4: column_block<4>(x, m0, m1, K_, w, y, ldy_, e, b.n0, b.tail); break;
      case 3: column_block<3>(x, m0, m1, K_, w, y, ldy_, e, b.n0, b.tail); break;
      case 2: column_block<2>(x, m0, m1, K_, w, y, ldy_, e, b.n0, b.tail); break;
      default: column_block<1>(x, m0, m1, K_, w, y, ldy_, e, b.n0, b.tail);
    }
  }
  if (!activation_in_registers(act_)) {
    const int64_t n0 = blocks_[part0].n0, n1 = part1 < parts() ? blocks_[part1].n0 : N_;
    for (int64_t m = m0; m < m1; ++m) apply_activation(act_, y + m * ldy_ + n0, n1 - n0);
  }
}

namespace {


class PointwiseConvKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  // `ldy` >= N: floats between output pixels (a channel slice of a wider tensor). Threads split
  // the outputs from `split_min_bytes` of weights.
  PointwiseConvKernel(int64_t images, int64_t pixels, int64_t K, int64_t N, RowWeights w, const float* bias,
                      ops::Activation act, int threads, int64_t ldy, const PointwiseChoice& c)
      : images_(images), M_(pixels), K_(K), N_(N), ldy_(ldy), threads_(std::max(1, threads)),
        gemm_(K, N, w, bias, act, ldy, c),
        split_outputs_(c.split_outputs && gemm_.parts() >= 2 * threads_) {}

  // Threads split the pixels, or with at least kSplitOutputsMinWeightBytes of weights the
  // output blocks: each core then streams half of the weights from L3 instead of all of them
  // (and reads the whole input, half of it written by the other core).
  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const float* x = inputs[0]->data<float>();
    const float* z = inputs.size() > 3 && inputs[3] ? inputs[3]->data<float>() : nullptr;
    const Tensor* scale = inputs.size() > 4 ? inputs[4] : nullptr;
    float* y = outputs[0]->data<float>();
    const int64_t rows = images_ * M_;
    const int team = rows * N_ >= kParallelMinElements ? threads_ : 1;
    auto scale_of = [&](int64_t img) -> const float* {
      return scale ? scale->data<float>() + (scale->dims()[0] == 1 ? 0 : img * K_) : nullptr;
    };
    if (split_outputs_ && team > 1) {
      const int64_t parts = gemm_.parts();
      parallel_for(team, team, [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p)
          for (int64_t img = 0; img < images_; ++img)
            gemm_.rows(x + img * M_ * K_, 0, M_, y + img * M_ * ldy_, z ? z + img * M_ * N_ : nullptr, scale_of(img),
                       parts * p / team, parts * (p + 1) / team);
      });
      return;
    }
    parallel_for(team, team, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        // Rows [r0, r1) of all images, taken image by image.
        const int64_t r0 = rows * p / team, r1 = rows * (p + 1) / team;
        for (int64_t r = r0; r < r1;) {
          const int64_t img = r / M_, m0 = r % M_, m1 = std::min(M_, m0 + (r1 - r));
          gemm_.rows(x + img * M_ * K_, m0, m1, y + img * M_ * ldy_, z ? z + img * M_ * N_ : nullptr, scale_of(img));
          r += m1 - m0;
        }
      }
    });
  }

 private:
  int64_t images_, M_, K_, N_, ldy_;
  int threads_;
  PointwiseRows gemm_;
  bool split_outputs_;
};

}  // namespace

std::unique_ptr<Kernel> make_pointwise_rows_kernel(int64_t rows, int64_t K, int64_t N, RowWeights w,
                                                   const float* bias, ops::Activation act, int threads,
                                                   const PointwiseChoice& c) {
  if (!has_avx512() || rows < 1 || K < 1 || N < 1) return nullptr;
  return std::make_unique<PointwiseConvKernel>(1, rows, K, N, w, bias, act, threads, N, c);
}

std::optional<std::pair<int64_t, int64_t>> pointwise_dims(const ir::Node& node) {
  const ir::Value* w = node.num_inputs() > 1 ? node.input(1) : nullptr;
  if (!w || !w->type.is_static() || w->type.rank() != 4) return std::nullopt;
  const auto wd = w->type.static_dims();
  if (wd[2] != 1 || wd[3] != 1 || wd[0] < 1 || wd[1] < 1) return std::nullopt;
  return std::make_pair(wd[1], wd[0]);
}

std::unique_ptr<Kernel> make_kiln_pointwise(const ir::Node& node, int threads, int64_t out_channels_total,
                                            int64_t max_pixels, const PointwiseChoice* choice) {
  if (!has_avx512() || node.domain() != "kiln" || node.op_type() != "FusedConv") return nullptr;
  if (!node.attr_int("channels_last", 0) || node.attr_int("x_blocked", 0) || node.attr_int("y_blocked", 0) ||
      node.attr_int("z_blocked", 0))
    return nullptr;
  if (node.num_inputs() < 2 || node.num_outputs() != 1 || node.attr_int("group", 1) != 1) return nullptr;
  const ir::Value *x = node.input(0), *w = node.input(1), *y = node.output(0);
  const ir::Value* b = node.num_inputs() > 2 ? node.input(2) : nullptr;
  const ir::Value* z = node.num_inputs() > 3 ? node.input(3) : nullptr;
  if (!dnnl_util::static_float(x) || !dnnl_util::static_float(w) || !dnnl_util::static_float(y)) return nullptr;
  if (!w->is_constant() || (b && (!b->is_constant() || !dnnl_util::static_float(b)))) return nullptr;
  if (z && (!dnnl_util::static_float(z) || z->type.static_dims() != y->type.static_dims())) return nullptr;
  if (const ir::Value* sc = node.num_inputs() > 4 ? node.input(4) : nullptr) {  // a channel scale S
    const auto sd = sc->type.static_dims(), xd = x->type.static_dims();
    if (!dnnl_util::static_float(sc) || sd.size() != 4 || (sd[0] != 1 && sd[0] != xd[0]) || sd[1] != 1 || sd[2] != 1 ||
        sd[3] != xd[3])
      return nullptr;
  }
  for (const char* a : {"strides", "dilations"})
    for (int64_t v : node.attr_ints(a, {1, 1}))
      if (v != 1) return nullptr;
  for (int64_t p : node.attr_ints("pads", {0, 0, 0, 0}))
    if (p != 0) return nullptr;
  const std::optional<ops::AutoPad> ap = ops::auto_pad_of(node);
  if (!ap || ops::is_same_pad(*ap)) return nullptr;
  const auto xd = x->type.static_dims(), wd = w->type.static_dims(), yd = y->type.static_dims();
  if (xd.size() != 4 || wd.size() != 4 || yd.size() != 4 || wd[2] != 1 || wd[3] != 1) return nullptr;
  const int64_t K = xd[3], N = wd[0], pixels = xd[1] * xd[2];
  if (wd[1] != K || yd != std::vector<int64_t>{xd[0], xd[1], xd[2], N}) return nullptr;
  if (K < 1 || N < 1 || pixels < 1 || pixels > max_pixels || (out_channels_total > 0 && out_channels_total < N))
    return nullptr;
  if (b && b->type.static_dims() != std::vector<int64_t>{N}) return nullptr;
  const std::optional<ops::Activation> act = epilogue_of(node);
  if (!act) return nullptr;
  return std::make_unique<PointwiseConvKernel>(xd[0], pixels, K, N, w->constant().data<float>(),
                                               b ? b->constant().data<float>() : nullptr, *act, threads,
                                               out_channels_total > 0 ? out_channels_total : N,
                                               choice ? *choice : pointwise_rule(K, N, threads, kSplitOutputsMinWeightBytes));
}

void add_pointwise_conv_kernels(std::vector<KernelFactory>& table) {
  // Two names, so that `--pair-disable` can measure the scaled form (efficientnet's
  // squeeze-excitation folded into its project convs, src/lower/fold_channel_scale.cpp) apart.
  // The scaled form takes any number of pixels: oneDNN rescales its packed weights each run, so
  // kiln's is at least as fast on efficientnet_b0's 28x28 to 112x112 project convs; without a
  // scale, beyond kMaxPixels the two are level.
  auto scaled = [](const ir::Node& n) { return n.num_inputs() > 4 && n.input(4); };
  const auto choose = pointwise_chooser(pointwise_dims, kSplitOutputsMinWeightBytes);
  const auto choices = pointwise_lister(pointwise_dims);
  for (const bool with_scale : {false, true}) {
    const int64_t max_pixels = with_scale ? std::numeric_limits<int64_t>::max() : kMaxPixels;
    table.push_back({.domain = "kiln",
                     .op = "FusedConv",
                     .make = nullptr,
                     .name = with_scale ? "kiln_pointwise_scaled" : "kiln_pointwise",
                     .choose = choose,
                     .make_spec = [=](const ir::Node& n, const plan::KernelSpec& s) -> std::unique_ptr<Kernel> {
                       const auto kn = pointwise_dims(n);
                       if (scaled(n) != with_scale || !kn) return nullptr;
                       const auto c = pointwise_choice_of(s, kn->first, kn->second);
                       return c ? make_kiln_pointwise(n, s.threads, 0, max_pixels, &*c) : nullptr;
                     },
                     .choices = choices,
                     .thread_params = {"depth", "split"}});
  }
}

}  // namespace kiln::backends::cpu
