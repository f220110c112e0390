// Activation epilogues on 16 floats in AVX-512 intrinsics, for the kernels that apply them in
// registers (activation_apply.cpp, the depthwise and pointwise convs). SiLU: x / (1 + 2^{-x log2 e}), 2^y as 2^k 2^f with k rounded
// by adding and subtracting 1.5 * 2^23 and added into the exponent bits of the degree-5
// polynomial for 2^f (simd::exp2_in_range's), one division and no separate multiply: faster
// than GCC's vectorization of simd::silu. The clamp to
// 2^{+-100} keeps every lane normal (see simd::sigmoid). Callers check for AVX-512 at run time.
#pragma once
#include <immintrin.h>

#include "ops/core/activation.h"

namespace kiln::backends::cpu {

// GCC 12 warns of the undefined pass-through operand inside its own _mm512_min_ps/_mm512_max_ps.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f"), always_inline)) inline __m512 silu_ps(__m512 x) {
  const __m512 t = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(x, _mm512_set1_ps(-1.44269504089f)), _mm512_set1_ps(-100.f)),
                                 _mm512_set1_ps(100.f));
  const __m512 shift = _mm512_set1_ps(12582912.f);
  const __m512 ks = _mm512_add_ps(t, shift);
  const __m512 f = _mm512_sub_ps(t, _mm512_sub_ps(ks, shift));
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(1.327647129073739e-3f), f, _mm512_set1_ps(9.675541892647743e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.550713092088699e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.402212023735046e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.931469440460205e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0000001192092896f));
  const __m512i e = _mm512_add_epi32(_mm512_castps_si512(p), _mm512_slli_epi32(_mm512_castps_si512(ks), 23));
  return _mm512_div_ps(x, _mm512_add_ps(_mm512_castsi512_ps(e), _mm512_set1_ps(1.f)));
}

// The activations applied in registers: none, Relu (lo = 0), Clip (lo, hi), SiLU; the others
// are applied by the caller after storing (activation_in_registers).
__attribute__((target("avx512f"), always_inline)) inline __m512 activation_ps(__m512 v, ops::Activation::Kind kind,
                                                                             __m512 lo, __m512 hi) {
  switch (kind) {
    case ops::Activation::Relu: return _mm512_max_ps(v, lo);
    case ops::Activation::Clip: return _mm512_min_ps(_mm512_max_ps(v, lo), hi);
    case ops::Activation::SiLU: return silu_ps(v);
    default: return v;
  }
}
#pragma GCC diagnostic pop

inline bool activation_in_registers(const ops::Activation& a) {
  return a.kind == ops::Activation::None || a.kind == ops::Activation::Relu || a.kind == ops::Activation::Clip ||
         a.kind == ops::Activation::SiLU;
}

// The `lo` and `hi` operands of activation_ps for `a`.
__attribute__((target("avx512f"), always_inline)) inline __m512 activation_lo(const ops::Activation& a) {
  return _mm512_set1_ps(a.kind == ops::Activation::Relu ? 0.f : a.a);
}
__attribute__((target("avx512f"), always_inline)) inline __m512 activation_hi(const ops::Activation& a) {
  return _mm512_set1_ps(a.b);
}

}  // namespace kiln::backends::cpu
