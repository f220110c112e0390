// Channels-last depthwise convolution (one filter per channel, NHWC) in AVX-512, an output row
// at a time from whatever input rows are at hand: kiln's CPU backend runs it on whole tensors
// and on a kiln.ConvChain's line buffers, and emitted C++ calls it for its depthwise convs.
//
// Channel blocks of 16 (a pixel's block is one cache line) go outermost, four at a time, so a
// block's input rows stay in L1 from one output row to the next. 3x3 and 5x5 kernels take eight
// output pixels at a time in registers: each input vector of a kernel row is loaded once and
// feeds the pixels whose taps it is (3x3: the nine weights stay in registers; 5x5: each weight
// is loaded once per kernel row of the group), and pixels at the image edges read zeros through
// masked loads. 3x3 stride-1 convs take two output rows at once: their four input rows feed
// both, 40 loads per 144 FMAs where a row at a time has 60. Loads are kept out of the FMAs
// (load_input): GCC would fold a load into every FMA (72 loads per 72 FMAs for eight pixels,
// where this loop has 30), and the loads would bound the loop. Other kernels accumulate up to
// eight pixels over the taps whose input row exists, and pixels whose taps cross the edge only
// the taps inside. The epilogue (bias, Relu/Clip/SiLU) runs on the registers before the store;
// the other activations are the caller's, after the rows are written (in_registers).
//
// Weights are packed [C16 / 16][KH * KW][16] (channels zero-padded to C16, a multiple of 16),
// bias [C16] (pack_depthwise). Every function here needs AVX-512F (target attributes: they
// build without -mavx512f, and the caller checks the CPU).
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "avx512_activation.h"
#include "conv_shape.h"
#include "activation.h"
#include "parallel.h"

