// kiln.NhwcMaxPool / NhwcAveragePool, 2-D: [N, H, W, C] -> [N, OH, OW, C]. Each output pixel
// folds its window's channel vectors (clipped to the input; max ignores padding, the average
// divides by ONNX's count: valid taps, or with count_include_pad the taps inside the padded
// input). Threads split output rows in order, so each reads the rows its core produced (see
// kParallelMinElements), and each window's channels are folded in registers, 64 at a time:
// straight from the window's row pointers where the window lies inside the input along W
// (interior_avx512), through a list of its taps at the edges (fold_avx512). As fast as oneDNN
// 2.6's NHWC pooling or faster, so first (make kernel-bench, MaxPool3x3s2_64x111: squeezenet1_1's
// first MaxPool).
#include <immintrin.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <vector>

#include "backends/cpu/kernels.h"
#include "backends/cpu/nhwc_pool.h"
#include "backends/cpu/onednn_common.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/row_conv.h"
#include "backends/cpu/simd.h"
#include "ops/core/conv_geometry.h"

namespace kiln::backends::cpu {

namespace {

// o[c] = fold of taps[t][c] over the taps (max, or the sum times `scale`), 64 channels at a time
// in registers: the generic loop below keeps o in memory and is many times slower.
// GCC 12 warns of the undefined pass-through operand inside its own _mm512_max_ps.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// The lanes of the four 16-channel vectors from channel c0 that lie below C.
inline void block_masks(int64_t left, __mmask16 (&m)[4]) {
  for (int v = 0; v < 4; ++v) {
    const int64_t k = std::clamp<int64_t>(left - 16 * v, 0, 16);
    m[v] = static_cast<__mmask16>((1u << k) - 1);
  }
}

template <bool Max>
__attribute__((target("avx512f"))) void fold_avx512(const float* const* taps, int n, int64_t C, float scale,
                                                    float* o) {
  for (int64_t c0 = 0; c0 < C; c0 += 64) {
    __mmask16 m[4];
    block_masks(C - c0, m);
    __m512 acc[4];
    for (int v = 0; v < 4; ++v) acc[v] = _mm512_maskz_loadu_ps(m[v], taps[0] + c0 + 16 * v);
    for (int t = 1; t < n; ++t)
      for (int v = 0; v < 4; ++v) {
        const __m512 x = _mm512_maskz_loadu_ps(m[v], taps[t] + c0 + 16 * v);
        acc[v] = Max ? _mm512_max_ps(acc[v], x) : _mm512_add_ps(acc[v], x);
      }
    for (int v = 0; v < 4; ++v)
      _mm512_mask_storeu_ps(o + c0 + 16 * v, m[v], Max ? acc[v] : _mm512_mul_ps(acc[v], _mm512_set1_ps(scale)));
  }
}

// Outputs [ow0, ow1) of one row whose windows lie wholly inside the input along W: the taps of
// output ow are at rows[i] + (ow * sw - pl + j * dw) * C for the `nrows` rows of the window
// inside the input and j < kw, so each pixel folds straight from the row pointers, without
// the list of tap pointers the edges build. Two pixels at a time, so eight independent sums
// hide the adds' latency; a block of 64 channels whole (Full) with plain loads.
template <bool Full>
__attribute__((target("avx512f"), always_inline)) inline __m512 load_lanes(const float* p, __mmask16 m) {
  return Full ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p);
}
template <bool Max>
__attribute__((target("avx512f"), always_inline)) inline __m512 fold_lanes(__m512 a, __m512 x) {
  return Max ? _mm512_max_ps(a, x) : _mm512_add_ps(a, x);
}
template <bool Max, bool Full>
__attribute__((target("avx512f"), always_inline)) inline void store_lanes(float* o, __m512 a, __mmask16 m, float scale) {
  const __m512 r = Max ? a : _mm512_mul_ps(a, _mm512_set1_ps(scale));
  if (Full) _mm512_storeu_ps(o, r);
  else _mm512_mask_storeu_ps(o, m, r);
}

template <bool Max, bool Full>
__attribute__((target("avx512f"), always_inline)) inline void interior_block(const PoolWindow& g,
                                                                          const float* const* rows, int nrows,
                                                                          int64_t ow0, int64_t ow1, float scale,
                                                                          float* y, int64_t c0) {
  const int64_t C = g.C, tap = g.dw * C, step = g.sw * C;
  __mmask16 m[4];
  block_masks(C - c0, m);
  int64_t ow = ow0;
  for (; ow + 1 < ow1; ow += 2) {
    const int64_t at = (ow * g.sw - g.pl) * C + c0;
    __m512 a0[4], a1[4];
    for (int v = 0; v < 4; ++v)
      a0[v] = load_lanes<Full>(rows[0] + at + 16 * v, m[v]), a1[v] = load_lanes<Full>(rows[0] + at + step + 16 * v, m[v]);
    for (int i = 0; i < nrows; ++i)
      for (int64_t j = i == 0 ? 1 : 0; j < g.kw; ++j) {
        const float* p = rows[i] + at + j * tap;
        for (int v = 0; v < 4; ++v) {
          a0[v] = fold_lanes<Max>(a0[v], load_lanes<Full>(p + 16 * v, m[v]));
          a1[v] = fold_lanes<Max>(a1[v], load_lanes<Full>(p + step + 16 * v, m[v]));
        }
      }
    float* o = y + ow * C + c0;
    for (int v = 0; v < 4; ++v) {
      store_lanes<Max, Full>(o + 16 * v, a0[v], m[v], scale);
      store_lanes<Max, Full>(o + C + 16 * v, a1[v], m[v], scale);
    }
  }
  if (ow < ow1) {
    const int64_t at = (ow * g.sw - g.pl) * C + c0;
    __m512 a0[4];
    for (int v = 0; v < 4; ++v) a0[v] = load_lanes<Full>(rows[0] + at + 16 * v, m[v]);
    for (int i = 0; i < nrows; ++i)
      for (int64_t j = i == 0 ? 1 : 0; j < g.kw; ++j)
        for (int v = 0; v < 4; ++v) a0[v] = fold_lanes<Max>(a0[v], load_lanes<Full>(rows[i] + at + j * tap + 16 * v, m[v]));
    for (int v = 0; v < 4; ++v) store_lanes<Max, Full>(y + ow * C + c0 + 16 * v, a0[v], m[v], scale);
  }
}

template <bool Max>
__attribute__((target("avx512f"))) void interior_avx512(const PoolWindow& g, const float* const* rows, int nrows,
                                                        int64_t ow0, int64_t ow1, float scale, float* y) {
  for (int64_t c0 = 0; c0 < g.C; c0 += 64) {
    if (g.C - c0 >= 64) interior_block<Max, true>(g, rows, nrows, ow0, ow1, scale, y, c0);
    else interior_block<Max, false>(g, rows, nrows, ow0, ow1, scale, y, c0);
  }
}

#pragma GCC diagnostic pop

KILN_SIMD void fold_plain(const PoolWindow& g, const float* const* taps, int n, float scale, float* __restrict o) {
  const int64_t C = g.C;
  for (int64_t c = 0; c < C; ++c) o[c] = taps[0][c];
  for (int t = 1; t < n; ++t) {
    const float* p = taps[t];
    if (g.is_max) for (int64_t c = 0; c < C; ++c) o[c] = std::max(o[c], p[c]);
    else for (int64_t c = 0; c < C; ++c) o[c] += p[c];
  }
  if (!g.is_max)
    for (int64_t c = 0; c < C; ++c) o[c] *= scale;
}

// One output row: y[ow, :] over every ow, from the input rows at x (row r in slot
// row_slot(r, x_row0, ring)); `taps` holds kh * kw pointers.
void pool_row(const PoolWindow& g, const float* x, int64_t x_row0, int64_t ring, int64_t oh, float* y,
              const float** taps) {
  const int64_t C = g.C;
  const int64_t h0 = oh * g.sh - g.pt;
  int64_t khl = 0, khh = g.kh;  // the taps inside the input along H
  while (khl < khh && h0 + khl * g.dh < 0) ++khl;
  while (khh > khl && h0 + (khh - 1) * g.dh >= g.H) --khh;
  const int64_t padded_h = std::min(g.kh, (g.H + g.pb - h0 + g.dh - 1) / g.dh);
  // Outputs [lo, hi) have every tap inside the input along W.
  int64_t lo = 0, hi = 0;
  if (has_avx512() && khl < khh && g.kh <= 64) {
    lo = std::min(g.OW, (g.pl + g.sw - 1) / g.sw);
    const int64_t reach = g.W - 1 - (g.kw - 1) * g.dw + g.pl;  // ow * sw <= reach
    hi = reach < 0 ? lo : std::max(lo, std::min(g.OW, reach / g.sw + 1));
    const float* rows[64];
    int nrows = 0;
    for (int64_t i = khl; i < khh; ++i) rows[nrows++] = x + row_slot(h0 + i * g.dh, x_row0, ring) * g.W * C;
    if (g.is_max) {
      interior_avx512<true>(g, rows, nrows, lo, hi, 1.f, y);
    } else {
      const int64_t count = g.count_include_pad ? padded_h * g.kw : nrows * g.kw;
      interior_avx512<false>(g, rows, nrows, lo, hi, 1.f / static_cast<float>(count), y);
    }
  }
  // The others (the edges, or every output without AVX-512) through a list of their taps.
  for (int64_t ow = 0; ow < g.OW; ++ow) {
    if (ow >= lo && ow < hi) continue;
    float* o = y + ow * C;
    const int64_t w0 = ow * g.sw - g.pl;
    int64_t kwl = 0, kwh = g.kw;
    while (kwl < kwh && w0 + kwl * g.dw < 0) ++kwl;
    while (kwh > kwl && w0 + (kwh - 1) * g.dw >= g.W) --kwh;
    if (khl >= khh || kwl >= kwh) {  // a window wholly in the padding
      std::fill(o, o + C, g.is_max ? std::numeric_limits<float>::lowest() : 0.f);
      continue;
    }
    int n = 0;
    for (int64_t i = khl; i < khh; ++i)
      for (int64_t j = kwl; j < kwh; ++j)
        taps[n++] = x + (row_slot(h0 + i * g.dh, x_row0, ring) * g.W + (w0 + j * g.dw)) * C;
    float scale = 1.f;
    if (!g.is_max) {
      const int64_t padded_w = std::min(g.kw, (g.W + g.pr - w0 + g.dw - 1) / g.dw);
      scale = 1.f / static_cast<float>(g.count_include_pad ? padded_h * padded_w : n);
    }
    if (!has_avx512()) fold_plain(g, taps, n, scale, o);
    else if (g.is_max) fold_avx512<true>(taps, n, C, scale, o);
    else fold_avx512<false>(taps, n, C, scale, o);
  }
}

}  // namespace

