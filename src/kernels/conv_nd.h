// Convolution and pooling on channels-first activations of one, two or three spatial dims (an
// audio model's [N][C][L], a video model's [N][C][D][H][W]), for emitted code where kiln's plan
// keeps them channels-first: its layout assignment moves 2-D convs and pools to NHWC
// (conv2d.h, pool.h), not these. And the transposed convolution of either layout. Every shape is taken as 3-D, the dims a tensor lacks being 1
// at the front. Direct loops: per output plane, each tap adds a weight times a run of input
// along the innermost output dim, which the compiler vectorizes where the stride is 1.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

#include "activation.h"
#include "parallel.h"
#include "pool.h"

namespace kiln_kernels {

// Input [N][C][D][H][W], output [N][M][OD][OH][OW]; M filters of KD x KH x KW over C / G
// channels; strides, dilations, and the pads at the start of each dim.
struct ConvNdShape {
  int64_t N, C, M, G;
  int64_t D, H, W, OD, OH, OW;
  int64_t KD, KH, KW, SD, SH, SW, DD, DH, DW, PD, PH, PW;
};

namespace conv_nd_detail {

// y[ox] += w * x[ox * s + k * d - p] for the ox in [0, OW) whose input lies in [0, W).
inline void tap_row(float* __restrict__ y, const float* __restrict__ x, float w, int64_t OW, int64_t W, int64_t s,
                    int64_t start) {
  // ox's input is start + ox * s: the first ox with it >= 0, the last with it < W.
  const int64_t lo = start >= 0 ? 0 : (-start + s - 1) / s;
  const int64_t hi = start >= W ? 0 : std::min<int64_t>(OW, (W - start + s - 1) / s);
  if (s == 1) {
    const float* xs = x + start;
    for (int64_t ox = lo; ox < hi; ++ox) y[ox] += w * xs[ox];
  } else {
    for (int64_t ox = lo; ox < hi; ++ox) y[ox] += w * x[start + ox * s];
  }
}

}  // namespace conv_nd_detail

// y = act(conv(x, w) + bias + z): w [M][C/G][KD][KH][KW] as ONNX stores it, bias [M] or null,
// z (the residual, y's shape) or null. The team splits the (image, filter) planes.
template <Act A>
inline void conv_nd_nchw(const ConvNdShape& s, const float* x, const float* w, const float* bias, const float* z,
                         float* y, float a, float b, Team* team) {
  const int64_t CG = s.C / s.G, MG = s.M / s.G, in_plane = s.D * s.H * s.W, out_plane = s.OD * s.OH * s.OW;
  const int64_t taps = s.KD * s.KH * s.KW;
  parallel_for(team, s.N * s.M, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t n = p / s.M, m = p % s.M, g = m / MG;
      float* yp = y + p * out_plane;
      const float b0 = bias ? bias[m] : 0.f;
      for (int64_t i = 0; i < out_plane; ++i) yp[i] = b0;
      for (int64_t c = 0; c < CG; ++c) {
        const float* xc = x + (n * s.C + g * CG + c) * in_plane;
        const float* wc = w + (m * CG + c) * taps;
        for (int64_t kd = 0; kd < s.KD; ++kd)
          for (int64_t kh = 0; kh < s.KH; ++kh)
            for (int64_t kw = 0; kw < s.KW; ++kw) {
              const float wv = wc[(kd * s.KH + kh) * s.KW + kw];
              for (int64_t od = 0; od < s.OD; ++od) {
                const int64_t id = od * s.SD + kd * s.DD - s.PD;
                if (id < 0 || id >= s.D) continue;
                for (int64_t oh = 0; oh < s.OH; ++oh) {
                  const int64_t ih = oh * s.SH + kh * s.DH - s.PH;
                  if (ih < 0 || ih >= s.H) continue;
                  conv_nd_detail::tap_row(yp + (od * s.OH + oh) * s.OW, xc + (id * s.H + ih) * s.W, wv, s.OW, s.W, s.SW,
                                          kw * s.DW - s.PW);
                }
              }
            }
      }
      if (z) {
        const float* zp = z + p * out_plane;
        for (int64_t i = 0; i < out_plane; ++i) yp[i] += zp[i];
      }
      activate_all<A>(yp, out_plane, a, b);
    }
  });
}

// The transposed convolution (ConvTranspose): input [N][C][D][H][W] (or channels-last
// [N][D][H][W][C]), output [N][M][OD][OH][OW] (or channels-last); w [C][M/G][KD][KH][KW] as ONNX
// stores it; P* the pads at the start of the output (what conv_transpose_pads gives).
struct ConvTransposeShape {
  int64_t N, C, M, G;
  int64_t D, H, W, OD, OH, OW;
  int64_t KD, KH, KW, SD, SH, SW, DD, DH, DW, PD, PH, PW;
  bool channels_last;
};

