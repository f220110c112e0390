// 2-D convolution on channels-last (NHWC) activations, with bias, a residual and an activation
// epilogue: y = act(conv(x, w) + bias + z).
//
//   conv2d_nhwc     any groups: per output row, blocks of 4 output pixels by up to 64 output
//                   channels accumulate in registers; the weights are read as rows of output
//                   channels, so the innermost loop is a unit-stride vector FMA.
//   depthwise_nhwc  one input and one output channel per group: the channels are the vector.
//
// Weight layouts (the emitter packs them once, at compile time):
//   conv2d_nhwc     [G][KH][KW][C/G][Mp], Mp = M/G rounded up to 16 with zeros; bias [G][Mp]
//   depthwise_nhwc  [KH][KW][C]; bias [C]
#pragma once
#include "common.h"

namespace kiln_kernels {

struct Conv2dShape {
  int64_t N, H, W, C;   // input [N][H][W][C]
  int64_t OH, OW, M;    // output [N][OH][OW][M]
  int64_t KH, KW;       // kernel
  int64_t SH, SW;       // strides
  int64_t PH, PW;       // top and left padding
  int64_t DH, DW;       // dilations
  int64_t G;            // groups
};

namespace detail {

// acc[p][c] += x(pixel ow0 + p) . w for output channels [co, co + CB) of group g, over the kernel.
template <int CB>
inline void conv_accumulate(const Conv2dShape& s, int64_t Mp, const float* KILN_RESTRICT x_img,
                            const float* KILN_RESTRICT wg, int64_t oh, int64_t ow0, int np, int64_t co,
                            float (&acc)[4][CB]) {
  const int64_t Cg = s.C / s.G;
  for (int64_t kh = 0; kh < s.KH; ++kh) {
    const int64_t ih = oh * s.SH - s.PH + kh * s.DH;
    if (ih < 0 || ih >= s.H) continue;
    for (int64_t kw = 0; kw < s.KW; ++kw) {
      const float* xp[4] = {nullptr, nullptr, nullptr, nullptr};
      int valid = 0;
      for (int p = 0; p < np; ++p) {
        const int64_t iw = (ow0 + p) * s.SW - s.PW + kw * s.DW;
        if (iw >= 0 && iw < s.W) {
          xp[p] = x_img + (ih * s.W + iw) * s.C;
          ++valid;
        }
      }
      if (valid == 0) continue;
      const float* KILN_RESTRICT wk = wg + (kh * s.KW + kw) * Cg * Mp + co;
      if (valid == 4) {
        for (int64_t ci = 0; ci < Cg; ++ci) {
          const float x0 = xp[0][ci], x1 = xp[1][ci], x2 = xp[2][ci], x3 = xp[3][ci];
          const float* KILN_RESTRICT wr = wk + ci * Mp;
          for (int c = 0; c < CB; ++c) {
            acc[0][c] += x0 * wr[c];
            acc[1][c] += x1 * wr[c];
            acc[2][c] += x2 * wr[c];
            acc[3][c] += x3 * wr[c];
          }
        }
      } else {
        for (int p = 0; p < np; ++p) {
          if (!xp[p]) continue;
          for (int64_t ci = 0; ci < Cg; ++ci) {
            const float xv = xp[p][ci];
            const float* KILN_RESTRICT wr = wk + ci * Mp;
            for (int c = 0; c < CB; ++c) acc[p][c] += xv * wr[c];
          }
        }
      }
    }
  }
}

template <Act A, int CB>
inline void conv_block(const Conv2dShape& s, const float* x_img, const float* w, const float* bias, const float* z_img,
                       float* y_img, int64_t oh, int64_t ow0, int np, int64_t g, int64_t co, float a, float b) {
  const int64_t Cg = s.C / s.G, Mg = s.M / s.G, Mp = (Mg + 15) / 16 * 16;
  float acc[4][CB] = {};
  conv_accumulate<CB>(s, Mp, x_img + g * Cg, w + g * s.KH * s.KW * Cg * Mp, oh, ow0, np, co, acc);
  const int64_t n = std::min<int64_t>(CB, Mg - co);
  for (int p = 0; p < np; ++p) {
    const int64_t at = (oh * s.OW + ow0 + p) * s.M + g * Mg + co;
    float* KILN_RESTRICT yp = y_img + at;
    for (int64_t c = 0; c < n; ++c) {
      float v = acc[p][c];
      if (bias) v += bias[g * Mp + co + c];
      if (z_img) v += z_img[at + c];
      yp[c] = activate<A>(v, a, b);
    }
  }
}

}  // namespace detail

template <Act A>
void conv2d_nhwc(const Conv2dShape& s, const float* x, const float* w, const float* bias, const float* z, float* y,
                 float a = 0.f, float b = 0.f) {
  const int64_t Mg = s.M / s.G, Mp = (Mg + 15) / 16 * 16;
  for (int64_t n = 0; n < s.N; ++n) {
    const float* x_img = x + n * s.H * s.W * s.C;
    const float* z_img = z ? z + n * s.OH * s.OW * s.M : nullptr;
    float* y_img = y + n * s.OH * s.OW * s.M;
    for (int64_t oh = 0; oh < s.OH; ++oh)
      for (int64_t ow0 = 0; ow0 < s.OW; ow0 += 4) {
        const int np = static_cast<int>(std::min<int64_t>(4, s.OW - ow0));
        for (int64_t g = 0; g < s.G; ++g)
          for (int64_t co = 0; co < Mp; co += 64) {
            const int64_t left = Mp - co;
            if (left >= 64)
              detail::conv_block<A, 64>(s, x_img, w, bias, z_img, y_img, oh, ow0, np, g, co, a, b);
            else if (left == 48)
              detail::conv_block<A, 48>(s, x_img, w, bias, z_img, y_img, oh, ow0, np, g, co, a, b);
            else if (left == 32)
              detail::conv_block<A, 32>(s, x_img, w, bias, z_img, y_img, oh, ow0, np, g, co, a, b);
            else
              detail::conv_block<A, 16>(s, x_img, w, bias, z_img, y_img, oh, ow0, np, g, co, a, b);
          }
      }
  }
}

template <Act A>
void depthwise_nhwc(const Conv2dShape& s, const float* x, const float* w, const float* bias, const float* z, float* y,
                    float a = 0.f, float b = 0.f) {
  constexpr int64_t kBlock = 64;
  const int64_t C = s.C;
  for (int64_t n = 0; n < s.N; ++n) {
    const float* x_img = x + n * s.H * s.W * C;
    for (int64_t oh = 0; oh < s.OH; ++oh)
      for (int64_t ow = 0; ow < s.OW; ++ow) {
        const int64_t at = ((n * s.OH + oh) * s.OW + ow) * C;
        for (int64_t c0 = 0; c0 < C; c0 += kBlock) {
          const int64_t nc = std::min(kBlock, C - c0);
          float acc[kBlock] = {};
          for (int64_t kh = 0; kh < s.KH; ++kh) {
            const int64_t ih = oh * s.SH - s.PH + kh * s.DH;
            if (ih < 0 || ih >= s.H) continue;
            for (int64_t kw = 0; kw < s.KW; ++kw) {
              const int64_t iw = ow * s.SW - s.PW + kw * s.DW;
              if (iw < 0 || iw >= s.W) continue;
              const float* KILN_RESTRICT xp = x_img + (ih * s.W + iw) * C + c0;
              const float* KILN_RESTRICT wp = w + (kh * s.KW + kw) * C + c0;
              for (int64_t c = 0; c < nc; ++c) acc[c] += xp[c] * wp[c];
            }
          }
          float* KILN_RESTRICT yp = y + at + c0;
          for (int64_t c = 0; c < nc; ++c) {
            float v = acc[c];
            if (bias) v += bias[c0 + c];
            if (z) v += z[at + c0 + c];
            yp[c] = activate<A>(v, a, b);
          }
        }
      }
  }
}

}  // namespace kiln_kernels
