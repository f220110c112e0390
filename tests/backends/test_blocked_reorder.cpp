// kiln's NHWC <-> nChw16c reorders (blocked_reorder.cpp) against the layout's index formula, with
// channels off the block size, a pixel stride wider than the channels, and 1 and 2 threads.
#include "backends/cpu/blocked_reorder.h"

#include <gtest/gtest.h>

#include <vector>

namespace kiln {
namespace {

TEST(BlockedReorder, MatchesTheIndexFormula) {
  for (int64_t C : {16, 20, 5, 48})
    for (int64_t ld : {C, C + 7})
      for (int threads : {1, 2}) {
        SCOPED_TRACE("C " + std::to_string(C) + " ld " + std::to_string(ld) + " threads " + std::to_string(threads));
        const int64_t N = 2, H = 9, W = 13, blocks = (C + 15) / 16;
        std::vector<float> nhwc(N * H * W * ld);
        for (size_t i = 0; i < nhwc.size(); ++i) nhwc[i] = static_cast<float>(i % 1009) - 500.f;
        std::vector<float> blocked(N * blocks * H * W * 16, -1.f);
        backends::cpu::nhwc_to_blocked16(nhwc.data(), blocked.data(), N, C, H, W, ld, threads);
        for (int64_t n = 0; n < N; ++n)
          for (int64_t c = 0; c < blocks * 16; ++c)
            for (int64_t h = 0; h < H; ++h)
              for (int64_t w = 0; w < W; ++w) {
                const float got = blocked[(((n * blocks + c / 16) * H + h) * W + w) * 16 + c % 16];
                const float want = c < C ? nhwc[((n * H + h) * W + w) * ld + c] : 0.f;  // padding is zero
                ASSERT_EQ(got, want) << n << " " << c << " " << h << " " << w;
              }
        std::vector<float> back(nhwc.size(), 7.f);
        backends::cpu::blocked16_to_nhwc(blocked.data(), back.data(), N, C, H, W, ld, threads);
        for (size_t i = 0; i < back.size(); ++i) {
          const bool channel = static_cast<int64_t>(i % ld) < C;
          ASSERT_EQ(back[i], channel ? nhwc[i] : 7.f) << i;  // a slice's neighbours are left alone
        }
      }
}

TEST(BlockedReorder, DenseIntoAChannelSlice) {
  for (int threads : {1, 2}) {
    const int64_t pixels = 3000, C = 20, ld = 52;
    std::vector<float> src(pixels * C), dst(pixels * ld, 7.f);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i);
    backends::cpu::nhwc_to_slice(src.data(), dst.data() + 9, pixels, C, ld, threads);
    for (int64_t q = 0; q < pixels; ++q)
      for (int64_t c = 0; c < ld; ++c) {
        const bool in_slice = c >= 9 && c < 9 + C;
        ASSERT_EQ(dst[q * ld + c], in_slice ? src[q * C + c - 9] : 7.f) << threads << " " << q << " " << c;
      }
  }
}

}  // namespace
}  // namespace kiln
