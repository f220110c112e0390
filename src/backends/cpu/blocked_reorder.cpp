#include "backends/cpu/blocked_reorder.h"

#include <algorithm>
#include <cstring>

#include "backends/cpu/parallel.h"
#include "backends/cpu/simd.h"
#include "kernels/blocked_layout.h"

namespace kiln::backends::cpu {

namespace {

// The shared row copies (kernels/blocked_layout.h) compiled once per ISA level.
KILN_SIMD void to_blocked_rows(const float* src, float* dst, int64_t C, int64_t H, int64_t W, int64_t ld, int64_t r0,
                               int64_t r1) {
  kiln_kernels::nhwc_to_blocked16_rows(src, dst, C, H, W, ld, r0, r1);
}

KILN_SIMD void from_blocked_rows(const float* src, float* dst, int64_t C, int64_t H, int64_t W, int64_t ld, int64_t r0,
                                 int64_t r1) {
  kiln_kernels::blocked16_to_nhwc_rows(src, dst, C, H, W, ld, r0, r1);
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