void pool_rows(const PoolWindow& g, const float* x, int64_t x_row0, float* y, int64_t oh0, int64_t oh1,
               int64_t ring) {
  std::vector<const float*> taps(static_cast<size_t>(g.kh * g.kw));
  for (int64_t oh = oh0; oh < oh1; ++oh) pool_row(g, x, x_row0, ring, oh, y + (oh - oh0) * g.OW * g.C, taps.data());
}

std::optional<PoolWindow> nhwc_pool_window(const ir::Node& node) {
  if (node.domain() != "kiln" || (node.op_type() != "NhwcMaxPool" && node.op_type() != "NhwcAveragePool"))
    return std::nullopt;
  if (node.num_inputs() != 1 || node.num_outputs() != 1) return std::nullopt;
  const ir::Value* x = node.input(0);
  const ir::Value* y = node.output(0);
  if (!dnnl_util::static_float(x) || !dnnl_util::static_float(y)) return std::nullopt;
  const auto xd = x->type.static_dims(), yd = y->type.static_dims();
  if (xd.size() != 4 || yd.size() != 4 || yd[0] != xd[0] || yd[3] != xd[3]) return std::nullopt;
  const bool is_max = node.op_type() == "NhwcMaxPool";
  const auto k = node.attr_ints("kernel_shape");
  const auto s = node.attr_ints("strides", {1, 1});
  const auto d = is_max ? node.attr_ints("dilations", {1, 1}) : std::vector<int64_t>{1, 1};
  auto pads = node.attr_ints("pads", {0, 0, 0, 0});
  if (k.size() != 2 || s.size() != 2 || d.size() != 2 || pads.size() != 4) return std::nullopt;
  for (int i = 0; i < 2; ++i)
    if (k[i] < 1 || s[i] < 1 || d[i] < 1) return std::nullopt;
  const std::optional<ops::AutoPad> ap = ops::auto_pad_of(node);
  if (!ap) return std::nullopt;
  const int64_t in[2] = {xd[1], xd[2]};
  ops::resolve_pads(*ap, in, k, s, d, pads);
  return PoolWindow{k[0], k[1], s[0], s[1], d[0], d[1], pads[0], pads[1], pads[2], pads[3],
                    xd[1], xd[2], xd[3], yd[1], yd[2], is_max, node.attr_int("count_include_pad", 0) != 0};
}

