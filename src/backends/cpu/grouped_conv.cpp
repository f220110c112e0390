// Narrow-group convolution on channels-last activations (grouped_conv.h). An output row goes in
// segments of up to 8 pixels whose accumulators stay in registers; for each kernel row and input
// channel of the group, the segment's input pixels are loaded (masked to zero outside the
// image) and spread once, then serve all three kernel columns. Channels go 16 at a time; where
// they are not a multiple of 16 (RegNet's 104 and 440: groups of 8), the last vector holds the
// remaining groups in its low lanes, its loads and stores masked to them.
#include "backends/cpu/grouped_conv.h"

#include <immintrin.h>

#include <array>
#include <utility>

#include "backends/cpu/activation_apply.h"
#include "backends/cpu/avx512_activation.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/simd.h"

namespace kiln::backends::cpu {

namespace {

constexpr int kSegment = 8;  // output pixels whose accumulators a segment holds

struct Args {
  const float* x;     // the image, [H][W][C]
  const float* w;     // packed weights
  const float* bias;  // [C]
  int64_t H, W, C, PT, PL, SH;
  __mmask16 last;  // the lanes of the last channel vector that hold channels
  ops::Activation act;
  bool in_registers;
};

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// Lane i of each group of CG lanes, in all of that group's lanes; `i` is a constant after
// unrolling, so the in-lane forms take their immediates.
template <int CG>
__attribute__((target("avx512f"), always_inline)) inline __m512 spread(__m512 x, int i, __m512i index) {
  if constexpr (CG == 2) {
    return i == 0 ? _mm512_permute_ps(x, 0xA0) : _mm512_permute_ps(x, 0xF5);
  } else if constexpr (CG == 4) {
    switch (i) {
      case 0: return _mm512_permute_ps(x, 0x00);
      case 1: return _mm512_permute_ps(x, 0x55);
      case 2: return _mm512_permute_ps(x, 0xAA);
      default: return _mm512_permute_ps(x, 0xFF);
    }
  } else {
    return _mm512_permutexvar_ps(index, x);
  }
}

// Output pixels [ox0, ox0 + P) of row oy into y (the output row), all channel vectors.
template <int CG, int S, int P>
__attribute__((target("avx512f"))) void segment(const Args& a, int64_t oy, int64_t ox0, float* y) {
  constexpr int kSpan = (P - 1) * S + 3;  // input pixels the segment reads in a kernel row
  const int64_t ix0 = ox0 * S - a.PL;
  // Input pixel j's offset in its row, and whether it lies inside the image; one outside reads
  // as zeros from the row's first pixel (a masked load at an address inside the tensor).
  std::array<__mmask16, kSpan> inside;
  std::array<int64_t, kSpan> at;
  for (int j = 0; j < kSpan; ++j) {
    const bool in = ix0 + j >= 0 && ix0 + j < a.W;
    inside[j] = in ? 0xFFFF : 0;
    at[j] = in ? (ix0 + j) * a.C : 0;
  }
  const __m512i group_base =
      _mm512_and_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi32(~(CG - 1)));
  const __m512 lo = activation_lo(a.act), hi = activation_hi(a.act);
  const int64_t vectors = (a.C + 15) / 16;
  for (int64_t v = 0; v < vectors; ++v) {
    const __mmask16 lanes = v + 1 < vectors ? __mmask16{0xFFFF} : a.last;
    __m512 acc[P];
    const __m512 b = _mm512_loadu_ps(a.bias + v * 16);
    for (int p = 0; p < P; ++p) acc[p] = b;
    const float* wv = a.w + v * 9 * CG * 16;
    for (int ky = 0; ky < 3; ++ky) {
      const int64_t iy = oy * a.SH - a.PT + ky;
      if (iy < 0 || iy >= a.H) continue;
      const float* row = a.x + iy * a.W * a.C + v * 16;
#pragma GCC unroll 16
      for (int i = 0; i < CG; ++i) {
        __m512 xs[kSpan];
        if constexpr (CG == 16) {
          for (int j = 0; j < kSpan; ++j)
            xs[j] = inside[j] ? _mm512_set1_ps(row[at[j] + i]) : _mm512_setzero_ps();
        } else {
          const __m512i index = _mm512_add_epi32(group_base, _mm512_set1_epi32(i));
          for (int j = 0; j < kSpan; ++j)
            xs[j] = spread<CG>(_mm512_maskz_loadu_ps(inside[j] & lanes, row + at[j]), i, index);
        }
        for (int kx = 0; kx < 3; ++kx) {
          const __m512 wk = _mm512_loadu_ps(wv + ((ky * 3 + kx) * CG + i) * 16);
          for (int p = 0; p < P; ++p) acc[p] = _mm512_fmadd_ps(xs[p * S + kx], wk, acc[p]);
        }
      }
    }
    for (int p = 0; p < P; ++p)
      _mm512_mask_storeu_ps(y + (ox0 + p) * a.C + v * 16, lanes,
                            a.in_registers ? activation_ps(acc[p], a.act.kind, lo, hi) : acc[p]);
  }
}

#pragma GCC diagnostic pop

using SegmentFn = void (*)(const Args&, int64_t, int64_t, float*);

template <int CG, int S, int... Ps>
constexpr std::array<SegmentFn, sizeof...(Ps)> segments_of(std::integer_sequence<int, Ps...>) {
  return {&segment<CG, S, Ps + 1>...};
}
// [P - 1] runs a segment of P pixels.
template <int CG, int S>
constexpr auto kSegments = segments_of<CG, S>(std::make_integer_sequence<int, kSegment>{});

template <int CG, int S>
void row(const Args& a, int64_t OW, int64_t oy, float* y) {
  for (int64_t ox = 0; ox < OW; ox += kSegment) {
    const int64_t n = std::min<int64_t>(kSegment, OW - ox);
    kSegments<CG, S>[n - 1](a, oy, ox, y);
  }
}

template <int S>
void row_of(int64_t cg, const Args& a, int64_t OW, int64_t oy, float* y) {
  switch (cg) {
    case 2: row<2, S>(a, OW, oy, y); break;
    case 4: row<4, S>(a, OW, oy, y); break;
    case 8: row<8, S>(a, OW, oy, y); break;
    default: row<16, S>(a, OW, oy, y); break;
  }
}

std::unique_ptr<Kernel> make_grouped(const ir::Node& node, int threads) {
  if (!has_avx512()) return nullptr;
  const std::optional<RowConvGeometry> g = row_conv_geometry(node);
  if (!g || !grouped_conv_takes(*g)) return nullptr;
  const std::optional<ops::Activation> act = epilogue_of(node);
  if (!act) return nullptr;
  const ir::Value* b = node.input(2);
  GroupedConv conv(*g, node.input(1)->constant().data<float>(), b ? b->constant().data<float>() : nullptr, *act);
  return std::make_unique<RowConvKernel<GroupedConv>>(std::move(conv), *g, node.input(0)->type.static_dims()[0],
                                                      threads);
}

}  // namespace