namespace kiln_kernels {

// Kernel heights depthwise_rows takes.
constexpr int64_t kDepthwiseMaxKernelRows = 16;

struct DepthwiseShape {
  int64_t H = 0, W = 0, C = 0, OH = 0, OW = 0, KH = 0, KW = 0, SH = 1, SW = 1, PT = 0, PL = 0;
  int64_t DH = 1, DW = 1;  // dilations: tap (ky, kx) reads input (oy * SH - PT + ky * DH, ox * SW - PL + kx * DW)
};

// The slot of input row r in the rows a row-at-a-time kernel reads: rows one after another from
// row x_row0 on, or (ring > 0) a ConvChain's line buffer kept as a ring of `ring` rows, row r in
// slot r % ring, so that a band moving on overwrites the rows no longer needed instead of
// moving the ones still needed to the front.
inline int64_t row_slot(int64_t r, int64_t x_row0, int64_t ring) { return ring > 0 ? r % ring : r - x_row0; }

// Weights [C][1][KH][KW] (ONNX) and bias (C floats or nullptr) into w ([C16 / 16][KH * KW][16])
// and b ([C16]), zeros past C.
inline void pack_depthwise(const DepthwiseShape& s, const float* weights, const float* bias, float* w, float* b) {
  const int64_t C16 = (s.C + 15) / 16 * 16, KK = s.KH * s.KW;
  std::fill(w, w + C16 * KK, 0.f);
  std::fill(b, b + C16, 0.f);
  for (int64_t c = 0; c < s.C; ++c) {
    for (int64_t t = 0; t < KK; ++t) w[(c / 16 * KK + t) * 16 + c % 16] = weights[c * KK + t];
    if (bias) b[c] = bias[c];
  }
}

namespace depthwise_detail {

// GCC 12 warns of the undefined pass-through operand inside its own _mm512_min_ps/_mm512_max_ps.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// P output pixels from ox on, all of whose taps lie inside the row, accumulated in registers.
template <int P, int KH_, int KW_, int SW_, bool Full>
__attribute__((target("avx512f"), always_inline)) inline void pixels(const DepthwiseShape& s, const float* wb, __m512 b,
                                                                    __mmask16 m, Act kind, __m512 lo,
                                                                    __m512 hi, const float* const* in, int64_t c0,
                                                                    int64_t ox, float* y) {
  const int64_t KH = KH_ ? KH_ : s.KH, KW = KW_ ? KW_ : s.KW, SW = SW_ ? SW_ : s.SW, C = s.C;
  const int64_t DW = KW_ ? 1 : s.DW;  // the compile-time forms are undilated
  // R partial sums per pixel, over alternating kernel rows, so that P * R >= 4 chains hide the
  // FMA latency when few pixels are left.
  constexpr int R = P >= 8 ? 1 : P >= 4 ? 2 : 4;
  __m512 acc[R][P];
#pragma GCC unroll 8
  for (int p = 0; p < P; ++p) {
    acc[0][p] = b;
#pragma GCC unroll 4
    for (int q = 1; q < R; ++q) acc[q][p] = _mm512_setzero_ps();
  }
  const int64_t ix0 = ox * SW - s.PL;
#pragma GCC unroll 5
  for (int64_t ky = 0; ky < KH; ++ky) {
    if (!in[ky]) continue;
    const float* r = in[ky] + ix0 * C + c0;
    __m512* a = acc[ky % R];
#pragma GCC unroll 5
    for (int64_t kx = 0; kx < KW; ++kx) {
      const __m512 wv = _mm512_loadu_ps(wb + (ky * KW + kx) * 16);
#pragma GCC unroll 8
      for (int p = 0; p < P; ++p)
        a[p] = _mm512_fmadd_ps(Full ? _mm512_loadu_ps(r + (p * SW + kx * DW) * C)
                                    : _mm512_maskz_loadu_ps(m, r + (p * SW + kx * DW) * C),
                               wv, a[p]);
    }
  }
#pragma GCC unroll 8
  for (int p = 0; p < P; ++p) {
#pragma GCC unroll 4
    for (int q = 1; q < R; ++q) acc[0][p] = _mm512_add_ps(acc[0][p], acc[q][p]);
    if (Full) _mm512_storeu_ps(y + (ox + p) * C + c0, activation_ps(acc[0][p], kind, lo, hi));
    else _mm512_mask_storeu_ps(y + (ox + p) * C + c0, m, activation_ps(acc[0][p], kind, lo, hi));
  }
}

// One output pixel whose taps cross the left or right edge: only the taps inside the row.
template <int KH_, int KW_, int SW_>
__attribute__((target("avx512f"), always_inline)) inline void edge_pixel(const DepthwiseShape& s, const float* wb,
                                                                        __m512 b, __mmask16 m, Act kind,
                                                                        __m512 lo, __m512 hi, const float* const* in,
                                                                        int64_t c0, int64_t ox, float* y) {
  const int64_t KH = KH_ ? KH_ : s.KH, KW = KW_ ? KW_ : s.KW, SW = SW_ ? SW_ : s.SW, C = s.C;
  const int64_t DW = KW_ ? 1 : s.DW;
  const int64_t ix0 = ox * SW - s.PL;
  // The taps inside the row: ix0 + kx * DW in [0, W).
  const int64_t kx_lo = ix0 >= 0 ? 0 : (-ix0 + DW - 1) / DW;
  const int64_t kx_hi = ix0 >= s.W ? 0 : std::min(KW, (s.W - ix0 + DW - 1) / DW);
  // One accumulator per kernel row (up to four): a single chain of 25 FMAs would wait on the
  // FMA latency at every step.
  __m512 acc[4] = {b, _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  for (int64_t ky = 0; ky < KH; ++ky) {
    if (!in[ky]) continue;
    const float* r = in[ky] + ix0 * C + c0;
    for (int64_t kx = kx_lo; kx < kx_hi; ++kx)
      acc[ky & 3] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, r + kx * DW * C),
                                    _mm512_loadu_ps(wb + (ky * KW + kx) * 16), acc[ky & 3]);
  }
  const __m512 sum = _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3]));
  _mm512_mask_storeu_ps(y + ox * C + c0, m, activation_ps(sum, kind, lo, hi));
}

