// A 1x1 convolution on channels-last rows (a linear layer on rows of K floats) in AVX-512, for
// few pixels and wide weights: kiln's CPU backend runs its 1x1 convs, its linear layers and the
// 1x1 layers of its conv chains on it, and emitted C++ calls it for the same ops.
//
// The weights are packed once (pack) in the order the kernel reads them: blocks of up to 64
// outputs, each [K][width]. The pixels are taken in tiles of up to 14 rows whose outputs
// accumulate in registers, and the input channels in ranges (`depth`), so a block's weights
// for one range stay in L1 across all tiles; while the tiles work on a range they prefetch the
// next range into L2, so the weights stream from L3 behind the FMAs instead of before them.
// Bias, residual and activation are applied in registers before the store; a channel scale S
// (a squeeze-excitation folded into a project conv) multiplies the call's pixels where they are
// fewer than its outputs, else each range's weights once per call, in a thread buffer, or in
// pair mode each weight vector as it is loaded. Pair mode (up to
// 24 outputs) puts two input channels in each broadcast.
//
// Every function here needs AVX-512F (target attributes: they build without -mavx512f, and the
// caller checks the CPU). Packed weights must be 64-byte aligned.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "activation.h"
#include "avx512_activation.h"
#include "conv_shape.h"
#include "parallel.h"

