// Sum, dot product, squared deviation and max of a float row, vectorizable. GCC vectorizes a
// reduction only when it may reassociate (-ffast-math, which kiln does not use), so these keep
// 16 independent partial results that map onto one register's lanes. kiln's CPU backend
// inlines them into its kernels' per-ISA clones (backends/cpu/simd_reduce.h); emitted code
// compiles them for its target's ISA. Each counts its whole-vector part first: with a constant
// extent (emitted code), GCC 12 warns of undefined behaviour in a tail loop that continues the
// vector loop's index (-Waggressive-loop-optimizations), which emitted projects' -Werror refuses.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

namespace kiln_kernels::reduce {

inline float sum(const float* x, int64_t n) {
  float acc[16] = {};
  const int64_t full = n / 16 * 16;
  for (int64_t j = 0; j < full; j += 16)
    for (int k = 0; k < 16; ++k) acc[k] += x[j + k];
  float s = 0.f;
  for (int64_t j = full; j < n; ++j) s += x[j];
  for (int k = 0; k < 16; ++k) s += acc[k];
  return s;
}

// Sum of a[j] * b[j].
inline float dot(const float* a, const float* b, int64_t n) {
  float acc[16] = {};
  const int64_t full = n / 16 * 16;
  for (int64_t j = 0; j < full; j += 16)
    for (int k = 0; k < 16; ++k) acc[k] += a[j + k] * b[j + k];
  float s = 0.f;
  for (int64_t j = full; j < n; ++j) s += a[j] * b[j];
  for (int k = 0; k < 16; ++k) s += acc[k];
  return s;
}

// Sum of (x[j] - c)^2.
inline float sum_sq_dev(const float* x, int64_t n, float c) {
  float acc[16] = {};
  const int64_t full = n / 16 * 16;
  for (int64_t j = 0; j < full; j += 16)
    for (int k = 0; k < 16; ++k) {
      const float d = x[j + k] - c;
      acc[k] += d * d;
    }
  float s = 0.f;
  for (int64_t j = full; j < n; ++j) s += (x[j] - c) * (x[j] - c);
  for (int k = 0; k < 16; ++k) s += acc[k];
  return s;
}

inline float max(const float* x, int64_t n) {
  // Partial maxima as GCC vectors: GCC will not SLP-vectorize scalar max chains (without
  // -ffinite-math-only a max is a compare-and-select), but it maps a select on 8-float vectors
  // straight onto AVX registers (two of them, to keep two compares in flight).
  typedef float v8 __attribute__((vector_size(32)));
  constexpr float lo = -std::numeric_limits<float>::infinity();
  v8 a = {lo, lo, lo, lo, lo, lo, lo, lo}, b = a;
  const int64_t full = n / 16 * 16;
  for (int64_t j = 0; j < full; j += 16) {
    v8 u, v;
    std::memcpy(&u, x + j, sizeof u);
    std::memcpy(&v, x + j + 8, sizeof v);
    a = a > u ? a : u;
    b = b > v ? b : v;
  }
  float m = lo;
  for (int64_t j = full; j < n; ++j) m = std::max(m, x[j]);
  for (int k = 0; k < 8; ++k) m = std::max(m, std::max(a[k], b[k]));
  return m;
}

// a or v, whichever wins; a NaN, once seen, stays (numpy's and the reference kernel's rule).
inline float pick(float a, float v, bool is_max) {
  const bool take = (is_max ? v > a : v < a) | (v != v);
  return take ? v : a;
}

// The max (or min) of a row with NaNs kept, in two 8-float vectors (GCC does not vectorize
// scalar select chains).
inline float extreme(const float* x, int64_t n, bool is_max) {
  typedef float v8 __attribute__((vector_size(32)));
  const float init = is_max ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  v8 a = {init, init, init, init, init, init, init, init}, b = a;
  const int64_t full = n / 16 * 16;
  for (int64_t j = 0; j < full; j += 16) {
    v8 u, v;
    std::memcpy(&u, x + j, sizeof u);
    std::memcpy(&v, x + j + 8, sizeof v);
    a = ((is_max ? u > a : u < a) | (u != u)) ? u : a;
    b = ((is_max ? v > b : v < b) | (v != v)) ? v : b;
  }
  float m = init;
  for (int k = 0; k < 8; ++k) m = pick(pick(m, a[k], is_max), b[k], is_max);
  for (int64_t j = full; j < n; ++j) m = pick(m, x[j], is_max);
  return m;
}

}  // namespace kiln_kernels::reduce
