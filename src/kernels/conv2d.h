// 2-D convolution on channels-last (NHWC) activations, with bias, a residual and an activation
// epilogue: y = act(conv(x, w) + bias + z).
//
//   conv2d_nhwc     any groups: tiles of output pixels by one panel of output channels
//                   accumulate in registers (tile.h), tap by tap; a tap that falls in the
//                   padding reads a row of zeros.
//   depthwise_nhwc  one input and one output channel per group: the channels are the vector.
//
// Weight layouts (the emitter packs them once, at compile time):
//   conv2d_nhwc     per group, panels of PANEL output channels [KH][KW][C/G][PANEL] (the last
//                   only as wide as its vectors); bias [G][Mpad]
//   depthwise_nhwc  [KH][KW][C]; bias [C]
#pragma once
#include <vector>

#include "conv_shape.h"
#include "gemm.h"
#include "tile.h"

// -Wpsabi: as in common.h.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace kiln_kernels {

namespace detail {

// Output pixels [pix0, pix0 + R) (flattened over N, OH, OW) by panel j of group g.
template <Act A, int PANEL, int R, int W>
[[gnu::always_inline]] inline void conv_tile(const Conv2dShape& s, const float* x, const float* b, const float* bias, const float* z, float* y,
                      const float* zeros, int64_t pix0, int64_t g, int64_t n0, int64_t n, float p, float q) {
  using P = Panel<PANEL>;
  const int64_t Cg = s.C / s.G, Mg = s.M / s.G;
  typename P::V acc[R][P::NV] = {};
  int64_t img[R], oh[R], ow[R];
  for (int r = 0; r < R; ++r) {
    const int64_t pix = pix0 + r;
    img[r] = pix / (s.OH * s.OW);
    oh[r] = pix / s.OW % s.OH;
    ow[r] = pix % s.OW;
  }
  // With one group and no dilation across, a kernel row whose taps all lie inside the input is
  // one run of KW * C floats per pixel (NHWC), the weights' [kw][c] order: one accumulation of
  // depth KW * C instead of KW of depth C.
  const bool runs = s.G == 1 && s.DW == 1;
  for (int64_t kh = 0; kh < s.KH; ++kh) {
    if (runs) {
      const float* rows[R];
      bool inside = true;
      for (int r = 0; r < R && inside; ++r) {
        const int64_t ih = oh[r] * s.SH - s.PH + kh * s.DH, iw = ow[r] * s.SW - s.PW;
        inside = ih >= 0 && ih < s.H && iw >= 0 && iw + s.KW <= s.W;
        rows[r] = x + ((img[r] * s.H + ih) * s.W + iw) * s.C;
      }
      if (inside) {
        P::template accumulate<R, W>(s.KW * Cg, rows, b + kh * s.KW * Cg * W * P::L, acc);
        continue;
      }
    }
    for (int64_t kw = 0; kw < s.KW; ++kw) {
      const float* rows[R];
      bool any = false;
      for (int r = 0; r < R; ++r) {
        const int64_t ih = oh[r] * s.SH - s.PH + kh * s.DH, iw = ow[r] * s.SW - s.PW + kw * s.DW;
        const bool in = ih >= 0 && ih < s.H && iw >= 0 && iw < s.W;
        rows[r] = in ? x + ((img[r] * s.H + ih) * s.W + iw) * s.C + g * Cg : zeros;
        any = any || in;
      }
      if (any) P::template accumulate<R, W>(Cg, rows, b + (kh * s.KW + kw) * Cg * W * P::L, acc);
    }
  }
  for (int r = 0; r < R; ++r) {
    const int64_t at = (pix0 + r) * s.M + g * Mg + n0;
    P::template finish<A, W>(acc[r], n, bias, z ? z + at : nullptr, y + at, p, q);
  }
}

}  // namespace detail

// Weights packed [G][Mg/PANEL][KH][KW][C/G][PANEL] (zeros past M/G), bias [G][Mg/PANEL][PANEL].
// Weights packed per group as gemm_packed's B with K = KH * KW * C/G and N = Mg = M/G: panels
// [KH][KW][C/G][PANEL], the last [KH][KW][C/G][Panel::width] (zeros past Mg); a group's weights
// take KH * KW * C/G * Mpad floats, Mpad = the panels' widths summed; bias [G][Mpad]. With a
// team, the threads split the output pixels.
template <Act A, int PANEL>
void conv2d_nhwc(const Conv2dShape& s, const float* x, const float* w, const float* bias, const float* z, float* y,
                 float p = 0.f, float q = 0.f, Team* team = nullptr) {
  constexpr int R = Tile<PANEL>::kRows;
  const int64_t Cg = s.C / s.G, Mg = s.M / s.G, panels = (Mg + PANEL - 1) / PANEL;
  const int64_t pixels = s.N * s.OH * s.OW, taps = s.KH * s.KW, tiles = (pixels + R - 1) / R;
  const int64_t mpad = (panels - 1) * PANEL + Panel<PANEL>::width(Mg, panels - 1);
  parallel_for(team, tiles, [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> zero_row;
    if (static_cast<int64_t>(zero_row.size()) < Cg) zero_row.assign(static_cast<size_t>(Cg), 0.f);
    const float* zeros = zero_row.data();
    for (int64_t g = 0; g < s.G; ++g)
      for (int64_t j = 0; j < panels; ++j) {
        const float* b = w + g * taps * Cg * mpad + j * taps * Cg * PANEL;
        const float* bj = bias ? bias + g * mpad + j * PANEL : nullptr;
        const int64_t n0 = j * PANEL, n = std::min<int64_t>(PANEL, Mg - n0);
        with_count<Panel<PANEL>::NV>(static_cast<int>(Panel<PANEL>::width(Mg, j) / Panel<PANEL>::L), [&](auto wv) {
          constexpr int W = decltype(wv)::value;
          for (int64_t t = t0; t < t1; ++t) {
            const int64_t pix0 = t * R;
            if (pix0 + R <= pixels) detail::conv_tile<A, PANEL, R, W>(s, x, b, bj, z, y, zeros, pix0, g, n0, n, p, q);
            else
              with_count<R - 1>(static_cast<int>(pixels - pix0), [&](auto rows) {
                detail::conv_tile<A, PANEL, decltype(rows)::value, W>(s, x, b, bj, z, y, zeros, pix0, g, n0, n, p, q);
              });
          }
        });
      }
  });
}

