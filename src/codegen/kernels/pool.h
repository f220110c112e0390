// Pooling on channels-last (NHWC) activations: windowed max and average, and the global forms.
// The channels of one pixel are the vector.
#pragma once
#include <limits>

#include "common.h"

namespace kiln_kernels {

struct Pool2dShape {
  int64_t N, H, W, C;  // input [N][H][W][C]
  int64_t OH, OW;      // output [N][OH][OW][C]
  int64_t KH, KW, SH, SW;
  int64_t PH, PW;      // top and left padding
  int64_t PH_end, PW_end;  // bottom and right padding (an average counting the pads divides by them)
  int64_t DH, DW;
};

// is_max: max pooling; else average, dividing by the taps inside the input, or with
// count_include_pad by those inside the padded input.
inline void pool2d_nhwc(const Pool2dShape& s, bool is_max, bool count_include_pad, const float* KILN_RESTRICT x,
                        float* KILN_RESTRICT y) {
  constexpr int64_t kBlock = 64;
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t oh = 0; oh < s.OH; ++oh)
      for (int64_t ow = 0; ow < s.OW; ++ow)
        for (int64_t c0 = 0; c0 < s.C; c0 += kBlock) {
          const int64_t nc = std::min(kBlock, s.C - c0);
          float acc[kBlock];
          for (int64_t c = 0; c < nc; ++c) acc[c] = is_max ? -std::numeric_limits<float>::infinity() : 0.f;
          int64_t taps = 0, padded_taps = 0;
          for (int64_t kh = 0; kh < s.KH; ++kh) {
            const int64_t ih = oh * s.SH - s.PH + kh * s.DH;
            for (int64_t kw = 0; kw < s.KW; ++kw) {
              const int64_t iw = ow * s.SW - s.PW + kw * s.DW;
              const bool in_padded = ih >= -s.PH && ih < s.H + s.PH_end && iw >= -s.PW && iw < s.W + s.PW_end;
              padded_taps += in_padded ? 1 : 0;
              if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) continue;
              ++taps;
              const float* KILN_RESTRICT xp = x + ((n * s.H + ih) * s.W + iw) * s.C + c0;
              if (is_max)
                for (int64_t c = 0; c < nc; ++c) acc[c] = std::max(acc[c], xp[c]);
              else
                for (int64_t c = 0; c < nc; ++c) acc[c] += xp[c];
            }
          }
          float* KILN_RESTRICT yp = y + ((n * s.OH + oh) * s.OW + ow) * s.C + c0;
          if (is_max) {
            for (int64_t c = 0; c < nc; ++c) yp[c] = acc[c];
          } else {
            const int64_t count = count_include_pad ? padded_taps : taps;
            const float inv = count > 0 ? 1.f / static_cast<float>(count) : 0.f;
            for (int64_t c = 0; c < nc; ++c) yp[c] = acc[c] * inv;
          }
        }
}

// y[n][c] = mean (or max) over the P pixels of x [N][P][C].
inline void global_pool_nhwc(int64_t N, int64_t P, int64_t C, bool is_max, const float* KILN_RESTRICT x,
                             float* KILN_RESTRICT y) {
  for (int64_t n = 0; n < N; ++n) {
    float* KILN_RESTRICT yr = y + n * C;
    const float* xr = x + n * P * C;
    for (int64_t c = 0; c < C; ++c) yr[c] = is_max ? -std::numeric_limits<float>::infinity() : 0.f;
    for (int64_t p = 0; p < P; ++p) {
      const float* KILN_RESTRICT xp = xr + p * C;
      if (is_max)
        for (int64_t c = 0; c < C; ++c) yr[c] = std::max(yr[c], xp[c]);
      else
        for (int64_t c = 0; c < C; ++c) yr[c] += xp[c];
    }
    if (!is_max) {
      const float inv = 1.f / static_cast<float>(P);
      for (int64_t c = 0; c < C; ++c) yr[c] *= inv;
    }
  }
}

}  // namespace kiln_kernels
