// A channels-last direct convolution for few input channels, in AVX-512: the stems of image
// models (3x3/2 3 -> 32, 7x7/2 3 -> 64). kiln's CPU backend runs it on whole tensors and as a
// kiln.ConvChain's first layer, an output row at a time from whatever input rows are at hand;
// emitted C++ calls it for the same convs.
//
// A tile is R output pixels of one row by a block of up to 64 outputs: R * NV accumulators, and
// for every tap (kernel row, then KW * C floats along the input row) NV weight vectors and R
// broadcasts of the input. With 27 taps (3x3x3) the loop is short, so the tiles of a row reuse
// the block's weights from L1; tiles inside the row read the input in place, the two at its
// edges a copy of their columns with the zero padding. `planar`: the input is a whole NCHW
// image instead of NHWC rows (the model's input as given, where a Transpose to NHWC would
// otherwise run first): each channel's row is then a kernel row of its own, of KW taps.
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

// What StemLayout takes: input channels, taps (KH * KW * C), kernel rows.
constexpr int64_t kStemMaxChannels = 8, kStemMaxTaps = 160, kStemMaxKernelRows = 16;

struct StemShape {
  int64_t H = 0, W = 0, C = 0, OH = 0, OW = 0, OC = 0, KH = 0, KW = 0, SH = 1, SW = 1, PT = 0, PL = 0;
};

// Whether StemLayout runs shape s: at most kStemMaxChannels input channels and kStemMaxTaps
// taps, kernels of more than one tap, at most 16 rows and 16 wide, strides up to 4 along rows.
inline bool stem_fits(const StemShape& s) {
  return s.C >= 1 && s.C <= kStemMaxChannels && s.KH * s.KW * s.C <= kStemMaxTaps && s.KH * s.KW > 1 && s.KH >= 1 &&
         s.KH <= kStemMaxKernelRows && s.KW <= 16 && s.SW >= 1 && s.SW <= 4;
}

