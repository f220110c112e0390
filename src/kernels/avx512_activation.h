// Activation epilogues on 16 floats in AVX-512 intrinsics, for the kernels that apply them in
// registers before the store (depthwise_rows.h here; kiln's CPU backend: its pointwise, stem
// and Winograd convs). SiLU: x / (1 + 2^{-x log2 e}), 2^y by exp2_ps below (the degree-5
// polynomial of math::exp2_in_range), one division and no separate multiply: faster than GCC's
// vectorization of math::silu. The clamp to 2^{+-100} keeps every lane normal (see
// math::sigmoid). The functions carry target("avx512f"), so they build without -mavx512f too;
// callers run them only on a CPU with AVX-512F.
#pragma once
#include <immintrin.h>

#include "activation.h"
#include "vector_math.h"

namespace kiln_kernels {

// GCC 12 warns of the undefined pass-through operand inside its own _mm512_min_ps/_mm512_max_ps.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// 2^t for t in [-126, 127] (callers clamp): 2^k 2^f with k rounded by adding and subtracting
// 1.5 * 2^23, added into the exponent bits of the degree-5 polynomial for 2^f on [-0.5, 0.5].
__attribute__((target("avx512f"), always_inline)) inline __m512 exp2_ps(__m512 t) {
  const __m512 shift = _mm512_set1_ps(12582912.f);
  const __m512 ks = _mm512_add_ps(t, shift);
  const __m512 f = _mm512_sub_ps(t, _mm512_sub_ps(ks, shift));
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(1.327647129073739e-3f), f, _mm512_set1_ps(9.675541892647743e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.550713092088699e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.402212023735046e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.931469440460205e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0000001192092896f));
  return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(p), _mm512_slli_epi32(_mm512_castps_si512(ks), 23)));
}

__attribute__((target("avx512f"), always_inline)) inline __m512 silu_ps(__m512 x) {
  const __m512 t = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(x, _mm512_set1_ps(-1.44269504089f)), _mm512_set1_ps(-100.f)),
                                 _mm512_set1_ps(100.f));
  return _mm512_div_ps(x, _mm512_add_ps(exp2_ps(t), _mm512_set1_ps(1.f)));
}

// GELU, erf form: 0.5 x (1 + erf(x / sqrt 2)), erf as math::erf has it (x P(x^2) / Q(x^2) on
// [-4, 4], saturated outside), so a kernel's epilogue agrees with the separate Gelu kernel.
__attribute__((target("avx512f"), always_inline)) inline __m512 gelu_erf_ps(__m512 x) {
  const __m512 t = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(x, _mm512_set1_ps(0.70710678118654752f)),
                                               _mm512_set1_ps(-4.f)),
                                 _mm512_set1_ps(4.f));
  const __m512 t2 = _mm512_mul_ps(t, t);
  __m512 p = _mm512_set1_ps(math::kErfP[0]), q = _mm512_set1_ps(math::kErfQ[0]);
#pragma GCC unroll 7
  for (int i = 1; i < 7; ++i) p = _mm512_fmadd_ps(p, t2, _mm512_set1_ps(math::kErfP[i]));
#pragma GCC unroll 5
  for (int i = 1; i < 5; ++i) q = _mm512_fmadd_ps(q, t2, _mm512_set1_ps(math::kErfQ[i]));
  const __m512 erf = _mm512_div_ps(_mm512_mul_ps(t, p), q);
  const __m512 half_x = _mm512_mul_ps(x, _mm512_set1_ps(0.5f));
  return _mm512_fmadd_ps(half_x, erf, half_x);
}

// GELU, tanh form: 0.5 x (1 + tanh(u)) with u = sqrt(2 / pi) (x + 0.044715 x^3), which is
// x sigmoid(2u) = x / (1 + 2^(-2u log2 e)): silu_ps's form, the exponent clamped alike.
__attribute__((target("avx512f"), always_inline)) inline __m512 gelu_tanh_ps(__m512 x) {
  const __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
  const __m512 u = _mm512_mul_ps(_mm512_fmadd_ps(x3, _mm512_set1_ps(0.044715f), x), _mm512_set1_ps(0.7978845608028654f));
  const __m512 t = _mm512_min_ps(
      _mm512_max_ps(_mm512_mul_ps(u, _mm512_set1_ps(-2.88539008177793f)), _mm512_set1_ps(-100.f)), _mm512_set1_ps(100.f));
  return _mm512_div_ps(x, _mm512_add_ps(exp2_ps(t), _mm512_set1_ps(1.f)));
}