namespace {

class NhwcPoolKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  NhwcPoolKernel(PoolWindow g, int64_t n, int threads) : g_(g), n_(n), threads_(threads) {}

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const float* x = inputs[0]->data<float>();
    float* y = outputs[0]->data<float>();
    const int64_t rows = n_ * g_.OH;
    const int team = rows * g_.OW * g_.C >= kParallelMinElements ? threads_ : 1;
    parallel_for(rows, team, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e;) {  // a run of rows of one image at a time
        const int64_t img = r / g_.OH, oh0 = r % g_.OH, oh1 = std::min(g_.OH, oh0 + (e - r));
        pool_rows(g_, x + img * g_.H * g_.W * g_.C, 0, y + r * g_.OW * g_.C, oh0, oh1);
        r += oh1 - oh0;
      }
    });
  }

 private:
  PoolWindow g_;
  int64_t n_;
  int threads_;
};

}  // namespace

std::unique_ptr<Kernel> make_nhwc_pool(const ir::Node& node, int threads) {
  std::optional<PoolWindow> g = nhwc_pool_window(node);
  if (!g) return nullptr;
  return std::make_unique<NhwcPoolKernel>(*g, node.input(0)->type.static_dims()[0], threads);
}

void add_nhwc_pool_kernels(std::vector<KernelFactory>& table) {
  table.push_back({"kiln", "NhwcMaxPool", make_nhwc_pool, "kiln"});
  table.push_back({"kiln", "NhwcAveragePool", make_nhwc_pool, "kiln"});
}

}  // namespace kiln::backends::cpu
