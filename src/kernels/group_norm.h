// InstanceNormalization and GroupNormalization for emitted code: per (image, group) the mean and
// the variance about it (two passes, in double), then y = (x - mean) / sqrt(var + eps) * scale +
// bias, scale and bias per channel (InstanceNorm, GroupNormalization-21) or per group
// (GroupNormalization-18). Channels-first x [N][C][P] or channels-last [N][P][C] (the kiln.Nhwc*
// forms the layout assignment makes after a conv). The team splits the (image, group) pairs.
#pragma once
#include <cmath>
#include <cstdint>

#include "parallel.h"

namespace kiln_kernels {

struct GroupNormShape {
  int64_t N, C, G, P;  // images, channels, groups, pixels per image
  bool channels_last, per_group;
  float eps;
};

inline void group_norm(const GroupNormShape& s, const float* x, const float* scale, const float* bias, float* y,
                       Team* team) {
  const int64_t CG = s.C / s.G;
  // Element (n, c, p)'s offset.
  auto at = [&](int64_t n, int64_t c, int64_t p) {
    return s.channels_last ? (n * s.P + p) * s.C + c : (n * s.C + c) * s.P + p;
  };
  parallel_for(team, s.N * s.G, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t n = b / s.G, g = b % s.G;
      double sum = 0;
      for (int64_t c = g * CG; c < (g + 1) * CG; ++c)
        for (int64_t p = 0; p < s.P; ++p) sum += x[at(n, c, p)];
      const double count = static_cast<double>(CG * s.P), mean = sum / count;
      double sq = 0;
      for (int64_t c = g * CG; c < (g + 1) * CG; ++c)
        for (int64_t p = 0; p < s.P; ++p) {
          const double d = x[at(n, c, p)] - mean;
          sq += d * d;
        }
      const double inv = 1.0 / std::sqrt(sq / count + static_cast<double>(s.eps));
      for (int64_t c = g * CG; c < (g + 1) * CG; ++c) {
        const int64_t k = s.per_group ? g : c;
        const float a = static_cast<float>(inv * scale[k]);
        const float sh = static_cast<float>(bias[k] - mean * inv * scale[k]);
        for (int64_t p = 0; p < s.P; ++p) y[at(n, c, p)] = x[at(n, c, p)] * a + sh;
      }
    }
  });
}

}  // namespace kiln_kernels