// y = act(conv_transpose(x, w) + bias). Each (image, filter) plane of y is one thread's: for each
// input channel of its group and each tap, every input element adds its product to the output
// element it lands on.
template <Act A>
inline void conv_transpose_nd(const ConvTransposeShape& s, const float* x, const float* w, const float* bias, float* y,
                              float a, float b, Team* team) {
  const int64_t CG = s.C / s.G, MG = s.M / s.G, in_plane = s.D * s.H * s.W, out_plane = s.OD * s.OH * s.OW;
  const int64_t taps = s.KD * s.KH * s.KW;
  // Strides of a channel and of a pixel in x and y.
  const int64_t xc = s.channels_last ? 1 : in_plane, xp = s.channels_last ? s.C : 1;
  const int64_t yc = s.channels_last ? 1 : out_plane, yp = s.channels_last ? s.M : 1;
  parallel_for(team, s.N * s.M, [&](int64_t p0, int64_t p1) {
    for (int64_t q = p0; q < p1; ++q) {
      const int64_t n = q / s.M, m = q % s.M, g = m / MG;
      float* yo = y + n * s.M * out_plane + m * yc;
      const float b0 = bias ? bias[m] : 0.f;
      for (int64_t i = 0; i < out_plane; ++i) yo[i * yp] = b0;
      for (int64_t c = g * CG; c < (g + 1) * CG; ++c) {
        const float* xi = x + n * s.C * in_plane + c * xc;
        const float* wc = w + (c * MG + (m - g * MG)) * taps;
        for (int64_t kd = 0; kd < s.KD; ++kd)
          for (int64_t kh = 0; kh < s.KH; ++kh)
            for (int64_t kw = 0; kw < s.KW; ++kw) {
              const float wv = wc[(kd * s.KH + kh) * s.KW + kw];
              for (int64_t id = 0; id < s.D; ++id) {
                const int64_t od = id * s.SD + kd * s.DD - s.PD;
                if (od < 0 || od >= s.OD) continue;
                for (int64_t ih = 0; ih < s.H; ++ih) {
                  const int64_t oh = ih * s.SH + kh * s.DH - s.PH;
                  if (oh < 0 || oh >= s.OH) continue;
                  const float* xr = xi + (id * s.H + ih) * s.W * xp;
                  float* yr = yo + (od * s.OH + oh) * s.OW * yp;
                  for (int64_t iw = 0; iw < s.W; ++iw) {
                    const int64_t ow = iw * s.SW + kw * s.DW - s.PW;
                    if (ow >= 0 && ow < s.OW) yr[ow * yp] += wv * xr[iw * xp];
                  }
                }
              }
            }
      }
      for (int64_t i = 0; i < out_plane; ++i) yo[i * yp] = activate<A>(yo[i * yp], a, b);
    }
  });
}

// Input [N][C][D][H][W], output [N][C][OD][OH][OW]; the window, strides, dilations, and the pads
// at the start and (for an average counting them) at the end of each dim.
struct PoolNdShape {
  int64_t N, C, D, H, W, OD, OH, OW;
  int64_t KD, KH, KW, SD, SH, SW, DD, DH, DW, PD, PH, PW, PD_end, PH_end, PW_end;
};

// Max or average pooling (count_include_pad: an average divides by the window's taps inside
// the padded input, else by those inside the input). The team splits the (image, channel) planes.
inline void pool_nd_nchw(const PoolNdShape& s, bool is_max, bool count_include_pad, const float* x, float* y,
                         Team* team) {
  using detail::tap_range;
  const int64_t in_plane = s.D * s.H * s.W, out_plane = s.OD * s.OH * s.OW;
  parallel_for(team, s.N * s.C, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const float* xp = x + p * in_plane;
      float* yp = y + p * out_plane;
      for (int64_t od = 0; od < s.OD; ++od)
        for (int64_t oh = 0; oh < s.OH; ++oh)
          for (int64_t ow = 0; ow < s.OW; ++ow) {
            const int64_t d0 = od * s.SD - s.PD, h0 = oh * s.SH - s.PH, w0 = ow * s.SW - s.PW;
            int64_t kd0, kd1, kh0, kh1, kw0, kw1;
            tap_range(d0, s.KD, s.DD, 0, s.D, kd0, kd1);
            tap_range(h0, s.KH, s.DH, 0, s.H, kh0, kh1);
            tap_range(w0, s.KW, s.DW, 0, s.W, kw0, kw1);
            float acc = is_max ? -std::numeric_limits<float>::infinity() : 0.f;
            for (int64_t kd = kd0; kd < kd1; ++kd)
              for (int64_t kh = kh0; kh < kh1; ++kh)
                for (int64_t kw = kw0; kw < kw1; ++kw) {
                  const float v = xp[((d0 + kd * s.DD) * s.H + h0 + kh * s.DH) * s.W + w0 + kw * s.DW];
                  acc = is_max ? std::max(acc, v) : acc + v;
                }
            if (!is_max) {
              int64_t count = (kd1 - kd0) * (kh1 - kh0) * (kw1 - kw0);
              if (count_include_pad) {
                int64_t a0, a1, b0, b1, c0, c1;
                tap_range(d0, s.KD, s.DD, -s.PD, s.D + s.PD_end, a0, a1);
                tap_range(h0, s.KH, s.DH, -s.PH, s.H + s.PH_end, b0, b1);
                tap_range(w0, s.KW, s.DW, -s.PW, s.W + s.PW_end, c0, c1);
                count = (a1 - a0) * (b1 - b0) * (c1 - c0);
              }
              acc = count > 0 ? acc / static_cast<float>(count) : 0.f;
            }
            yp[(od * s.OH + oh) * s.OW + ow] = acc;
          }
    }
  });
}

// The global average or max over each (image, channel) plane of `plane` elements: x [planes][plane],
// y [planes].
inline void global_pool_nchw(int64_t planes, int64_t plane, bool is_max, const float* x, float* y, Team* team) {
  parallel_for(team, planes, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const float* xp = x + p * plane;
      float acc = is_max ? -std::numeric_limits<float>::infinity() : 0.f;
      for (int64_t i = 0; i < plane; ++i) acc = is_max ? std::max(acc, xp[i]) : acc + xp[i];
      y[p] = is_max ? acc : acc / static_cast<float>(plane);
    }
  });
}

}  // namespace kiln_kernels
