// Scalar math written to vectorize: e^x, 2^y, the sigmoid, SiLU, tanh and erf as branch-free
// polynomials (no libm call, which would keep a loop scalar), accurate to a few float ulps over
// the whole range. The CPU backend's loops (backends/cpu/simd.h) and the emitted projects'
// activation epilogues (common.h) use them.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

namespace kiln_kernels::math {

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

// 2^y for y in [-126, 127] (callers clamp): y = n + f with f in [-0.5, 0.5], 2^f by a degree-5
// polynomial (relative error 7.5e-8, fitted to minimize the relative error), 2^n in the
// exponent bits.
inline float exp2_in_range(float y) {
  const float n = __builtin_floorf(y + 0.5f);
  const float f = y - n;
  float p = 1.327647129073739e-3f;
  p = p * f + 9.675541892647743e-3f;
  p = p * f + 5.550713092088699e-2f;
  p = p * f + 2.402212023735046e-1f;
  p = p * f + 6.931469440460205e-1f;
  p = p * f + 1.0000001192092896f;
  const int32_t e = (static_cast<int32_t>(n) + 127) << 23;
  float s;
  std::memcpy(&s, &e, 4);
  return p * s;
}

// 1 / (1 + e^{-x}) with e^{-x} = 2^{-x log2 e} clamped to 2^{+-100}: past that the result is 1
// or 7.9e-31, in float as good as exact. The clamp keeps every value normal. GCC if-converts a
// clamp into whole "saturated" lanes computed for every element, and a denormal there (as with
// exp()'s clamp at 88.7, 1 / (1 + 3.4e38)) costs a microcode assist per vector, many times the
// vector's arithmetic.
inline float sigmoid(float x) {
  const float y = std::min(std::max(x * -1.44269504089f, -100.0f), 100.0f);
  return 1.0f / (1.0f + exp2_in_range(y));
}

inline float silu(float x) { return x * sigmoid(x); }

// tanh, relative error below 3e-7 over the whole range. For |x| >= 0.625 through e^{2x}:
// 1 - 2 / (e^{2x} + 1), exact limits at +-1 once e^{2x} saturates. Nearer 0 that subtraction
// cancels (tanh(4.5e-5) would lose 0.2%), so there the odd polynomial x + x^3 P(x^2) (Cephes'
// tanhf) takes over; both are computed and one selected, which keeps the loop vectorized.
inline float tanh(float x) {
  const float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const float near_zero = x + x * z * p;
  const float far = 1.0f - 2.0f / (exp(2.0f * x) + 1.0f);
  return __builtin_fabsf(x) < 0.625f ? near_zero : far;
}

// erf as the rational minimax form x P(x^2) / Q(x^2) on [-4, 4] (the single-precision
// approximation Eigen and XLA use), saturated outside; absolute error below 4e-7. The
// coefficients, highest power first, are shared with the AVX-512 form (avx512_activation.h).
inline constexpr float kErfP[7] = {-2.72614225801306e-10f, 2.77068142495902e-08f, -2.10102402082508e-06f,
                                   -5.69250639462346e-05f, -7.34990630326855e-04f, -2.95459980854025e-03f,
                                   -1.60960333262415e-02f};
inline constexpr float kErfQ[5] = {-1.45660718464996e-05f, -2.13374055278905e-04f, -1.68282697438203e-03f,
                                   -7.37332916720468e-03f, -1.42647390514189e-02f};
inline float erf(float x) {
  x = std::min(std::max(x, -4.0f), 4.0f);
  const float x2 = x * x;
  // Written out (no loop) so that GCC vectorizes the loops that call it.
  const float p = (((((kErfP[0] * x2 + kErfP[1]) * x2 + kErfP[2]) * x2 + kErfP[3]) * x2 + kErfP[4]) * x2 + kErfP[5]) *
                      x2 +
                  kErfP[6];
  const float q = (((kErfQ[0] * x2 + kErfQ[1]) * x2 + kErfQ[2]) * x2 + kErfQ[3]) * x2 + kErfQ[4];
  return x * p / q;
}

}  // namespace kiln_kernels::math