// One output row, AVX-512. `in[ky]` is input row oy * SH - PT + ky, or nullptr outside the image.
// KH_, KW_, SW_ > 0 fix the kernel size and horizontal stride at compile time (the taps unroll
// and the weights stay in registers); 0 reads them from `s`. Full: every block has 16 channels,
// so loads fold into the FMAs and stores are plain.
template <int KH_, int KW_, int SW_, bool Full>
__attribute__((target("avx512f"))) void row_avx512(const DepthwiseShape& s, const float* w, const float* bias,
                                                   Act act, float act_a, float act_b, const float* const* in, float* y,
                                                   int64_t c_begin, int64_t c_end) {
  const int64_t KH = KH_ ? KH_ : s.KH, KW = KW_ ? KW_ : s.KW, SW = SW_ ? SW_ : s.SW;
  const int64_t C = s.C, KK = KH * KW, span = (KW - 1) * (KW_ ? 1 : s.DW) + 1;  // input pixels a pixel's taps span
  // Output pixels whose taps all lie inside the row: [ox_lo, ox_hi).
  const int64_t ox_lo = std::min(s.OW, (s.PL + SW - 1) / SW);
  const int64_t ox_hi = s.W + s.PL < span ? ox_lo : std::max(ox_lo, std::min(s.OW, (s.W + s.PL - span) / SW + 1));
  const Act kind = act;
  const __m512 lo = activation_lo(act, act_a), hi = activation_hi(act_b);
  for (int64_t c0 = c_begin; c0 < c_end; c0 += 16) {
    const __mmask16 m = Full || C - c0 >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (C - c0)) - 1);
    const float* wb = w + c0 * KK;  // [KK][16] for this block
    const __m512 b = _mm512_loadu_ps(bias + c0);
    int64_t ox = 0;
    for (; ox < ox_lo; ++ox) edge_pixel<KH_, KW_, SW_>(s, wb, b, m, kind, lo, hi, in, c0, ox, y);
    for (; ox + 8 <= ox_hi; ox += 8) pixels<8, KH_, KW_, SW_, Full>(s, wb, b, m, kind, lo, hi, in, c0, ox, y);
    if (ox + 4 <= ox_hi) {
      pixels<4, KH_, KW_, SW_, Full>(s, wb, b, m, kind, lo, hi, in, c0, ox, y);
      ox += 4;
    }
    for (; ox < ox_hi; ++ox) pixels<1, KH_, KW_, SW_, Full>(s, wb, b, m, kind, lo, hi, in, c0, ox, y);
    for (; ox < s.OW; ++ox) edge_pixel<KH_, KW_, SW_>(s, wb, b, m, kind, lo, hi, in, c0, ox, y);
  }
}

// A 3x3 kernel's nine weights for one 16-channel block stay in registers; a 5x5 kernel's 25
// do not fit beside eight pixels' sums, so each is loaded when its tap comes.
template <int K>
struct TapWeights {
  const float* wb;  // [K * K][16]
  __attribute__((target("avx512f"), always_inline)) explicit TapWeights(const float* w) : wb(w) {}
  __attribute__((target("avx512f"), always_inline)) __m512 at(int t) const { return _mm512_loadu_ps(wb + t * 16); }
};
template <>
struct TapWeights<3> {
  __m512 w[9];
  __attribute__((target("avx512f"), always_inline)) explicit TapWeights(const float* wb) {
#pragma GCC unroll 9
    for (int t = 0; t < 9; ++t) w[t] = _mm512_loadu_ps(wb + t * 16);
  }
  __attribute__((target("avx512f"), always_inline)) __m512 at(int t) const { return w[t]; }
};

