// LRN (local response normalization across channels) for kiln's CPU backend and emitted code:
// y = x / (bias + alpha / size * the sum of x^2 over the channel window)^beta, the window of
// channel c being [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)] (ONNX's: an even size
// reaches one channel further up than down). x [N][C][P] channels-first; the caller splits the
// (image, channel) planes between threads.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace kiln_kernels {

struct LrnShape {
  int64_t N, C, P, size;
  float alpha, beta, bias;
};

// Planes [q0, q1) of the N x C (image, channel) planes, in runs of 256 pixels whose sums of
// squares stay on the stack.
inline void lrn_planes(const LrnShape& s, const float* x, float* y, int64_t q0, int64_t q1) {
  constexpr int64_t kRun = 256;
  const int64_t lo = (s.size - 1) / 2, hi = s.size - 1 - lo;
  const float scale = s.alpha / static_cast<float>(s.size);
  float sq[kRun];
  for (int64_t q = q0; q < q1; ++q) {
    const int64_t n = q / s.C, c = q % s.C;
    for (int64_t p0 = 0; p0 < s.P; p0 += kRun) {
      const int64_t m = std::min(kRun, s.P - p0);
      for (int64_t p = 0; p < m; ++p) sq[p] = 0.f;
      for (int64_t k = std::max<int64_t>(0, c - lo); k <= std::min(s.C - 1, c + hi); ++k) {
        const float* xk = x + (n * s.C + k) * s.P + p0;
        for (int64_t p = 0; p < m; ++p) sq[p] += xk[p] * xk[p];
      }
      const float* xc = x + q * s.P + p0;
      float* yc = y + q * s.P + p0;
      for (int64_t p = 0; p < m; ++p) yc[p] = xc[p] / std::pow(s.bias + scale * sq[p], s.beta);
    }
  }
}

}  // namespace kiln_kernels