bool grouped_conv_takes(const RowConvGeometry& g) {
  if (g.G < 2 || g.C != g.OC || g.C % g.G != 0) return false;
  // A vector's 16 lanes hold whole groups (cg divides 16), and the channels whole groups.
  const int64_t cg = g.C / g.G;
  return (cg == 2 || cg == 4 || cg == 8 || cg == 16) && g.KH == 3 && g.KW == 3 && (g.SW == 1 || g.SW == 2);
}

GroupedConv::GroupedConv(const RowConvGeometry& g, const float* weights, const float* bias, ops::Activation act)
    : g_(g), group_channels_(g.C / g.G), act_(act) {
  if (!grouped_conv_takes(g)) throw Error("grouped conv: a geometry it does not take");
  const int64_t cg = group_channels_, c16 = (g.C + 15) / 16 * 16;
  w_.assign(static_cast<size_t>(c16 * 9 * cg), 0.f);
  for (int64_t oc = 0; oc < g.C; ++oc)
    for (int64_t i = 0; i < cg; ++i)
      for (int64_t tap = 0; tap < 9; ++tap)
        w_[static_cast<size_t>(((oc / 16 * 9 + tap) * cg + i) * 16 + oc % 16)] = weights[(oc * cg + i) * 9 + tap];
  bias_.assign(static_cast<size_t>(c16), 0.f);
  if (bias) std::copy(bias, bias + g.C, bias_.begin());
}

void GroupedConv::rows(const float* x, int64_t x_row0, float* y, int64_t oy0, int64_t oy1) const {
  if (x_row0 != 0) throw Error("grouped conv: rows from the whole image only");
  const int rest = static_cast<int>(g_.C % 16);
  const __mmask16 last = rest ? static_cast<__mmask16>((1u << rest) - 1) : __mmask16{0xFFFF};
  const Args a{x, w_.data(), bias_.data(), g_.H, g_.W, g_.C, g_.PT, g_.PL, g_.SH, last, act_, activation_in_registers(act_)};
  const int64_t out_row = g_.OW * g_.C;
  for (int64_t oy = oy0; oy < oy1; ++oy) {
    float* yr = y + (oy - oy0) * out_row;
    if (g_.SW == 1) row_of<1>(group_channels_, a, g_.OW, oy, yr);
    else row_of<2>(group_channels_, a, g_.OW, oy, yr);
  }
  if (!activation_in_registers(act_)) apply_activation(act_, y, (oy1 - oy0) * out_row);
}

void add_grouped_conv_kernels(std::vector<KernelFactory>& table) {
  table.push_back({"kiln", "FusedConv", make_grouped, "kiln_grouped"});
}

}  // namespace kiln::backends::cpu