// One input vector into a register (masked: zeros where the mask is clear). Kept out of the
// FMAs: otherwise GCC folds a load into each FMA the vector feeds, and the 512-bit loads, which
// issue at a lower rate from L1 than the FMAs, would bound the loop.
template <bool Masked>
__attribute__((target("avx512f"), always_inline)) inline __m512 load_input(const float* p, __mmask16 m) {
  __m512 v = Masked ? _mm512_maskz_loadu_ps(m, p) : _mm512_loadu_ps(p);
  asm("" : "+v"(v));
  return v;
}

// Input pixel ix0 + j of a group: its mask (clear outside the row, Edge), and its load's offset
// in floats from pixel ix0. A load whose mask is all clear still has an address, and where that
// lies in a page not mapped in (before the first row or after the last row of a buffer), this
// CPU (Zen 5) takes a slow path of some hundreds of cycles; Safe sends such loads to the row's
// first or last pixel instead. A kiln.ConvChain's first window starts its thread buffer, so
// without Safe every chain's depthwise layer pays it on its first input row, which can take
// more than the rest of a small layer (kernel bench Depthwise3x3_960x7_MappingStart). Only the
// rows at the ends of what the kernel is given need it (elsewhere the neighbouring row is
// there), so the other rows keep compile-time offsets.
template <bool Edge, bool Safe>
__attribute__((always_inline)) inline void edge_tap(int64_t ix0, int j, int64_t C, int64_t W, __mmask16 m,
                                                    __mmask16& mask, int64_t& at) {
  const int64_t ix = ix0 + j;
  const bool inside = !Edge || (ix >= 0 && ix < W);
  mask = inside ? m : __mmask16(0);
  at = (!Safe || inside ? j : ix < 0 ? -ix0 : W - 1 - ix0) * C;
}

// A group of P output pixels (P <= 8) of one 16-channel block, K x K taps (3 or 5) at
// horizontal stride S and dilation D (tap kx of pixel p reads input pixel p * S + kx * D). Each
// input vector of a kernel row is loaded once and feeds the pixels whose taps it is. Edge: some
// of the group's input pixels lie outside the row; their loads are masked to zero (a masked-out
// load does not fault), so the taps need no branches.
template <int K, int P, int S, bool Edge, bool Full, bool Safe, int D = 1>
__attribute__((target("avx512f"), always_inline)) inline void group(const float* const* in, int64_t C, int64_t W,
                                                                   int64_t ix0, int64_t c0, __mmask16 m,
                                                                   const TapWeights<K>& w, __m512 b,
                                                                   Act kind, __m512 lo, __m512 hi,
                                                                   float* y) {
  constexpr int N = (P - 1) * S + (K - 1) * D + 1;  // input pixels per kernel row
  // Fewer than four pixels leave the FMA latency exposed: a second set of sums for odd rows.
  constexpr int R = P >= 4 ? 1 : 2;
  __mmask16 mk[N];
  int64_t at[N];
#pragma GCC unroll 24
  for (int j = 0; j < N; ++j) edge_tap<Edge, Safe>(ix0, j, C, W, m, mk[j], at[j]);
  __m512 acc[R][P];
#pragma GCC unroll 8
  for (int p = 0; p < P; ++p) {
    acc[0][p] = b;
    if constexpr (R > 1) acc[R - 1][p] = _mm512_setzero_ps();
  }
#pragma GCC unroll 5
  for (int ky = 0; ky < K; ++ky) {
    if (!in[ky]) continue;
    const float* r = in[ky] + ix0 * C + c0;
    __m512* a = acc[ky % R];
    if constexpr (K == 3) {  // input by input: the row's inputs need not all be live at once
#pragma GCC unroll 24
      for (int j = 0; j < N; ++j) {
        const __m512 v = load_input<Edge || !Full>(r + at[j], mk[j]);
#pragma GCC unroll 3
        for (int kx = 0; kx < 3; ++kx) {
          const int p = (j - kx * D) / S;
          if (j >= kx * D && (j - kx * D) % S == 0 && p < P) a[p] = _mm512_fmadd_ps(v, w.at(ky * 3 + kx), a[p]);
        }
      }
    } else {  // tap by tap, each weight loaded once: the row's inputs (12, 16 or 19) in registers
      __m512 v[N];
#pragma GCC unroll 24
      for (int j = 0; j < N; ++j) v[j] = load_input<Edge || !Full>(r + at[j], mk[j]);
#pragma GCC unroll 5
      for (int kx = 0; kx < K; ++kx) {
        const __m512 wv = w.at(ky * K + kx);
#pragma GCC unroll 8
        for (int p = 0; p < P; ++p) a[p] = _mm512_fmadd_ps(v[p * S + kx * D], wv, a[p]);
      }
    }
  }
#pragma GCC unroll 8
  for (int p = 0; p < P; ++p) {
    __m512 o = acc[0][p];
    if constexpr (R > 1) o = _mm512_add_ps(o, acc[R - 1][p]);
    o = activation_ps(o, kind, lo, hi);
    if (Full) _mm512_storeu_ps(y + p * C + c0, o);
    else _mm512_mask_storeu_ps(y + p * C + c0, m, o);
  }
}