namespace kiln_kernels {

// Pair mode up to this many input channels.
constexpr int64_t kPointwisePairMaxK = 1024;

namespace pointwise_detail {
// Internal linkage per including file, as if written there: GCC then specializes the tile
// functions for their callers (3-4% on a linear layer), which it does not for shared inline ones.
namespace {

struct Epilogue {
  const float* bias;  // [N rounded up to 16], zero when the node has none
  const float* z;     // residual [M][N] (rows N apart) or nullptr
  const float* s;     // channel scale [K] (FusedConv's S: X * S is convolved) or nullptr
  int64_t N;
  Act act;       // applied in registers when in_registers(act)
  float a, b;    // its parameters
  int64_t depth;  // input channels per range for 64 outputs
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

// The inputs' channels are taken in ranges of at most kMaxRangeDepth for 64 outputs (a thread's
// scaled_range buffer holds one), so that a block's weights for a range stay in L1 across all
// tiles of pixels. The depth for a core with `l1d_bytes` of L1 data cache: the deepest multiple
// of 16 whose 64 outputs' weights (256 bytes a channel) fill at most two thirds of it, the rest
// left to the tiles' input rows; 32 at least. Deeper ranges reload and store fewer partial sums
// (128 on a 48 KiB L1; 80 on 32 KiB).
constexpr int64_t kMaxRangeDepth = 128;
inline int64_t range_depth(int64_t l1d_bytes) {
  return std::clamp<int64_t>(l1d_bytes * 2 / 3 / 256 / 16 * 16, 32, kMaxRangeDepth);
}

inline int64_t round16_(int64_t n) { return (n + 15) / 16 * 16; }
// PointwiseRows::parts() for K x N with or without pair mode.
inline int64_t parts_of(int64_t N, bool pair) { return pair ? 1 : (round16_(N) / 16 + 3) / 4; }
inline bool pair_allowed(int64_t K, int64_t N) { return N <= 24 && K <= kPointwisePairMaxK; }

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// acc[r][v] += z[r][16 v...]: a tile's residual, its rows `ldz` floats apart.
template <int R, int NV>
__attribute__((target("avx512f"), always_inline)) inline void add_residual(__m512 (&acc)[R][NV], const float* z,
                                                                          int64_t ldz, __mmask16 tail) {
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_add_ps(acc[r][v], load_out<NV>(z + r * ldz + 16 * v, v, tail));
}

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
// of k starts from the bias (and the residual, where there are others), the others from the
// partial sums in y; the last applies the activation (after a one-range tile's residual). y is not __restrict: it may be the residual's own storage. One
// function per shape (noinline) keeps the k loop's registers to itself, and a run of tiles per
// call spreads its set-up, which a short k loop (few input channels) cannot hide.
template <int R, int NV>
__attribute__((target("avx512f"), noinline)) void tile(const float* __restrict x, int64_t K, int64_t k0, int64_t kc,
                                                      const float* __restrict wk, float* y, int64_t N,
                                                      int64_t n0, const Epilogue& e, int64_t m, int64_t count,
                                                      const char* pf, int64_t pf_per_tile, int64_t pf_left,
                                                      __mmask16 tail) {
  const bool last_range = k0 + kc >= K;
  const __m512 lo = activation_lo(e.act, e.a), hi = activation_hi(e.b);
  for (int64_t t = 0; t < count; ++t, x += R * K, y += R * N, m += R, pf += pf_per_tile * 64, pf_left -= pf_per_tile) {
    __m512 acc[R][NV];
    if (k0 == 0) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        const __m512 b = _mm512_loadu_ps(e.bias + n0 + 16 * v);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) acc[r][v] = b;
      }
      // Over several ranges the residual joins with the bias, before any partial sum is stored:
      // Y may be Z's own buffer (the plan writes a conv's output over a residual that dies
      // there). In one range it is added after the loop, whose FMAs then do not wait for it.
      if (e.z && !last_range) add_residual<R, NV>(acc, e.z + m * e.N + n0, e.N, tail);
    } else {
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[r][v] = load_out<NV>(y + r * N + n0 + 16 * v, v, tail);
    }
    const float* xk = x + k0;
    // This tile's share of the next range's weights into L2 (`pf_per_tile` lines from `pf`, of
    // the `pf_left` still to fetch), as few lines a step as cover it in the tile's steps (one,
    // unless a tile is most of its range's pixels), so the requests spread over the loop; the
    // steps after carry no prefetch test. Not one per weight vector loaded: where the weights
    // come from memory (a late layer's few pixels on megabytes of weights) a burst of NV
    // requests a step fills the core's miss buffers, and the loads wait behind them instead of
    // the transfers overlapping the FMAs (make kernel-bench, Pointwise*Cold).
    const int64_t pf_lines = std::min(pf_per_tile, std::max<int64_t>(0, pf_left));
    // At most NV: a tile's share is at most the kc * NV lines of a range.
    const int64_t per_step = (pf_lines + kc - 1) / kc;
    int64_t k = 0;
    for (; k < kc && k * per_step < pf_lines; ++k) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
        if (v < per_step && k * per_step + v < pf_lines) _mm_prefetch(pf + (k * per_step + v) * 64, _MM_HINT_T1);
      tile_step<R, NV>(acc, xk, wk, K, k);
    }
    for (; k < kc; ++k) tile_step<R, NV>(acc, xk, wk, K, k);
    if (last_range) {
      if (e.z && k0 == 0) add_residual<R, NV>(acc, e.z + m * e.N + n0, e.N, tail);
      if (e.act != Act::None) {
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
          for (int v = 0; v < NV; ++v) acc[r][v] = activation_ps(acc[r][v], e.act, lo, hi);
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
__attribute__((target("avx512f"))) inline const float* scaled_range(const float* w, const float* s, int64_t kc,
                                                             int64_t width) {
  alignas(64) static thread_local float buf[kMaxRangeDepth * 64];
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 sk = _mm512_set1_ps(s[k]);
    for (int64_t l = 0; l < width; l += 16)
      _mm512_store_ps(buf + k * width + l, _mm512_mul_ps(_mm512_load_ps(w + k * width + l), sk));
  }
  return buf;
}

}  // namespace
}  // namespace pointwise_detail

// Where output pixel m of a 1x1 conv reads its input: pixel (m / out_w * sh, m % out_w * sw) of
// an image in_w pixels wide (a strided conv: a ResNet's downsampling shortcut); stride 1 reads
// pixel m.
struct PixelStride {
  int64_t sh = 1, sw = 1, in_w = 0, out_w = 0;
  bool unit() const { return sh == 1 && sw == 1; }
  int64_t input_pixel(int64_t m) const { return unit() ? m : m / out_w * sh * in_w + m % out_w * sw; }
};

namespace pointwise_detail {
namespace {

// The input rows of output pixels [m0, m1) (x: the image's first pixel, K floats a pixel), each
// channel k times s[k] where s is given, one after another in this thread's buffer: what a call
// reads where its conv is strided, or where it scales its pixels instead of its weights (fewer
// pixels than outputs: a late layer's 49 pixels against 192-320 outputs, each thread of a team
// scaling only its own pixels).
__attribute__((target("avx512f"))) inline const float* gathered_rows(const float* x, const PixelStride& st,
                                                              int64_t m0, int64_t m1, int64_t K, const float* s) {
  static thread_local std::vector<float> buf;
  const int64_t rows = m1 - m0;
  if (buf.size() < static_cast<size_t>(rows * K)) buf.resize(static_cast<size_t>(rows * K));
  const __mmask16 tail = static_cast<__mmask16>((1u << (K % 16)) - 1);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + st.input_pixel(m0 + r) * K;
    float* out = buf.data() + r * K;
    if (!s) {
      std::memcpy(out, xr, static_cast<size_t>(K) * sizeof(float));
      continue;
    }
    int64_t k = 0;
    for (; k + 16 <= K; k += 16)
      _mm512_storeu_ps(out + k, _mm512_mul_ps(_mm512_loadu_ps(xr + k), _mm512_loadu_ps(s + k)));
    if (k < K)
      _mm512_mask_storeu_ps(out + k, tail,
                            _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, xr + k), _mm512_maskz_loadu_ps(tail, s + k)));
  }
  return buf.data();
}

