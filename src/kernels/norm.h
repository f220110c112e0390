// Normalizations over the last axis, row by row: (skip) layer normalization and softmax.
#pragma once
#include "common.h"
#include "row_reduce.h"

namespace kiln_kernels {

namespace detail {

template <bool Skip, bool Bias>
[[gnu::always_inline]] inline float add_row(const float* x, const float* skip, const float* bias, float* s, int64_t m) {
  float acc[16] = {};
  const int64_t full = m / 16 * 16;
  for (int64_t j = 0; j < full; j += 16)
    for (int k = 0; k < 16; ++k) {
      float v = x[j + k];
      if constexpr (Skip) v += skip[j + k];
      if constexpr (Bias) v += bias[j + k];
      s[j + k] = v;
      acc[k] += v;
    }
  float total = 0.f;
  for (int64_t j = full; j < m; ++j) {
    float v = x[j];
    if constexpr (Skip) v += skip[j];
    if constexpr (Bias) v += bias[j];
    s[j] = v;
    total += v;
  }
  for (int k = 0; k < 16; ++k) total += acc[k];
  return total;
}

}  // namespace detail

// s = x + skip (+ bias) for one row of m (skip, bias may be null; s may be x); returns the sum
// of s. Sixteen partial sums (reduce::sum's), so the add and the reduction vectorize in one
// sweep; a loop per form, so none tests for its operands inside.
[[gnu::always_inline]] inline float layernorm_add_row(const float* x, const float* skip, const float* bias, float* s,
                                                      int64_t m) {
  if (skip) return bias ? detail::add_row<true, true>(x, skip, bias, s, m) : detail::add_row<true, false>(x, skip, bias, s, m);
  return bias ? detail::add_row<false, true>(x, skip, bias, s, m) : detail::add_row<false, false>(x, skip, bias, s, m);
}

// y = (s - mean) / sqrt(var + eps) * gamma + beta for one row of m (beta may be null; y may be
// s). The variance about the mean in a second sweep, which stays accurate where E[s^2] -
// mean^2 would cancel.
[[gnu::always_inline]] inline void layernorm_normalize_row(const float* s, float* y, int64_t m, float mean,
                                                           const float* gamma, const float* beta, float eps) {
  const float inv = 1.f / std::sqrt(reduce::sum_sq_dev(s, m, mean) / static_cast<float>(m) + eps);
  if (beta) {
    for (int64_t j = 0; j < m; ++j) y[j] = (s[j] - mean) * inv * gamma[j] + beta[j];
  } else {
    for (int64_t j = 0; j < m; ++j) y[j] = (s[j] - mean) * inv * gamma[j];
  }
}

// For each of `rows` rows of H: s = x + skip + bias (skip, bias may be null), summed into the
// row of `sum` when not null, else into y's row, which is then normalized in place (still in
// L1); y = (s - mean) / sqrt(var + eps) * gamma + beta. The rows kiln's CPU backend runs
// kiln.SkipLayerNorm on.
inline void layernorm_rows(int64_t rows, int64_t H, const float* x, const float* skip, const float* gamma,
                           const float* beta, const float* bias, float eps, float* y, float* sum, Team* team = nullptr) {
  parallel_for(team, rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* s = sum ? sum + r * H : y + r * H;
      const float total = layernorm_add_row(x + r * H, skip ? skip + r * H : nullptr, bias, s, H);
      layernorm_normalize_row(s, y + r * H, H, total / static_cast<float>(H), gamma, beta, eps);
    }
  });
}

// e^d, but exactly 0 well before the result could turn denormal once divided by the sum:
// math::exp saturates at e^-87.3, and denormal probabilities make a product that consumes
// attention scores (masked with -10000) run many times slower.
[[gnu::always_inline]] inline float underflow_to_zero(float d) {
  const float e = math::exp(d);
  return d < -80.f ? 0.f : e;
}

// y[j] = softmax over j of (x[j] * scale + (add ? add[j] : 0) + add_const), j < n; y may be x.
// The rows kiln's CPU backend runs Softmax and attention's scores on: each sweep vectorizes.
[[gnu::always_inline]] inline void softmax_row(const float* x, float* y, int64_t n, float scale, const float* add,
                                               float add_const) {
  if (add) {
    for (int64_t j = 0; j < n; ++j) y[j] = x[j] * scale + add[j] + add_const;
  } else {
    for (int64_t j = 0; j < n; ++j) y[j] = x[j] * scale + add_const;
  }
  const float mx = reduce::max(y, n);
  for (int64_t j = 0; j < n; ++j) y[j] = underflow_to_zero(y[j] - mx);
  const float inv = 1.f / reduce::sum(y, n);
  for (int64_t j = 0; j < n; ++j) y[j] *= inv;
}

// Softmax over axis of extent A, for x viewed as [outer][A][inner]: rows (inner 1) by
// softmax_row, else column by column.
inline void softmax(int64_t outer, int64_t A, int64_t inner, const float* x, float* y, Team* team = nullptr) {
  if (inner == 1) {
    parallel_for(team, outer, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) softmax_row(x + o * A, y + o * A, A, 1.f, nullptr, 0.f);
    });
    return;
  }
  parallel_for(team, outer * inner, [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) {
      const int64_t o = j / inner, i = j % inner;
      const float* xr = x + o * A * inner + i;
      float* yr = y + o * A * inner + i;
      float mx = xr[0];
      for (int64_t a = 1; a < A; ++a) mx = std::max(mx, xr[a * inner]);
      float total = 0.f;
      for (int64_t a = 0; a < A; ++a) {
        const float e = underflow_to_zero(xr[a * inner] - mx);
        yr[a * inner] = e;
        total += e;
      }
      const float inv = 1.f / total;
      for (int64_t a = 0; a < A; ++a) yr[a * inner] *= inv;
    }
  });
}

}  // namespace kiln_kernels
