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

namespace kiln::backends::cpu {

namespace {

const bool kHasAvx512 = __builtin_cpu_supports("avx512f");

constexpr int64_t kMaxChannels = 8, kMaxTaps = 160;
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
// such tiles one after another, one call per run as pointwise_conv.cpp's tiles (there a call
// per tile cost 3-4% of mobilenet_v2; here the same speed within the noise).
template <int R, int NV>
__attribute__((target("avx512f"), noinline)) void stem_tile(const float* const* in, int64_t kh0, int64_t kh1,
                                                           int64_t taps, int64_t step, const float* __restrict w,
                                                           const float* bias, float* __restrict y, int64_t ldy,
                                                           const ops::Activation& act, __mmask16 tail, int64_t count) {
  constexpr int V = NV * 16;
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
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
          const __m512 a = _mm512_set1_ps(x[r * step + j]);
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

#pragma GCC diagnostic pop

using StemTileFn = void (*)(const float* const*, int64_t, int64_t, int64_t, int64_t, const float*, const float*,
                            float*, int64_t, const ops::Activation&, __mmask16, int64_t);

template <int NV, int... Rs>
constexpr std::array<StemTileFn, sizeof...(Rs)> stem_tiles_of(std::integer_sequence<int, Rs...>) {
  return {&stem_tile<Rs + 1, NV>...};
}
template <int NV>
constexpr auto kStemTiles = stem_tiles_of<NV>(std::make_integer_sequence<int, kStemRows<NV>>{});

// One output row of one block, run by run of tiles. in[kh] is input row kh of the kernel
// (nullptr in the padding rows outside [kh0, kh1)). Tiles whose taps all fall inside the row
// read it in place; an edge tile reads a copy of its columns with the zero padding around
// them, in `edge` (KH * kMaxEdge floats, this thread's).
template <int NV>
void block_row(const StemShape& s, const float* const* in, int64_t kh0, int64_t kh1, const float* w,
               const float* bias, float* y, const ops::Activation& act, __mmask16 tail,
               const std::vector<StemConv::TileRun>& runs, float* edge) {
  const int64_t step = s.SW * s.C;
  std::array<const float*, kMaxKernelRows> at{};
  for (const StemConv::TileRun& run : runs) {
    const int64_t p = run.p, pixels = run.pixels;
    const int64_t col0 = p * s.SW - s.PL, col1 = (p + pixels - 1) * s.SW - s.PL + s.KW;
    const bool inside = run.inside;
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
    kStemTiles<NV>[pixels - 1](at.data(), kh0, kh1, s.KW * s.C, step, w, bias, y + p * s.OC, s.OC, act, tail,
                               run.count);
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

StemConv::StemConv(const StemShape& s, const float* weights, const float* bias, ops::Activation act)
    : s_(s), act_(act) {
  if (s.KH < 1 || s.KH > kMaxKernelRows) throw Error("stem conv: kernel height out of range");
  const int64_t taps = s.KW * s.C, vectors = round16(s.OC) / 16, nblocks = (vectors + 3) / 4;
  w_ = aligned_floats(static_cast<size_t>(s.KH * taps * vectors * 16));
  bias_.assign(static_cast<size_t>(vectors * 16), 0.f);
  if (bias) std::copy(bias, bias + s.OC, bias_.begin());
  // Blocks of equal width (as pointwise_conv.cpp's), the partial vector last.
  for (int64_t i = 0, n0 = 0; n0 < s.OC; ++i) {
    const int64_t bv = vectors * (i + 1) / nblocks - vectors * i / nblocks;
    const int64_t valid = std::min<int64_t>(16 * bv, s.OC - n0), width = round16(valid);
    const Block blk{n0, width / 16, s.KH * taps * n0, static_cast<uint16_t>((1u << (valid - (width - 16))) - 1)};
    for (int64_t kh = 0; kh < s.KH; ++kh)
      for (int64_t kw = 0; kw < s.KW; ++kw)
        for (int64_t c = 0; c < s.C; ++c)
          for (int64_t l = 0; l < valid; ++l)
            w_.get()[blk.offset + (kh * taps + kw * s.C + c) * width + l] =
                weights[(((n0 + l) * s.C + c) * s.KH + kh) * s.KW + kw];
    blocks_.push_back(blk);
    n0 += valid;
  }
  // Tiles of equal size along a row (a 1-pixel tile costs about as much as a full one), the
  // taller first; runs of equal tiles inside the row, each edge tile alone.
  for (int64_t nv = 1; nv <= 4; ++nv) {
    const int64_t count = (s.OW + stem_rows(nv) - 1) / stem_rows(nv), height = s.OW / count,
                  taller = s.OW % count;
    for (int64_t t = 0, p = 0; t < count; ++t) {
      const int64_t pixels = t < taller ? height + 1 : height;
      const bool inside = p * s.SW - s.PL >= 0 && (p + pixels - 1) * s.SW - s.PL + s.KW <= s.W;
      std::vector<TileRun>& runs = runs_[nv - 1];
      if (inside && !runs.empty() && runs.back().inside && runs.back().pixels == pixels)
        ++runs.back().count;
      else
        runs.push_back({p, pixels, 1, inside});
      p += pixels;
    }
  }
}

void StemConv::rows(const float* x, int64_t x_row0, float* y, int64_t oy0, int64_t oy1, int64_t ring) const {
  const int64_t row = s_.W * s_.C, out_row = s_.OW * s_.OC;
  thread_local std::vector<float> edge;  // per thread: rows() runs on every thread of a team
  if (edge.size() < static_cast<size_t>(kMaxKernelRows * kMaxEdge)) edge.resize(kMaxKernelRows * kMaxEdge);
  std::array<const float*, kMaxKernelRows> in{};
  for (int64_t oy = oy0; oy < oy1; ++oy) {
    int64_t kh0 = s_.KH, kh1 = 0;
    for (int64_t kh = 0; kh < s_.KH; ++kh) {
      const int64_t iy = oy * s_.SH - s_.PT + kh;
      if (iy < 0 || iy >= s_.H) continue;
      kh0 = std::min(kh0, kh), kh1 = kh + 1;
      in[kh] = x + row_slot(iy, x_row0, ring) * row;
    }
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
        case 4: block_row<4>(s_, in.data(), kh0, kh1, w, bias, yr + b.n0, act_, b.tail, tiles, edge.data()); break;
        case 3: block_row<3>(s_, in.data(), kh0, kh1, w, bias, yr + b.n0, act_, b.tail, tiles, edge.data()); break;
        case 2: block_row<2>(s_, in.data(), kh0, kh1, w, bias, yr + b.n0, act_, b.tail, tiles, edge.data()); break;
        default: block_row<1>(s_, in.data(), kh0, kh1, w, bias, yr + b.n0, act_, b.tail, tiles, edge.data());
      }
    }
    if (!activation_in_registers(act_)) apply_activation(act_, yr, out_row);
  }
}

std::unique_ptr<StemShape> stem_shape(const ir::Node& node) {
  if (!kHasAvx512) return nullptr;
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
