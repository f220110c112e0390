// The stem conv (stem_conv.h). A tile is R output pixels of one row by a block of up to 64
// outputs: R * NV accumulators, and for every tap (kernel row, then KW * C floats along the
// input row) NV weight vectors and R broadcasts of the input. With 27 taps (3x3x3) the loop is
// short, so the tiles of a row reuse the block's weights from L1; tiles inside the row read the
// input in place, the two at its edges a copy of their columns with the zero padding.
#include "backends/cpu/stem_conv.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "backends/cpu/activation_apply.h"
#include "backends/cpu/avx512_activation.h"
#include "backends/cpu/depthwise_conv.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/row_conv.h"
#include "backends/cpu/simd.h"

namespace kiln::backends::cpu {

namespace {

constexpr int64_t kMaxChannels = 8, kMaxTaps = 160;
// Kernel rows a tile reads: planar, one per input channel of each kernel row.
constexpr int64_t kMaxTileRows = kMaxKernelRows * kMaxChannels;
// Floats of an edge tile's copied columns: 14 pixels at stride 4 plus a 16-wide kernel, of 8
// channels (stem_shape keeps within it).
constexpr int64_t kMaxEdge = (13 * 4 + 16) * kMaxChannels;

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
                                                           const ops::Activation& act, __mmask16 tail, int64_t count) {
  constexpr int V = NV * 16;
  const int64_t step = STEP ? STEP : step_arg;
  const __m512 lo = activation_lo(act), hi = activation_hi(act);
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
        const __m512 o = activation_ps(acc[r][v], act.kind, lo, hi);
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
                                                        float* y, const ops::Activation& act, __mmask16 tail) {
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
  const __m512 lo = activation_lo(act), hi = activation_hi(act);
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const __m512 o = activation_ps(_mm512_add_ps(acc[0][v], acc[1][v]), act.kind, lo, hi);
    if (v == NV - 1) _mm512_mask_storeu_ps(y + 16 * v, tail, o);
    else _mm512_storeu_ps(y + 16 * v, o);
  }
}

#pragma GCC diagnostic pop

using StemTileFn = void (*)(const float* const*, int64_t, int64_t, int64_t, int64_t, const float*, const float*,
                            float*, int64_t, const ops::Activation&, __mmask16, int64_t);

template <int NV, int STEP, int... Rs>
constexpr std::array<StemTileFn, sizeof...(Rs)> stem_tiles_of(std::integer_sequence<int, Rs...>) {
  return {&stem_tile<Rs + 1, NV, STEP>...};
}
// STEP: the floats from one pixel's taps to the next's when known at compile time (planar
// stride 2: mobilenet_v2's, efficientnet_b0's and squeezenet1_1's stems), 0 when not.
template <int NV, int STEP = 0>
constexpr auto kStemTiles = stem_tiles_of<NV, STEP>(std::make_integer_sequence<int, kStemRows<NV>>{});