namespace stem_detail {
// Internal linkage per including file (as pointwise_rows.h's tiles).
namespace {

// Kernel rows a tile reads: planar, one per input channel of each kernel row.
constexpr int64_t kMaxTileRows = kStemMaxKernelRows * kStemMaxChannels;
// Floats of an edge tile's copied columns: 14 pixels at stride 4 plus a 16-wide kernel, of 8
// channels (stem_fits keeps within it).
constexpr int64_t kMaxEdge = (13 * 4 + 16) * kStemMaxChannels;

// Pixels per tile for NV output vectors: R * NV accumulators, NV weights and a broadcast within
// the 32 registers.
constexpr int stem_rows(int64_t nv) { return nv == 4 ? 6 : nv == 3 ? 9 : 14; }
template <int NV>
constexpr int kStemRows = stem_rows(NV);

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// y[R pixels][NV * 16] = act(bias + sum over kernel rows kh in [kh0, kh1) and taps j of
// in[kh][r * step + j] * w[kh][j]); in[kh] points at the tile's first pixel in row kh. `count`
// such tiles one after another, one call per run as pointwise_conv.cpp's tiles, which spreads a
// call's set-up over the run.
template <int R, int NV, int STEP = 0>
__attribute__((target("avx512f"), noinline)) void stem_tile(const float* const* in, int64_t kh0, int64_t kh1,
                                                           int64_t taps, int64_t step_arg, const float* __restrict w,
                                                           const float* bias, float* __restrict y, int64_t ldy,
                                                           Act act, float act_a, float act_b, __mmask16 tail, int64_t count) {
  constexpr int V = NV * 16;
  const int64_t step = STEP ? STEP : step_arg;
  const __m512 lo = activation_lo(act, act_a), hi = activation_hi(act_b);
  for (int64_t t = 0; t < count; ++t, y += R * ldy) {
    __m512 acc[R][NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const __m512 b = _mm512_loadu_ps(bias + 16 * v);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) acc[r][v] = b;
    }
    for (int64_t kh = kh0; kh < kh1; ++kh) {
      const float* __restrict x = in[kh] + t * R * step;
      const float* wk = w + kh * taps * V;
      for (int64_t j = 0; j < taps; ++j) {
        __m512 b[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) b[v] = _mm512_load_ps(wk + j * V + 16 * v);
        // Opaque to the optimizer: else it sees tap j + step of pixel r as tap j of pixel r + 1
        // and carries the values between iterations through the stack (predictive commoning),
        // or keeps R pointers in registers and spills; here R loads at fixed offsets from one.
        const float* xj = x + j;
        asm("" : "+r"(xj));
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
          const __m512 a = _mm512_set1_ps(xj[r * step]);
#pragma GCC unroll 4
          for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(a, b[v], acc[r][v]);
        }
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        const __m512 o = activation_ps(acc[r][v], act, lo, hi);
        if (v == NV - 1) _mm512_mask_storeu_ps(y + r * ldy + 16 * v, tail, o);
        else _mm512_storeu_ps(y + r * ldy + 16 * v, o);
      }
  }
}

// One output pixel whose taps cross the row's edge, from the taps inside the row, read where
// they are (planar: copying an edge tile's columns for each of its nine kernel rows cost a
// quarter of mobilenet_v2's stem). Two sets of sums, over alternate kernel rows, so that the
// chains of FMAs overlap.
template <int NV>
__attribute__((target("avx512f"))) void stem_edge_pixel(const StemShape& s, const float* const* in, int64_t kh0,
                                                        int64_t kh1, int64_t p, const float* w, const float* bias,
                                                        float* y, Act act, float act_a, float act_b, __mmask16 tail) {
  constexpr int V = NV * 16;
  const int64_t taps = s.KW * s.C, col0 = p * s.SW - s.PL;
  const int64_t j0 = std::max<int64_t>(0, -col0) * s.C, j1 = std::min(s.KW, s.W - col0) * s.C;
  __m512 acc[2][NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) acc[0][v] = _mm512_loadu_ps(bias + 16 * v), acc[1][v] = _mm512_setzero_ps();
  for (int64_t kh = kh0; kh < kh1; ++kh) {
    const float* x = in[kh];
    const float* wk = w + kh * taps * V;
    __m512(&a)[NV] = acc[kh & 1];
    for (int64_t j = j0; j < j1; ++j) {
      const __m512 xv = _mm512_set1_ps(x[col0 * s.C + j]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) a[v] = _mm512_fmadd_ps(xv, _mm512_load_ps(wk + j * V + 16 * v), a[v]);
    }
  }
  const __m512 lo = activation_lo(act, act_a), hi = activation_hi(act_b);
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const __m512 o = activation_ps(_mm512_add_ps(acc[0][v], acc[1][v]), act, lo, hi);
    if (v == NV - 1) _mm512_mask_storeu_ps(y + 16 * v, tail, o);
    else _mm512_storeu_ps(y + 16 * v, o);
  }
}

#pragma GCC diagnostic pop

using StemTileFn = void (*)(const float* const*, int64_t, int64_t, int64_t, int64_t, const float*, const float*,
                            float*, int64_t, Act, float, float, __mmask16, int64_t);

template <int NV, int STEP, int... Rs>
constexpr std::array<StemTileFn, sizeof...(Rs)> stem_tiles_of(std::integer_sequence<int, Rs...>) {
  return {&stem_tile<Rs + 1, NV, STEP>...};
}
// STEP: the floats from one pixel's taps to the next's when known at compile time (planar
// stride 2: mobilenet_v2's, efficientnet_b0's and squeezenet1_1's stems), 0 when not.
template <int NV, int STEP = 0>
constexpr auto kStemTiles = stem_tiles_of<NV, STEP>(std::make_integer_sequence<int, kStemRows<NV>>{});