// e^d for d <= 0 (a softmax's scores less their maximum), 0 below -80 as
// underflow_to_zero (norm.h) has it: 2^(d log2 e), the exponent clamped at -126 so every lane
// stays normal.
__attribute__((target("avx512f"), always_inline)) inline __m512 exp_nonpositive_ps(__m512 d) {
  const __m512 t = _mm512_max_ps(_mm512_mul_ps(d, _mm512_set1_ps(1.44269504089f)), _mm512_set1_ps(-126.f));
  return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(d, _mm512_set1_ps(-80.f), _CMP_GE_OQ), exp2_ps(t));
}

// y[j] = softmax over j of (x[j] * scale + (add ? add[j] : 0) + add_const), j < n; y may be x:
// norm.h's softmax_row in three sweeps of 16 lanes (scale and maximum, exponent and sum,
// normalize), where GCC's vectorization of that one ran at a third of the speed.
__attribute__((target("avx512f"))) inline void softmax_row_avx512(const float* x, float* y, int64_t n, float scale,
                                                                  const float* add, float add_const) {
  const __m512 sc = _mm512_set1_ps(scale), ac = _mm512_set1_ps(add_const);
  __m512 mx = _mm512_set1_ps(-__builtin_inff());
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = n - j >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << (n - j)) - 1);
    __m512 v = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + j), sc, ac);
    if (add) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, add + j));
    _mm512_mask_storeu_ps(y + j, m, v);
    mx = _mm512_mask_max_ps(mx, m, mx, v);
  }
  const __m512 top = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
  __m512 sum = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = n - j >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << (n - j)) - 1);
    const __m512 e = exp_nonpositive_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, y + j), top));
    _mm512_mask_storeu_ps(y + j, m, e);
    sum = _mm512_mask_add_ps(sum, m, sum, e);
  }
  const __m512 inv = _mm512_set1_ps(1.f / _mm512_reduce_add_ps(sum));
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = n - j >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << (n - j)) - 1);
    _mm512_mask_storeu_ps(y + j, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, y + j), inv));
  }
}

// The activations applied in registers: none, Relu (lo = 0), Clip (lo, hi), SiLU, HardSigmoid
// (lo = alpha, hi = beta), HardSwish, LeakyRelu (lo = alpha), Gelu and GeluTanh; the others
// (Sigmoid, Tanh) are applied by the caller after storing (in_registers).
__attribute__((target("avx512f"), always_inline)) inline __m512 activation_ps(__m512 v, Act kind, __m512 lo, __m512 hi) {
  const __m512 zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.f);
  switch (kind) {
    case Act::Relu: return _mm512_max_ps(v, lo);
    case Act::Clip: return _mm512_min_ps(_mm512_max_ps(v, lo), hi);
    case Act::SiLU: return silu_ps(v);
    case Act::HardSigmoid: return _mm512_min_ps(_mm512_max_ps(_mm512_fmadd_ps(v, lo, hi), zero), one);
    case Act::HardSwish: {
      const __m512 gate = _mm512_fmadd_ps(v, _mm512_set1_ps(1.f / 6.f), _mm512_set1_ps(0.5f));
      return _mm512_mul_ps(v, _mm512_min_ps(_mm512_max_ps(gate, zero), one));
    }
    case Act::LeakyRelu: return _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), v, lo);
    case Act::Gelu: return gelu_erf_ps(v);
    case Act::GeluTanh: return gelu_tanh_ps(v);
    default: return v;
  }
}
#pragma GCC diagnostic pop

constexpr bool in_registers(Act kind) {
  return kind == Act::None || kind == Act::Relu || kind == Act::Clip || kind == Act::SiLU || kind == Act::HardSigmoid ||
         kind == Act::HardSwish || kind == Act::LeakyRelu || kind == Act::Gelu || kind == Act::GeluTanh;
}

// The `lo` and `hi` operands of activation_ps for `kind` with parameters a, b.
__attribute__((target("avx512f"), always_inline)) inline __m512 activation_lo(Act kind, float a) {
  return _mm512_set1_ps(kind == Act::Relu ? 0.f : a);
}
__attribute__((target("avx512f"), always_inline)) inline __m512 activation_hi(float b) { return _mm512_set1_ps(b); }

}  // namespace kiln_kernels