// Outputs [n0, n0 + NV * 16) of pixels [m0, m1), from the block's weights w ([K][NV * 16]); xm0
// is pixel m0's row (the pixels K floats apart).
template <int NV>
void column_block(const float* xm0, int64_t m0, int64_t m1, int64_t K, const float* w, float* y, int64_t N,
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
      fns[height](xm0, K, k0, kc, wr, y + m0 * N, N, n0, e, m0, taller, next, per, lines, tail);
    const int64_t m = m0 + taller * (height + 1);
    if (tiles > taller)
      fns[height - 1](xm0 + (m - m0) * K, K, k0, kc, wr, y + m * N, N, n0, e, m, tiles - taller, next + taller * per * 64, per,
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
                                                           const float* __restrict w, float* y,
                                                           int64_t ldy, const Epilogue& e, int64_t m, int64_t count) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512 lo = activation_lo(e.act, e.a), hi = activation_hi(e.b);
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
        if (e.act != Act::None) o = activation_ps(o, e.act, lo, hi);
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

// Pixels [m0, m1), pixel m0's row at xm0 (the pixels K floats apart).
template <int NVP>
void pair_rows(const float* xm0, int64_t m0, int64_t m1, int64_t K, const float* w, float* y, int64_t ldy,
               const Epilogue& e) {
  if (m1 <= m0) return;
  // Tiles of equal height, the taller ones first, each height one run (as column_block).
  const int64_t tiles = (m1 - m0 + kPairRows<NVP> - 1) / kPairRows<NVP>, height = (m1 - m0) / tiles,
                taller = (m1 - m0) % tiles;
  const auto& fns = e.s ? kPairTiles<NVP, true> : kPairTiles<NVP, false>;
  if (taller) fns[height](xm0, K, w, y + m0 * ldy, ldy, e, m0, taller);
  const int64_t m = m0 + taller * (height + 1);
  if (tiles > taller) fns[height - 1](xm0 + (m - m0) * K, K, w, y + m * ldy, ldy, e, m, tiles - taller);
}


}  // namespace
}  // namespace pointwise_detail

// How a 1x1 conv of K inputs and N outputs runs: pair mode or blocks of up to 64 outputs (each
// with its packed weights' offset and its last vector's mask), the depth of the input-channel
// ranges, and `ldy` >= N, the floats between output pixels (a channel slice of a wider tensor).
class PointwiseLayout {
 public:
  struct Block {
    int64_t n0, nv, offset;
    __mmask16 tail;
  };