// `count` tiles of `pixels` output pixels from pixel p along a row; `inside`: their taps all lie
// inside the input row.
struct TileRun {
  int64_t p, pixels, count;
  bool inside;
};

// The tiles of a row for blocks of nv vectors: of equal size along the row (a 1-pixel tile
// costs about as much as a full one), the taller first; runs of equal tiles inside the row,
// each edge tile alone; the pixels before edge_lo and from edge_hi on (planar: those whose
// taps cross an edge) tiles of one pixel. Computed as they are walked (no allocation).
struct Runs {
  const StemShape& s;
  int64_t nv, edge_lo, edge_hi;
  template <typename F>
  void each(F&& f) const {
    for (int64_t p = 0; p < edge_lo; ++p) f(TileRun{p, 1, 1, false});
    const int64_t n = edge_hi - edge_lo;
    const int64_t count = (n + stem_rows(nv) - 1) / stem_rows(nv), height = count ? n / count : 0,
                  taller = count ? n % count : 0;
    TileRun run{0, 0, 0, false};
    for (int64_t t = 0, p = edge_lo; t < count; ++t) {
      const int64_t pixels = t < taller ? height + 1 : height;
      const bool inside = p * s.SW - s.PL >= 0 && (p + pixels - 1) * s.SW - s.PL + s.KW <= s.W;
      if (inside && run.count && run.inside && run.pixels == pixels) {
        ++run.count;
      } else {
        if (run.count) f(run);
        run = TileRun{p, pixels, 1, inside};
      }
      p += pixels;
    }
    if (run.count) f(run);
    for (int64_t p = edge_hi; p < s.OW; ++p) f(TileRun{p, 1, 1, false});
  }
};

// One output row of one block, run by run of tiles. in[kh] is input row kh of the kernel
// (nullptr in the padding rows outside [kh0, kh1)). Tiles whose taps all fall inside the row
// read it in place; an edge tile reads a copy of its columns with the zero padding around
// them, in `edge` (KH * kMaxEdge floats, this thread's), or with `pixel_edges` (tiles of one
// pixel each there) reads the taps inside the row pixel by pixel.
template <int NV>
void block_row(const StemShape& s, const float* const* in, int64_t kh0, int64_t kh1, const float* w,
               const float* bias, float* y, Act act, float act_a, float act_b, __mmask16 tail,
               const Runs& runs, float* edge, bool pixel_edges) {
  const int64_t step = s.SW * s.C;
  std::array<const float*, kMaxTileRows> at;  // rows [kh0, kh1) set below, the only ones read
  runs.each([&](const TileRun& run) {
    const int64_t p = run.p, pixels = run.pixels;
    const int64_t col0 = p * s.SW - s.PL, col1 = (p + pixels - 1) * s.SW - s.PL + s.KW;
    const bool inside = run.inside;
    if (!inside && pixel_edges) {
      for (int64_t q = p; q < p + pixels * run.count; ++q)
        stem_edge_pixel<NV>(s, in, kh0, kh1, q, w, bias, y + q * s.OC, act, act_a, act_b, tail);
      return;
    }
    for (int64_t kh = kh0; kh < kh1; ++kh) {
      if (inside) {
        at[kh] = in[kh] + col0 * s.C;
        continue;
      }
      float* e = edge + kh * kMaxEdge;
      const int64_t a = std::max<int64_t>(col0, 0), b = std::min(col1, s.W);
      std::fill(e, e + (col1 - col0) * s.C, 0.f);
      if (a < b) std::memcpy(e + (a - col0) * s.C, in[kh] + a * s.C, (b - a) * s.C * sizeof(float));
      at[kh] = e;
    }
    const StemTileFn tile = step == 2 ? kStemTiles<NV, 2>[pixels - 1] : kStemTiles<NV>[pixels - 1];
    tile(at.data(), kh0, kh1, s.KW * s.C, step, w, bias, y + p * s.OC, s.OC, act, act_a, act_b, tail, run.count);
  });
}


}  // namespace
}  // namespace stem_detail