// The last P < 8 pixels of a row, P known at run time.
template <int K, int S, bool Full, bool Safe, int D, int... Ps>
__attribute__((target("avx512f"), always_inline)) inline void tail(int p, std::integer_sequence<int, Ps...>,
                                                                  const float* const* in, int64_t C, int64_t W,
                                                                  int64_t ix0, int64_t c0, __mmask16 m,
                                                                  const TapWeights<K>& w, __m512 b,
                                                                  Act kind, __m512 lo, __m512 hi,
                                                                  float* y) {
  ((p == Ps + 1 ? group<K, Ps + 1, S, true, Full, Safe, D>(in, C, W, ix0, c0, m, w, b, kind, lo, hi, y) : void()), ...);
}

// One output row of a K x K depthwise conv of horizontal stride S and dilation D, groups of
// eight pixels.
template <int K, int S, bool Full, bool Safe, int D = 1>
__attribute__((target("avx512f"))) void row_kxk(const DepthwiseShape& s, const float* w, const float* bias,
                                                Act act, float act_a, float act_b, const float* const* in, float* y,
                                                int64_t c_begin, int64_t c_end) {
  const int64_t C = s.C, W = s.W, OW = s.OW;
  constexpr int64_t kSpan = 7 * S + (K - 1) * D + 1;  // input pixels of a group of eight
  const Act kind = act;
  const __m512 lo = activation_lo(act, act_a), hi = activation_hi(act_b);
  for (int64_t c0 = c_begin; c0 < c_end; c0 += 16) {
    const __mmask16 m = Full || C - c0 >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (C - c0)) - 1);
    const TapWeights<K> wt(w + c0 * K * K);
    const __m512 b = _mm512_loadu_ps(bias + c0);
    int64_t ox = 0;
    for (; ox + 8 <= OW; ox += 8) {
      const int64_t ix0 = ox * S - s.PL;
      float* yo = y + ox * C;
      if (ix0 >= 0 && ix0 + kSpan <= W) group<K, 8, S, false, Full, false, D>(in, C, W, ix0, c0, m, wt, b, kind, lo, hi, yo);
      else group<K, 8, S, true, Full, Safe, D>(in, C, W, ix0, c0, m, wt, b, kind, lo, hi, yo);
    }
    if (ox < OW)
      tail<K, S, Full, Safe, D>(static_cast<int>(OW - ox), std::make_integer_sequence<int, 7>{}, in, C, W, ox * S - s.PL, c0,
                             m, wt, b, kind, lo, hi, y + ox * C);
  }
}