// One output row of one block, run by run of tiles. in[kh] is input row kh of the kernel
// (nullptr in the padding rows outside [kh0, kh1)). Tiles whose taps all fall inside the row
// read it in place; an edge tile reads a copy of its columns with the zero padding around
// them, in `edge` (KH * kMaxEdge floats, this thread's), or with `pixel_edges` (tiles of one
// pixel each there) reads the taps inside the row pixel by pixel.
template <int NV>
void block_row(const StemShape& s, const float* const* in, int64_t kh0, int64_t kh1, const float* w,
               const float* bias, float* y, const ops::Activation& act, __mmask16 tail,
               const std::vector<StemConv::TileRun>& runs, float* edge, bool pixel_edges) {
  const int64_t step = s.SW * s.C;
  std::array<const float*, kMaxTileRows> at;  // rows [kh0, kh1) set below, the only ones read
  for (const StemConv::TileRun& run : runs) {
    const int64_t p = run.p, pixels = run.pixels;
    const int64_t col0 = p * s.SW - s.PL, col1 = (p + pixels - 1) * s.SW - s.PL + s.KW;
    const bool inside = run.inside;
    if (!inside && pixel_edges) {
      for (int64_t q = p; q < p + pixels * run.count; ++q)
        stem_edge_pixel<NV>(s, in, kh0, kh1, q, w, bias, y + q * s.OC, act, tail);
      continue;
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
    tile(at.data(), kh0, kh1, s.KW * s.C, step, w, bias, y + p * s.OC, s.OC, act, tail, run.count);
  }
}

std::unique_ptr<Kernel> make_stem_conv(const ir::Node& node, int threads) {
  std::unique_ptr<StemShape> s = stem_shape(node);
  const std::optional<ops::Activation> act = s ? epilogue_of(node) : std::nullopt;
  if (!act) return nullptr;
  const ir::Value* b = node.input(2);
  StemConv conv(*s, node.input(1)->constant().data<float>(), b ? b->constant().data<float>() : nullptr, *act);
  return std::make_unique<RowConvKernel<StemConv>>(std::move(conv), *row_conv_geometry(node),
                                                    node.input(0)->type.static_dims()[0], threads);
}

}  // namespace

StemConv::StemConv(const StemShape& s, const float* weights, const float* bias, ops::Activation act, bool planar)
    : s_(s), planar_(planar), tiles_(s), act_(act) {
  if (s.KH < 1 || s.KH > kMaxKernelRows) throw Error("stem conv: kernel height out of range");
  if (s.C < 1 || s.C > kMaxChannels) throw Error("stem conv: input channels out of range");
  if (planar) tiles_.KH = s.KH * s.C, tiles_.C = 1;
  const int64_t taps = s.KW * s.C, vectors = round16(s.OC) / 16, nblocks = (vectors + 3) / 4;
  bias_.assign(static_cast<size_t>(vectors * 16), 0.f);
  if (bias) std::copy(bias, bias + s.OC, bias_.begin());
  // Blocks of equal width (as pointwise_conv.cpp's), the partial vector last.
  for (int64_t i = 0, n0 = 0; n0 < s.OC; ++i) {
    const int64_t bv = vectors * (i + 1) / nblocks - vectors * i / nblocks;
    const int64_t valid = std::min<int64_t>(16 * bv, s.OC - n0), width = round16(valid);
    blocks_.push_back(Block{n0, width / 16, s.KH * taps * n0, static_cast<uint16_t>((1u << (valid - (width - 16))) - 1)});
    n0 += valid;
  }
  w_ = packed_floats(static_cast<size_t>(s.KH * taps * vectors * 16), planar ? "kiln_stem/planar" : "kiln_stem/taps",
                     [&](float* w) {
                       for (const Block& blk : blocks_) {
                         const int64_t n0 = blk.n0, width = 16 * blk.nv, valid = std::min(width, s.OC - n0);
                         for (int64_t kh = 0; kh < s.KH; ++kh)
                           for (int64_t kw = 0; kw < s.KW; ++kw)
                             for (int64_t c = 0; c < s.C; ++c)
                               for (int64_t l = 0; l < valid; ++l)
                                 w[blk.offset + (planar ? (kh * s.C + c) * s.KW + kw : kh * taps + kw * s.C + c) * width + l] =
                                     weights[(((n0 + l) * s.C + c) * s.KH + kh) * s.KW + kw];
                       }
                     });
  // Tiles of equal size along a row (a 1-pixel tile costs about as much as a full one), the
  // taller first; runs of equal tiles inside the row, each edge tile alone. Planar, the pixels
  // whose taps cross an edge are tiles of their own, computed pixel by pixel (block_row).
  const int64_t edge_lo = planar ? std::min(s.OW, (s.PL + s.SW - 1) / s.SW) : 0;
  const int64_t edge_hi = !planar                  ? s.OW
                          : s.W + s.PL - s.KW < 0 ? edge_lo
                                                  : std::clamp((s.W + s.PL - s.KW) / s.SW + 1, edge_lo, s.OW);
  for (int64_t nv = 1; nv <= 4; ++nv) {
    std::vector<TileRun>& runs = runs_[nv - 1];
    for (int64_t p = 0; p < edge_lo; ++p) runs.push_back({p, 1, 1, false});
    const int64_t n = edge_hi - edge_lo;
    const int64_t count = (n + stem_rows(nv) - 1) / stem_rows(nv), height = count ? n / count : 0,
                  taller = count ? n % count : 0;
    for (int64_t t = 0, p = edge_lo; t < count; ++t) {
      const int64_t pixels = t < taller ? height + 1 : height;
      const bool inside = p * s.SW - s.PL >= 0 && (p + pixels - 1) * s.SW - s.PL + s.KW <= s.W;
      if (inside && !runs.empty() && runs.back().inside && runs.back().pixels == pixels)
        ++runs.back().count;
      else
        runs.push_back({p, pixels, 1, inside});
      p += pixels;
    }
    for (int64_t p = edge_hi; p < s.OW; ++p) runs.push_back({p, 1, 1, false});
  }
}

