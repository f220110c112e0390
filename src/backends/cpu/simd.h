// Vector code for the CPU backend's own kernels without intrinsics: hot loops are plain C++
// that GCC auto-vectorizes, compiled three times by KILN_SIMD (AVX-512, AVX2+FMA, baseline) and
// picked at load time by the CPU's features (an ifunc). AVX-512 is worth 2x over AVX2 on the
// Zen 5 machines kiln is measured on (../shared/peers/KERNELS.md), and the same binary still runs
// on older CPUs. Files using this are compiled with -fno-trapping-math (CMakeLists.txt), without
// which GCC refuses to vectorize loops containing min/max or division.
//
// Keep KILN_SIMD loops branch-free: use std::min/std::max and the helpers below, never calls to
// libm (expf, tanhf, erff are not vectorized and would make the loop scalar).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

// Sanitizer builds get one plain version: an ifunc resolver runs while the dynamic loader
// relocates the program, before the sanitizer runtime is up, and its instrumented code crashes.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KILN_SIMD
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define KILN_SIMD
#endif
#endif
#ifndef KILN_SIMD
#define KILN_SIMD __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif

namespace kiln::backends::cpu::simd {

// e^x for float, relative error below 2e-7 over the whole range (Cephes' expf polynomial after
// a Cody-Waite reduction by ln 2); saturates to 0 / 3.4e38 outside [-87.3, 88.7].
inline float exp(float x) {
  x = std::min(std::max(x, -87.33654f), 88.72283f);
  const float n = __builtin_floorf(x * 1.44269504089f + 0.5f);
  const float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // 2^n built in the exponent bits; n is in [-126, 128] after the clamp, so split it in two
  // halves to stay clear of the denormal/infinite exponents at the ends.
  const int32_t ni = static_cast<int32_t>(n);
  const int32_t h = ni >> 1;
  const int32_t e1 = (h + 127) << 23, e2 = (ni - h + 127) << 23;
  float s1, s2;
  std::memcpy(&s1, &e1, 4);
  std::memcpy(&s2, &e2, 4);
  return p * s1 * s2;
}

inline float sigmoid(float x) { return 1.0f / (1.0f + simd::exp(-x)); }

// tanh through e^{2x}: 1 - 2 / (e^{2x} + 1); exact limits at +-1 once e^{2x} saturates.
// Absolute error below 2e-7 (relative error grows near 0, where the subtraction cancels).
inline float tanh(float x) { return 1.0f - 2.0f / (simd::exp(2.0f * x) + 1.0f); }

// erf as the rational minimax form x P(x^2) / Q(x^2) on [-4, 4] (the single-precision
// approximation Eigen and XLA use), saturated outside; absolute error below 4e-7.
inline float erf(float x) {
  x = std::min(std::max(x, -4.0f), 4.0f);
  const float x2 = x * x;
  float p = -2.72614225801306e-10f;
  p = p * x2 + 2.77068142495902e-08f;
  p = p * x2 + -2.10102402082508e-06f;
  p = p * x2 + -5.69250639462346e-05f;
  p = p * x2 + -7.34990630326855e-04f;
  p = p * x2 + -2.95459980854025e-03f;
  p = p * x2 + -1.60960333262415e-02f;
  float q = -1.45660718464996e-05f;
  q = q * x2 + -2.13374055278905e-04f;
  q = q * x2 + -1.68282697438203e-03f;
  q = q * x2 + -7.37332916720468e-03f;
  q = q * x2 + -1.42647390514189e-02f;
  return x * p / q;
}

}  // namespace kiln::backends::cpu::simd