// Two output rows of a 3x3 stride-1 conv at once, P pixels of one 16-channel block each: the
// four input rows are loaded once for both (each vector feeds up to six FMAs, where one row at
// a time loads three rows per output row). in[r] is input row oy - PT + r (r < 4), or nullptr.
template <int P, bool Edge, bool Full, bool Safe>
__attribute__((target("avx512f"), always_inline)) inline void group2(const float* const* in, int64_t C, int64_t W,
                                                                    int64_t ix0, int64_t c0, __mmask16 m,
                                                                    const TapWeights<3>& w, __m512 b,
                                                                    Act kind, __m512 lo, __m512 hi,
                                                                    float* y0, float* y1) {
  constexpr int N = P + 2;  // input pixels per row
  __mmask16 mk[N];
  int64_t at[N];
#pragma GCC unroll 10
  for (int j = 0; j < N; ++j) edge_tap<Edge, Safe>(ix0, j, C, W, m, mk[j], at[j]);
  __m512 acc[2][P];
#pragma GCC unroll 8
  for (int p = 0; p < P; ++p) acc[0][p] = acc[1][p] = b;
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r) {
    if (!in[r]) continue;
    const float* row = in[r] + ix0 * C + c0;
#pragma GCC unroll 10
    for (int j = 0; j < N; ++j) {
      const __m512 v = load_input<Edge || !Full>(row + at[j], mk[j]);
#pragma GCC unroll 3
      for (int kx = 0; kx < 3; ++kx) {
        const int p = j - kx;
        if (p < 0 || p >= P) continue;
        if (r < 3) acc[0][p] = _mm512_fmadd_ps(v, w.at(r * 3 + kx), acc[0][p]);
        if (r > 0) acc[1][p] = _mm512_fmadd_ps(v, w.at((r - 1) * 3 + kx), acc[1][p]);
      }
    }
  }
#pragma GCC unroll 8
  for (int p = 0; p < P; ++p) {
    const __m512 o0 = activation_ps(acc[0][p], kind, lo, hi), o1 = activation_ps(acc[1][p], kind, lo, hi);
    if (Full) {
      _mm512_storeu_ps(y0 + p * C + c0, o0);
      _mm512_storeu_ps(y1 + p * C + c0, o1);
    } else {
      _mm512_mask_storeu_ps(y0 + p * C + c0, m, o0);
      _mm512_mask_storeu_ps(y1 + p * C + c0, m, o1);
    }
  }
}

template <bool Full, bool Safe, int... Ps>
__attribute__((target("avx512f"), always_inline)) inline void tail2(int p, std::integer_sequence<int, Ps...>,
                                                                   const float* const* in, int64_t C, int64_t W,
                                                                   int64_t ix0, int64_t c0, __mmask16 m,
                                                                   const TapWeights<3>& w, __m512 b,
                                                                   Act kind, __m512 lo, __m512 hi,
                                                                   float* y0, float* y1) {
  ((p == Ps + 1 ? group2<Ps + 1, true, Full, Safe>(in, C, W, ix0, c0, m, w, b, kind, lo, hi, y0, y1) : void()), ...);
}

