// Normalizations over the last axis, row by row: (skip) layer normalization and softmax.
#pragma once
#include <vector>

#include "common.h"

namespace kiln_kernels {

// For each of `rows` rows of H: s = x + skip + bias (skip, bias may be null); y = (s - mean) /
// sqrt(var + eps) * gamma + beta; sum (when not null) = s. Statistics in double, as the
// reference kernels compute them.
inline void layernorm_rows(int64_t rows, int64_t H, const float* x, const float* skip, const float* gamma,
                           const float* beta, const float* bias, float eps, float* y, float* sum, Team* team = nullptr) {
  parallel_for(team, rows, [&](int64_t r0, int64_t r1) {
    std::vector<float> row(static_cast<size_t>(H));
    float* s = row.data();
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * H;
      const float* sr = skip ? skip + r * H : nullptr;
      double mean = 0;
      for (int64_t i = 0; i < H; ++i) {
        float v = xr[i];
        if (sr) v += sr[i];
        if (bias) v += bias[i];
        s[i] = v;
        mean += v;
      }
      mean /= static_cast<double>(H);
      double var = 0;
      for (int64_t i = 0; i < H; ++i) {
        const double d = s[i] - mean;
        var += d * d;
      }
      var /= static_cast<double>(H);
      const float m = static_cast<float>(mean);
      const float inv = static_cast<float>(1.0 / std::sqrt(var + static_cast<double>(eps)));
      float* KILN_RESTRICT yr = y + r * H;
      for (int64_t i = 0; i < H; ++i) yr[i] = (s[i] - m) * inv * gamma[i] + (beta ? beta[i] : 0.f);
      if (sum) std::memcpy(sum + r * H, s, static_cast<size_t>(H) * sizeof(float));
    }
  });
}

// Softmax over axis of extent A, for x viewed as [outer][A][inner].
inline void softmax(int64_t outer, int64_t A, int64_t inner, const float* x, float* y, Team* team = nullptr) {
  parallel_for(team, outer * inner, [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) {
      const int64_t o = j / inner, i = j % inner;
      const float* xr = x + o * A * inner + i;
      float* yr = y + o * A * inner + i;
      float mx = xr[0];
      for (int64_t a = 1; a < A; ++a) mx = std::max(mx, xr[a * inner]);
      float total = 0.f;
      for (int64_t a = 0; a < A; ++a) {
        const float e = math::exp(xr[a * inner] - mx);
        yr[a * inner] = e;
        total += e;
      }
      const float inv = 1.f / total;
      for (int64_t a = 0; a < A; ++a) yr[a * inner] *= inv;
    }
  });
}

}  // namespace kiln_kernels