  // `pair`: pair mode, where allowed (pair_allowed); `depth`: input channels per range for 64
  // outputs (a multiple of 16). Plain arithmetic, no allocation: emitted code builds one per call.
  PointwiseLayout(int64_t K, int64_t N, bool pair, int64_t depth, int64_t ldy)
      : K_(K), N_(N), ldy_(ldy), depth_(depth),
        pair_vectors_(pair && pointwise_detail::pair_allowed(K, N) ? (N + 7) / 8 : 0),
        vectors_(round16(N) / 16), blocks_((vectors_ + 3) / 4) {}

  static int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }
  int64_t K() const { return K_; }
  int64_t N() const { return N_; }
  int64_t ldy() const { return ldy_; }
  bool pair() const { return pair_vectors_ > 0; }
  // Parts the outputs split into for threads: the blocks, or one in pair mode.
  int64_t parts() const { return pair_vectors_ ? 1 : blocks_; }
  // Outputs [first(p), first(p + 1)) are part p's.
  int64_t first(int64_t part) const { return part >= parts() ? N_ : pair_vectors_ ? 0 : 16 * (vectors_ * part / blocks_); }
  // Block i of the outputs. Blocks are of equal width, at most 4 vectors: 144 outputs as 3 x 48
  // rather than 64 + 64 + 16, whose 16-wide block loads a broadcast per FMA (14 rows of 1
  // vector); 96 as 2 x 48 rather than 64 + 32 (12 rows of 2 vectors: 14 loads per 24 FMAs).
  // Every block but the last is whole vectors.
  Block block(int64_t i) const {
    const int64_t n0 = first(i), valid = first(i + 1) - n0, width = round16(valid), last = valid - (width - 16);
    return Block{n0, width / 16, n0 * K_, static_cast<__mmask16>((1u << last) - 1)};
  }

  // The floats of the packed weights.
  int64_t packed_size() const { return pair_vectors_ ? (K_ + 1) / 2 * pair_vectors_ * 16 : K_ * round16(N_); }
  // Weights [N][K] (k_major: [K][N]) into `out` (packed_size floats, 64-byte aligned).
  void pack(const float* w, bool k_major, float* out) const {
    auto at = [&](int64_t n, int64_t k) { return k_major ? w[k * N_ + n] : w[n * K_ + k]; };
    if (pair_vectors_) {  // [pair][vector][16]: lane 2i + j is w[8 * vector + i][2 * pair + j]
      const int64_t pairs = (K_ + 1) / 2;
      for (int64_t p = 0; p < pairs; ++p)
        for (int64_t v = 0; v < pair_vectors_; ++v)
          for (int l = 0; l < 16; ++l) {
            const int64_t n = 8 * v + l / 2, k = 2 * p + l % 2;
            out[(p * pair_vectors_ + v) * 16 + l] = n < N_ && k < K_ ? at(n, k) : 0.f;
          }
      return;
    }
    for (int64_t i = 0; i < blocks_; ++i) {
      const Block b = block(i);
      const int64_t width = 16 * b.nv, valid = std::min(width, N_ - b.n0);
      for (int64_t k = 0; k < K_; ++k)
        for (int64_t l = 0; l < width; ++l) out[b.offset + k * width + l] = l < valid ? at(b.n0 + l, k) : 0.f;
    }
  }

  // y[m] = act(x[m] * W + bias (+ z[m])) for pixels m in [m0, m1), outputs of parts
  // [part0, part1): x's pixels K floats apart, y's ldy, z's (the residual, or nullptr) N; `s`
  // (or nullptr) scales input channel k by s[k]. `packed`: pack's; `bias`: round16(N) floats.
  // The activation is applied only when in_registers(act); the others are the caller's.
  // With `stride` (not unit), output pixel m reads input pixel stride.input_pixel(m) of x.
  void rows(const float* packed, const float* bias, Act act, float a, float b, const float* x, int64_t m0, int64_t m1,
            float* y, const float* z, const float* s, int64_t part0, int64_t part1,
            const PixelStride& stride = {}) const {
    using namespace pointwise_detail;
    if (part1 <= part0 || m1 <= m0) return;
    Epilogue e{bias, z, s, N_, act, a, b, depth_};
    const float* xm0 = x + m0 * K_;
    if (pair_vectors_) {
      if (!stride.unit()) xm0 = gathered_rows(x, stride, m0, m1, K_, nullptr);
      switch (pair_vectors_) {
        case 3: pair_rows<3>(xm0, m0, m1, K_, packed, y, ldy_, e); break;
        case 2: pair_rows<2>(xm0, m0, m1, K_, packed, y, ldy_, e); break;
        default: pair_rows<1>(xm0, m0, m1, K_, packed, y, ldy_, e);
      }
      return;
    }
    // A channel scale multiplies whichever is smaller: the pixels' inputs (gathered anyway where
    // the conv is strided) or the weights of the outputs this call makes (each range of them
    // once).
    const bool scale_pixels = s && (!stride.unit() || m1 - m0 < first(part1) - first(part0));
    if (!stride.unit() || scale_pixels) {
      xm0 = gathered_rows(x, stride, m0, m1, K_, scale_pixels ? s : nullptr);
      if (scale_pixels) e.s = nullptr;
    }
    for (int64_t i = part0; i < part1; ++i) {
      const Block bl = block(i);
      const float* w = packed + bl.offset;
      switch (bl.nv) {
        case 4: column_block<4>(xm0, m0, m1, K_, w, y, ldy_, e, bl.n0, bl.tail); break;
        case 3: column_block<3>(xm0, m0, m1, K_, w, y, ldy_, e, bl.n0, bl.tail); break;
        case 2: column_block<2>(xm0, m0, m1, K_, w, y, ldy_, e, bl.n0, bl.tail); break;
        default: column_block<1>(xm0, m0, m1, K_, w, y, ldy_, e, bl.n0, bl.tail);
      }
    }
  }

 private:
  int64_t K_, N_, ldy_, depth_;
  int64_t pair_vectors_;  // vectors of 8 outputs in pair mode, 0 in blocks
  int64_t vectors_;       // of 16 outputs
  int64_t blocks_;
};