// Output rows oy and oy + 1 of a 3x3 stride-1 conv (in: its four input rows), groups of eight
// pixels.
template <bool Full, bool Safe>
__attribute__((target("avx512f"))) void row2_3x3(const DepthwiseShape& s, const float* w, const float* bias,
                                                 Act act, float act_a, float act_b, const float* const* in, float* y0,
                                                 float* y1, int64_t c_begin, int64_t c_end) {
  const int64_t C = s.C, W = s.W, OW = s.OW;
  const Act kind = act;
  const __m512 lo = activation_lo(act, act_a), hi = activation_hi(act_b);
  for (int64_t c0 = c_begin; c0 < c_end; c0 += 16) {
    const __mmask16 m = Full || C - c0 >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (C - c0)) - 1);
    const TapWeights<3> wt(w + c0 * 9);
    const __m512 b = _mm512_loadu_ps(bias + c0);
    int64_t ox = 0;
    for (; ox + 8 <= OW; ox += 8) {
      const int64_t ix0 = ox - s.PL;
      if (ix0 >= 0 && ix0 + 10 <= W)
        group2<8, false, Full, false>(in, C, W, ix0, c0, m, wt, b, kind, lo, hi, y0 + ox * C, y1 + ox * C);
      else
        group2<8, true, Full, Safe>(in, C, W, ix0, c0, m, wt, b, kind, lo, hi, y0 + ox * C, y1 + ox * C);
    }
    if (ox < OW)
      tail2<Full, Safe>(static_cast<int>(OW - ox), std::make_integer_sequence<int, 7>{}, in, C, W, ox - s.PL, c0, m, wt, b,
                  kind, lo, hi, y0 + ox * C, y1 + ox * C);
  }
}

#pragma GCC diagnostic pop

using RowFn = void (*)(const DepthwiseShape&, const float*, const float*, Act, float, float, const float* const*,
                       float*, int64_t, int64_t);
using Row2Fn = void (*)(const DepthwiseShape&, const float*, const float*, Act, float, float, const float* const*,
                        float*, float*, int64_t, int64_t);

// The generic row (row_avx512) loads only pixels inside the row: it is its own Safe form.
template <bool Full, bool Safe>
RowFn pick_row(const DepthwiseShape& s) {
  // Vertical dilation is in the rows the kernel is given (depthwise_rows); horizontal, in its taps.
  if (s.DW == 2 && s.SW == 1 && s.KH == 3 && s.KW == 3) return row_kxk<3, 1, Full, Safe, 2>;
  if (s.DW == 2 && s.SW == 1 && s.KH == 5 && s.KW == 5) return row_kxk<5, 1, Full, Safe, 2>;
  if (s.DW != 1) return row_avx512<0, 0, 0, Full>;
  if (s.KH == 3 && s.KW == 3 && s.SW == 1) return row_kxk<3, 1, Full, Safe>;
  if (s.KH == 3 && s.KW == 3 && s.SW == 2) return row_kxk<3, 2, Full, Safe>;
  if (s.KH == 5 && s.KW == 5 && s.SW == 1) return row_kxk<5, 1, Full, Safe>;
  if (s.KH == 5 && s.KW == 5 && s.SW == 2) return row_kxk<5, 2, Full, Safe>;
  return row_avx512<0, 0, 0, Full>;
}

template <bool Safe>
RowFn pick_row(const DepthwiseShape& s) {
  return s.C % 16 == 0 ? pick_row<true, Safe>(s) : pick_row<false, Safe>(s);
}

template <bool Safe>
Row2Fn pick_row2(const DepthwiseShape& s) {
  if (s.KH != 3 || s.KW != 3 || s.SH != 1 || s.SW != 1 || s.DH != 1 || s.DW != 1) return nullptr;
  return s.C % 16 == 0 ? row2_3x3<true, Safe> : row2_3x3<false, Safe>;
}


}  // namespace depthwise_detail

