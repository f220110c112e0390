// NHWC <-> oneDNN's nChw16c (the Winograd convs' layout), a range of image rows at a time so
// that a team can split them: kiln's CPU backend (blocked_reorder.cpp) and emitted projects'
// oneDNN convs (onednn_conv.h) copy with these where oneDNN 2.x's reorder would run on one
// thread.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

namespace kiln_kernels {

// Rows [r0, r1) (r = n * H + h) of N images of H x W pixels, `ld` floats apart (ld >= C),
// into nChw16c with the channels padded with zeros to a multiple of 16.
inline void nhwc_to_blocked16_rows(const float* src, float* dst, int64_t C, int64_t H, int64_t W, int64_t ld, int64_t r0,
                                   int64_t r1) {
  const int64_t blocks = (C + 15) / 16;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t n = r / H, h = r % H;
    const float* in = src + r * W * ld;
    for (int64_t b = 0; b < blocks; ++b) {
      float* out = dst + ((n * blocks + b) * H + h) * W * 16;
      const int64_t c0 = b * 16, width = std::min<int64_t>(16, C - c0);
      if (width == 16) {
        for (int64_t w = 0; w < W; ++w)
          for (int64_t c = 0; c < 16; ++c) out[w * 16 + c] = in[w * ld + c0 + c];
      } else {
        for (int64_t w = 0; w < W; ++w)
          for (int64_t c = 0; c < 16; ++c) out[w * 16 + c] = c < width ? in[w * ld + c0 + c] : 0.f;
      }
    }
  }
}

// The inverse: each pixel's C channels go to `ld`-float rows of dst (the rest of a row is left
// as it was, so dst may be a channel slice of a wider tensor).
inline void blocked16_to_nhwc_rows(const float* src, float* dst, int64_t C, int64_t H, int64_t W, int64_t ld, int64_t r0,
                                   int64_t r1) {
  const int64_t blocks = (C + 15) / 16;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t n = r / H, h = r % H;
    float* out = dst + r * W * ld;
    for (int64_t b = 0; b < blocks; ++b) {
      const float* in = src + ((n * blocks + b) * H + h) * W * 16;
      const int64_t c0 = b * 16, width = std::min<int64_t>(16, C - c0);
      if (width == 16) {
        for (int64_t w = 0; w < W; ++w)
          for (int64_t c = 0; c < 16; ++c) out[w * ld + c0 + c] = in[w * 16 + c];
      } else {
        for (int64_t w = 0; w < W; ++w) std::memcpy(out + w * ld + c0, in + w * 16, static_cast<size_t>(width) * 4);
      }
    }
  }
}

}  // namespace kiln_kernels