// A 1x1 conv (or a linear layer) on `rows` rows of whole tensors, with the activation A: the
// team's threads split the rows, or (split_outputs, with parts() >= 2 per thread) the outputs.
template <Act A>
void pointwise_nhwc(const PointwiseLayout& L, int64_t rows, const float* x, const float* packed, const float* bias,
                    const float* z, float* y, float a, float b, bool split_outputs, Team* team = nullptr) {
  const int threads = team ? team->size() : 1;
  const int64_t ldy = L.N();  // whole tensors: rows N apart
  auto finish = [&](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    if constexpr (!in_registers(A))
      for (int64_t m = m0; m < m1; ++m) activate_all<A>(y + m * ldy + n0, n1 - n0, a, b);
  };
  if (split_outputs && threads > 1 && L.parts() >= 2 * threads) {
    const int64_t parts = L.parts();
    parallel_for(team, threads, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t p0 = parts * t / threads, p1 = parts * (t + 1) / threads;
        L.rows(packed, bias, A, a, b, x, 0, rows, y, z, nullptr, p0, p1);
        finish(0, rows, L.first(p0), L.first(p1));
      }
    });
    return;
  }
  parallel_for(team, rows, [&](int64_t m0, int64_t m1) {
    L.rows(packed, bias, A, a, b, x, m0, m1, y, z, nullptr, 0, L.parts());
    finish(m0, m1, 0, L.N());
  });
}

// A 1x1 stride-1 unpadded conv of shape `s` (channels-last) on L: the s.N * s.OH * s.OW pixels
// are its rows. A kiln.ConvChain emitted as bands calls it on a band's rows.
template <Act A>
void pointwise_conv_nhwc(const Conv2dShape& s, const PointwiseLayout& L, const float* x, const float* packed,
                         const float* bias, const float* z, float* y, float a, float b, bool split_outputs,
                         Team* team = nullptr) {
  pointwise_nhwc<A>(L, s.N * s.OH * s.OW, x, packed, bias, z, y, a, b, split_outputs, team);
}

}  // namespace kiln_kernels