// Output rows [oy0, oy1) of the conv (row oy0 first, rows of OW * C floats) into y, with the
// activation `act` (parameters a, b) applied when in_registers(act). Input row r (of the H rows;
// the others are zero padding) is at x + (r - x_row0) * W * C: `x` may hold only the rows these
// outputs read; with `ring` > 0, row r is at x + (r % ring) * W * C (row_slot). Only channels
// [c_lo, c_hi) are computed (multiples of 16; c_hi < 0: all of them).
inline void depthwise_rows(const DepthwiseShape& s, const float* w, const float* bias, Act act, float a, float b,
                           const float* x, int64_t x_row0, float* y, int64_t oy0, int64_t oy1, int64_t ring = 0,
                           int64_t c_lo = 0, int64_t c_hi = -1) {
  using namespace depthwise_detail;
  const int64_t row = s.W * s.C, out_row = s.OW * s.C;
  std::array<const float*, kDepthwiseMaxKernelRows> in{};  // runs per band of a chain: no allocation
  // The slots at the ends of what x holds (as far as this call knows): their pixels before the
  // first and after the last may lie outside the buffer, so rows reading them take the Safe form.
  const int64_t last_slot =
      ring > 0 ? ring - 1 : std::min(s.H - 1, (oy1 - 1) * s.SH - s.PT + (s.KH - 1) * s.DH) - x_row0;
  // Points in[0, n) at the input rows iy0, iy0 + step, ...; whether one of them is at an end.
  auto point = [&](const float** to, int64_t n, int64_t iy0, int64_t step) {
    bool end = false;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t iy = iy0 + k * step, slot = row_slot(iy, x_row0, ring);
      const bool inside = iy >= 0 && iy < s.H;
      to[k] = inside ? x + slot * row : nullptr;
      end |= inside && (slot == 0 || slot == last_slot);
    }
    return end;
  };
  const RowFn fn = pick_row<false>(s), fn_safe = pick_row<true>(s);
  // 3x3 stride 1: output rows in pairs (row2_3x3), fewer loads per FMA.
  const Row2Fn fn2 = pick_row2<false>(s), fn2_safe = pick_row2<true>(s);
  const int64_t C16 = (s.C + 15) / 16 * 16;
  // Channel blocks outermost: a block's input rows (KH rows of W cache lines) stay in L1 from
  // one output row to the next, where a row of all channels (28x28x192: 64 KiB for three rows)
  // would not.
  constexpr int64_t kBlocks = 4;  // channel blocks per sweep over the rows
  const int64_t c_end = c_hi < 0 ? C16 : std::min(C16, c_hi);
  for (int64_t c0 = c_lo; c0 < c_end; c0 += 16 * kBlocks) {
    const int64_t c1 = std::min(c_end, c0 + 16 * kBlocks);
    int64_t oy = oy0;
    if (fn2)
      for (; oy + 2 <= oy1; oy += 2) {
        std::array<const float*, 4> in4{};
        (point(in4.data(), 4, oy - s.PT, 1) ? fn2_safe : fn2)(s, w, bias, act, a, b, in4.data(), y + (oy - oy0) * out_row,
                                                           y + (oy + 1 - oy0) * out_row, c0, c1);
      }
    for (; oy < oy1; ++oy)
      (point(in.data(), s.KH, oy * s.SH - s.PT, s.DH) ? fn_safe : fn)(s, w, bias, act, a, b, in.data(),
                                                                 y + (oy - oy0) * out_row, c0, c1);
  }
}

// The depthwise conv of shape `s` (one group per channel, no dilation) on whole NHWC images,
// with the activation A: each image's output rows split across the team. A kiln.ConvChain
// emitted as bands calls it on a band's rows (s.H the rows held, s.PH the pad left above them).
template <Act A>
void depthwise_nhwc_rows(const Conv2dShape& s, const float* x, const float* w, const float* bias, float* y, float a,
                         float b, Team* team = nullptr) {
  const DepthwiseShape d{s.H, s.W, s.C, s.OH, s.OW, s.KH, s.KW, s.SH, s.SW, s.PH, s.PW};
  const int64_t in_image = s.H * s.W * s.C, out_row = s.OW * s.C;
  for (int64_t i = 0; i < s.N; ++i)
    parallel_for(team, s.OH, [&](int64_t r0, int64_t r1) {
      float* yr = y + (i * s.OH + r0) * out_row;
      depthwise_rows(d, w, bias, A, a, b, x + i * in_image, 0, yr, r0, r1);
      if constexpr (!in_registers(A)) activate_all<A>(yr, (r1 - r0) * out_row, a, b);
    });
}

}  // namespace kiln_kernels