namespace detail {

// Channels [c0, c0 + 16 * V) of one output pixel: V vectors accumulated over the taps inside the
// input, then bias, residual and activation, 16 lanes at a time.
template <Act A, int V>
inline void depthwise_vectors(const Conv2dShape& s, const float* x_img, const float* w, const float* bias,
                              const float* z, float* y, int64_t h0, int64_t w0, int64_t kh0, int64_t kh1, int64_t kw0,
                              int64_t kw1, int64_t c0, float a, float b) {
  v16f acc[V] = {};
  for (int64_t kh = kh0; kh < kh1; ++kh)
    for (int64_t kw = kw0; kw < kw1; ++kw) {
      const float* xp = x_img + ((h0 + kh * s.DH) * s.W + w0 + kw * s.DW) * s.C + c0;
      const float* wp = w + (kh * s.KW + kw) * s.C + c0;
      for (int v = 0; v < V; ++v) acc[v] += load16(xp + 16 * v) * load16(wp + 16 * v);
    }
  for (int v = 0; v < V; ++v) {
    if (bias) acc[v] += load16(bias + c0 + 16 * v);
    if (z) acc[v] += load16(z + c0 + 16 * v);
    alignas(64) float t[16];
    store16(t, acc[v]);
    for (int l = 0; l < 16; ++l) t[l] = activate<A>(t[l], a, b);
    __builtin_memcpy(y + c0 + 16 * v, t, sizeof t);
  }
}

}  // namespace detail

// With a team, the threads split the output rows. The channels are the vector: blocks of four
// vectors, then single vectors, then the last C % 16 one by one.
template <Act A>
void depthwise_nhwc(const Conv2dShape& s, const float* x, const float* w, const float* bias, const float* z, float* y,
                    float a = 0.f, float b = 0.f, Team* team = nullptr) {
  const int64_t C = s.C, blocks = C / 64 * 64, vectors = C / 16 * 16;
  parallel_for(team, s.N * s.OH, [&](int64_t row0, int64_t row1) {
    for (int64_t row = row0; row < row1; ++row) {
      const int64_t n = row / s.OH, oh = row % s.OH;
      const float* x_img = x + n * s.H * s.W * C;
      for (int64_t ow = 0; ow < s.OW; ++ow) {
        const int64_t at = ((n * s.OH + oh) * s.OW + ow) * C;
        // The taps inside the input: found once per pixel, so the channel loops check nothing.
        const int64_t h0 = oh * s.SH - s.PH, w0 = ow * s.SW - s.PW;
        const int64_t kh0 = h0 < 0 ? (-h0 + s.DH - 1) / s.DH : 0, kw0 = w0 < 0 ? (-w0 + s.DW - 1) / s.DW : 0;
        const int64_t kh1 = std::max(kh0, std::min(s.KH, (s.H - h0 + s.DH - 1) / s.DH));
        const int64_t kw1 = std::max(kw0, std::min(s.KW, (s.W - w0 + s.DW - 1) / s.DW));
        const float* zp = z ? z + at : nullptr;
        for (int64_t c0 = 0; c0 < blocks; c0 += 64)
          detail::depthwise_vectors<A, 4>(s, x_img, w, bias, zp, y + at, h0, w0, kh0, kh1, kw0, kw1, c0, a, b);
        for (int64_t c0 = blocks; c0 < vectors; c0 += 16)
          detail::depthwise_vectors<A, 1>(s, x_img, w, bias, zp, y + at, h0, w0, kh0, kh1, kw0, kw1, c0, a, b);
        for (int64_t c = vectors; c < C; ++c) {
          float v = 0.f;
          for (int64_t kh = kh0; kh < kh1; ++kh)
            for (int64_t kw = kw0; kw < kw1; ++kw)
              v += x_img[((h0 + kh * s.DH) * s.W + w0 + kw * s.DW) * C + c] * w[(kh * s.KW + kw) * C + c];
          if (bias) v += bias[c];
          if (zp) v += zp[c];
          y[at + c] = activate<A>(v, a, b);
        }
      }
    }
  });
}

}  // namespace kiln_kernels

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