// How a stem conv of shape s runs: its blocks of up to 64 outputs (of equal width, the partial
// vector last, as pointwise_rows.h's), their packed weights, its tiles. Plain arithmetic, no
// allocation: emitted code builds one per call.
class StemLayout {
 public:
  struct Block {
    int64_t n0, nv, offset;
    __mmask16 tail;  // the last vector's valid outputs
  };

  StemLayout(const StemShape& s, bool planar)
      : s_(s), planar_(planar), tiles_(s), vectors_((s.OC + 15) / 16), blocks_((vectors_ + 3) / 4) {
    if (planar) tiles_.KH = s.KH * s.C, tiles_.C = 1;
    edge_lo_ = planar ? std::min(s.OW, (s.PL + s.SW - 1) / s.SW) : 0;
    edge_hi_ = !planar                  ? s.OW
               : s.W + s.PL - s.KW < 0 ? edge_lo_
                                       : std::clamp((s.W + s.PL - s.KW) / s.SW + 1, edge_lo_, s.OW);
  }

  const StemShape& shape() const { return s_; }
  int64_t blocks() const { return blocks_; }
  Block block(int64_t i) const {
    const int64_t n0 = 16 * (vectors_ * i / blocks_), n1 = i + 1 < blocks_ ? 16 * (vectors_ * (i + 1) / blocks_) : s_.OC;
    const int64_t valid = n1 - n0, width = (valid + 15) / 16 * 16;
    return Block{n0, width / 16, s_.KH * s_.KW * s_.C * n0, static_cast<__mmask16>((1u << (valid - (width - 16))) - 1)};
  }
  // Floats of the packed weights, and of the bias rows() reads (OC rounded up to 16).
  int64_t packed_size() const { return s_.KH * s_.KW * s_.C * vectors_ * 16; }
  int64_t bias_size() const { return vectors_ * 16; }
  // Weights [OC][C][KH][KW] (ONNX) into out (packed_size floats, 64-byte aligned): per block
  // [KH][KW * C][nv * 16], planar [KH][C][KW][nv * 16].
  void pack(const float* weights, float* out) const {
    const StemShape& s = s_;
    const int64_t taps = s.KW * s.C;
    for (int64_t i = 0; i < blocks_; ++i) {
      const Block blk = block(i);
      const int64_t n0 = blk.n0, width = 16 * blk.nv, valid = std::min(width, s.OC - n0);
      float* w = out + blk.offset;
      std::fill(w, w + s.KH * taps * width, 0.f);
      for (int64_t kh = 0; kh < s.KH; ++kh)
        for (int64_t kw = 0; kw < s.KW; ++kw)
          for (int64_t c = 0; c < s.C; ++c)
            for (int64_t l = 0; l < valid; ++l)
              w[(planar_ ? (kh * s.C + c) * s.KW + kw : kh * taps + kw * s.C + c) * width + l] =
                  weights[(((n0 + l) * s.C + c) * s.KH + kh) * s.KW + kw];
    }
  }

