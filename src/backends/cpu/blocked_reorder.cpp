#include "backends/cpu/blocked_reorder.h"

#include <algorithm>
#include <cstring>

#include "backends/cpu/parallel.h"
#include "backends/cpu/simd.h"

namespace kiln::backends::cpu {

namespace {

KILN_SIMD void to_blocked_rows(const float* src, float* dst, int64_t C, int64_t H, int64_t W, int64_t ld, int64_t r0,
                               int64_t r1) {
  const int64_t blocks = (C + 15) / 16;
  for (int64_t r = r0; r < r1; ++r) {  // r = n * H + h
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

KILN_SIMD void from_blocked_rows(const float* src, float* dst, int64_t C, int64_t H, int64_t W, int64_t ld, int64_t r0,
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

int team(int64_t elements, int threads) { return elements >= kParallelMinElements ? threads : 1; }

}  // namespace

void nhwc_to_blocked16(const float* src, float* dst, int64_t N, int64_t C, int64_t H, int64_t W, int64_t ld,
                       int threads) {
  parallel_for(N * H, team(N * H * W * C, threads),
               [&](int64_t b, int64_t e) { to_blocked_rows(src, dst, C, H, W, ld, b, e); });
}

void blocked16_to_nhwc(const float* src, float* dst, int64_t N, int64_t C, int64_t H, int64_t W, int64_t ld,
                       int threads) {
  parallel_for(N * H, team(N * H * W * C, threads),
               [&](int64_t b, int64_t e) { from_blocked_rows(src, dst, C, H, W, ld, b, e); });
}

void nhwc_to_slice(const float* src, float* dst, int64_t pixels, int64_t C, int64_t ld, int threads) {
  parallel_for(pixels, team(pixels * C, threads), [&](int64_t b, int64_t e) {
    for (int64_t q = b; q < e; ++q) std::memcpy(dst + q * ld, src + q * C, static_cast<size_t>(C) * sizeof(float));
  });
}

}  // namespace kiln::backends::cpu
