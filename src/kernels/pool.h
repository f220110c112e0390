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

namespace detail {

// The taps [begin, end) of one window axis whose input index start + k * d lies in [lo, hi).
inline void tap_range(int64_t start, int64_t k, int64_t d, int64_t lo, int64_t hi, int64_t& begin, int64_t& end) {
  begin = start < lo ? (lo - start + d - 1) / d : 0;
  end = start + (k - 1) * d < hi ? k : (hi - start + d - 1) / d;
  if (end < begin) end = begin;
}

template <bool IsMax>
inline void pool_pixel(const Pool2dShape& s, bool count_include_pad, const float* x_img, float* yp, int64_t oh, int64_t ow) {
  constexpr int64_t kBlock = 64;
  const int64_t h0 = oh * s.SH - s.PH, w0 = ow * s.SW - s.PW;
  int64_t kh0, kh1, kw0, kw1;
  tap_range(h0, s.KH, s.DH, 0, s.H, kh0, kh1);
  tap_range(w0, s.KW, s.DW, 0, s.W, kw0, kw1);
  int64_t count = (kh1 - kh0) * (kw1 - kw0);
  if (!IsMax && count_include_pad) {
    int64_t ph0, ph1, pw0, pw1;
    tap_range(h0, s.KH, s.DH, -s.PH, s.H + s.PH_end, ph0, ph1);
    tap_range(w0, s.KW, s.DW, -s.PW, s.W + s.PW_end, pw0, pw1);
    count = (ph1 - ph0) * (pw1 - pw0);
  }
  const float inv = count > 0 ? 1.f / static_cast<float>(count) : 0.f;
  const float init = IsMax ? -std::numeric_limits<float>::infinity() : 0.f;
  int64_t c0 = 0;
  // Blocks of 64 channels in four vector registers, then single vectors, then the scalar tail.
  for (; c0 + kBlock <= s.C; c0 += kBlock) {
    v16f acc[4];
    for (int v = 0; v < 4; ++v) acc[v] = splat16(init);
    for (int64_t kh = kh0; kh < kh1; ++kh)
      for (int64_t kw = kw0; kw < kw1; ++kw) {
        const float* xp = x_img + ((h0 + kh * s.DH) * s.W + w0 + kw * s.DW) * s.C + c0;
        for (int v = 0; v < 4; ++v) acc[v] = IsMax ? max16(acc[v], load16(xp + 16 * v)) : acc[v] + load16(xp + 16 * v);
      }
    for (int v = 0; v < 4; ++v) store16(yp + c0 + 16 * v, IsMax ? acc[v] : acc[v] * inv);
  }
  for (; c0 + 16 <= s.C; c0 += 16) {
    v16f acc = splat16(init);
    for (int64_t kh = kh0; kh < kh1; ++kh)
      for (int64_t kw = kw0; kw < kw1; ++kw) {
        const float* xp = x_img + ((h0 + kh * s.DH) * s.W + w0 + kw * s.DW) * s.C + c0;
        acc = IsMax ? max16(acc, load16(xp)) : acc + load16(xp);
      }
    store16(yp + c0, IsMax ? acc : acc * inv);
  }
  for (; c0 < s.C; ++c0) {
    float acc = init;
    for (int64_t kh = kh0; kh < kh1; ++kh)
      for (int64_t kw = kw0; kw < kw1; ++kw) {
        const float x = x_img[((h0 + kh * s.DH) * s.W + w0 + kw * s.DW) * s.C + c0];
        acc = IsMax ? (x > acc ? x : acc) : acc + x;
      }
    yp[c0] = IsMax ? acc : acc * inv;
  }
}

}  // namespace detail

// is_max: max pooling; else average, dividing by the taps inside the input, or with
// count_include_pad by those inside the padded input. Each window's taps inside the input are
// found once, so the channel loops carry no bounds checks.
inline void pool2d_nhwc(const Pool2dShape& s, bool is_max, bool count_include_pad, const float* x, float* y,
                        Team* team = nullptr) {
  parallel_for(team, s.N * s.OH, [&](int64_t row0, int64_t row1) {
    for (int64_t row = row0; row < row1; ++row) {
      const int64_t n = row / s.OH, oh = row % s.OH;
      for (int64_t ow = 0; ow < s.OW; ++ow) {
        const float* x_img = x + n * s.H * s.W * s.C;
        float* yp = y + ((n * s.OH + oh) * s.OW + ow) * s.C;
        if (is_max) detail::pool_pixel<true>(s, count_include_pad, x_img, yp, oh, ow);
        else detail::pool_pixel<false>(s, count_include_pad, x_img, yp, oh, ow);
      }
    }
  });
}

// y[n][c] = mean (or max) over the P pixels of x [N][P][C].
inline void global_pool_nhwc(int64_t N, int64_t P, int64_t C, bool is_max, const float* x, float* y) {
  const float init = is_max ? -std::numeric_limits<float>::infinity() : 0.f;
  const float inv = 1.f / static_cast<float>(P);
  for (int64_t n = 0; n < N; ++n) {
    const float* xr = x + n * P * C;
    float* yr = y + n * C;
    const int64_t vectors = C / 16 * 16;
    for (int64_t c = 0; c < vectors; c += 16) {
      v16f acc = splat16(init);
      for (int64_t p = 0; p < P; ++p) acc = is_max ? max16(acc, load16(xr + p * C + c)) : acc + load16(xr + p * C + c);
      store16(yr + c, is_max ? acc : acc * inv);
    }
    for (int64_t c = vectors; c < C; ++c) {
      float acc = init;
      for (int64_t p = 0; p < P; ++p) acc = is_max ? std::max(acc, xr[p * C + c]) : acc + xr[p * C + c];
      yr[c] = is_max ? acc : acc * inv;
    }
  }
}

}  // namespace kiln_kernels