  // Output rows [oy0, oy1) to y (row oy0 first, rows of OW * OC floats), with the activation act
  // (parameters a, b) applied when in_registers(act). Input row r (of the H rows; the others are
  // zero padding) is at x + (r - x_row0) * W * C, or with `ring` > 0 at x + (r % ring) * W * C
  // (row_slot); planar: channel c's row r at x + (c * H + r) * W. `bias`: bias_size floats.
  void rows(const float* packed, const float* bias, Act act, float a, float b, const float* x, int64_t x_row0, float* y,
            int64_t oy0, int64_t oy1, int64_t ring = 0) const {
    using namespace stem_detail;
    const int64_t row = s_.W * s_.C, out_row = s_.OW * s_.OC;
    thread_local std::vector<float> edge;  // per thread: rows() runs on every thread of a team
    if (edge.size() < static_cast<size_t>(tiles_.KH * kMaxEdge)) edge.resize(tiles_.KH * kMaxEdge);
    std::array<const float*, kMaxTileRows> in{};
    const int64_t planes = planar_ ? s_.C : 1;
    for (int64_t oy = oy0; oy < oy1; ++oy) {
      int64_t kh0 = s_.KH, kh1 = 0;
      for (int64_t kh = 0; kh < s_.KH; ++kh) {
        const int64_t iy = oy * s_.SH - s_.PT + kh;
        if (iy < 0 || iy >= s_.H) continue;
        kh0 = std::min(kh0, kh), kh1 = kh + 1;
        if (!planar_) in[kh] = x + (ring > 0 ? iy % ring : iy - x_row0) * row;
        else
          for (int64_t c = 0; c < planes; ++c) in[kh * planes + c] = x + (c * s_.H + iy) * s_.W;
      }
      kh0 *= planes, kh1 *= planes;
      float* yr = y + (oy - oy0) * out_row;
      if (kh0 >= kh1) {  // every kernel row in the padding: the bias alone
        for (int64_t p = 0; p < s_.OW; ++p)
          for (int64_t n = 0; n < s_.OC; ++n) yr[p * s_.OC + n] = in_registers(act) ? activate(act, bias[n], a, b) : bias[n];
        continue;
      }
      for (int64_t i = 0; i < blocks_; ++i) {
        const Block bl = block(i);
        const float* w = packed + bl.offset;
        const Runs runs{tiles_, bl.nv, edge_lo_, edge_hi_};
        float* yb = yr + bl.n0;
        switch (bl.nv) {
          case 4: block_row<4>(tiles_, in.data(), kh0, kh1, w, bias + bl.n0, yb, act, a, b, bl.tail, runs, edge.data(), planar_); break;
          case 3: block_row<3>(tiles_, in.data(), kh0, kh1, w, bias + bl.n0, yb, act, a, b, bl.tail, runs, edge.data(), planar_); break;
          case 2: block_row<2>(tiles_, in.data(), kh0, kh1, w, bias + bl.n0, yb, act, a, b, bl.tail, runs, edge.data(), planar_); break;
          default: block_row<1>(tiles_, in.data(), kh0, kh1, w, bias + bl.n0, yb, act, a, b, bl.tail, runs, edge.data(), planar_);
        }
      }
    }
  }

 private:
  StemShape s_;
  bool planar_;
  // What the tiles see: s_, or planar, one input channel and KH * C kernel rows (row kh * C + c).
  StemShape tiles_;
  int64_t vectors_, blocks_, edge_lo_ = 0, edge_hi_ = 0;
};

// The stem conv of shape `s` (channels-last, group 1, no dilation, stem_fits) on whole NHWC
// images with the activation A: each image's output rows split across the team. A
// kiln.ConvChain emitted as bands calls it on a band's rows (s.H the rows held, s.PH the pad
// left above them).
template <Act A>
void stem_conv_nhwc(const Conv2dShape& s, const float* x, const float* w, const float* bias, float* y, float a, float b,
                    Team* team = nullptr) {
  const StemLayout L(StemShape{s.H, s.W, s.C, s.OH, s.OW, s.M, s.KH, s.KW, s.SH, s.SW, s.PH, s.PW}, false);
  const int64_t in_image = s.H * s.W * s.C, out_row = s.OW * s.M;
  for (int64_t i = 0; i < s.N; ++i)
    parallel_for(team, s.OH, [&](int64_t r0, int64_t r1) {
      float* yr = y + (i * s.OH + r0) * out_row;
      L.rows(w, bias, A, a, b, x + i * in_image, 0, yr, r0, r1);
      if constexpr (!in_registers(A)) activate_all<A>(yr, (r1 - r0) * out_row, a, b);
    });
}

}  // namespace kiln_kernels