void StemConv::rows(const float* x, int64_t x_row0, float* y, int64_t oy0, int64_t oy1, int64_t ring) const {
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
      if (!planar_) in[kh] = x + row_slot(iy, x_row0, ring) * row;
      else
        for (int64_t c = 0; c < planes; ++c) in[kh * planes + c] = x + (c * s_.H + iy) * s_.W;
    }
    kh0 *= planes, kh1 *= planes;
    float* yr = y + (oy - oy0) * out_row;
    if (kh0 >= kh1) {  // every kernel row in the padding: the bias alone
      for (int64_t p = 0; p < s_.OW; ++p) std::copy(bias_.begin(), bias_.begin() + s_.OC, yr + p * s_.OC);
      apply_activation(act_, yr, out_row);
      continue;
    }
    for (const Block& b : blocks_) {
      const float* w = w_.get() + b.offset;
      const float* bias = bias_.data() + b.n0;
      const auto& tiles = runs_[b.nv - 1];
      switch (b.nv) {
        case 4: block_row<4>(tiles_, in.data(), kh0, kh1, w, bias, yr + b.n0, act_, b.tail, tiles, edge.data(), planar_); break;
        case 3: block_row<3>(tiles_, in.data(), kh0, kh1, w, bias, yr + b.n0, act_, b.tail, tiles, edge.data(), planar_); break;
        case 2: block_row<2>(tiles_, in.data(), kh0, kh1, w, bias, yr + b.n0, act_, b.tail, tiles, edge.data(), planar_); break;
        default: block_row<1>(tiles_, in.data(), kh0, kh1, w, bias, yr + b.n0, act_, b.tail, tiles, edge.data(), planar_);
      }
    }
    if (!activation_in_registers(act_)) apply_activation(act_, yr, out_row);
  }
}

std::unique_ptr<StemShape> stem_shape(const ir::Node& node) {
  if (!has_avx512()) return nullptr;
  const std::optional<RowConvGeometry> g = row_conv_geometry(node);
  if (!g || g->G != 1 || node.input(1)->type.static_dims()[1] != g->C || g->C > kMaxChannels ||
      g->KH * g->KW * g->C > kMaxTaps)
    return nullptr;
  if (g->KH * g->KW == 1 || g->KH > kMaxKernelRows || g->KW > 16 || g->SW > 4) return nullptr;  // 1x1: kiln_pointwise's
  auto s = std::make_unique<StemShape>();
  s->H = g->H, s->W = g->W, s->C = g->C, s->OH = g->OH, s->OW = g->OW, s->OC = g->OC, s->KH = g->KH, s->KW = g->KW;
  s->SH = g->SH, s->SW = g->SW, s->PT = g->PT, s->PL = g->PL;
  return s;
}

void add_stem_conv_kernels(std::vector<KernelFactory>& table) {
  table.push_back({"kiln", "FusedConv", make_stem_conv, "kiln_stem_conv"});
}

}  // namespace kiln::backends::cpu
