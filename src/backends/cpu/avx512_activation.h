// The AVX-512 activation epilogues (src/kernels/avx512_activation.h, shared with emitted code)
// for ops::Activation, whose kinds are kiln_kernels::Act's in the same order. Callers check for
// AVX-512 at run time.
#pragma once
#include <immintrin.h>

#include "kernels/avx512_activation.h"
#include "ops/core/activation.h"

namespace kiln::backends::cpu {

// The kernels' activation for an ops::Activation kind (the two enums list the same kinds in the
// same order).
constexpr kiln_kernels::Act kernel_act(ops::Activation::Kind k) { return static_cast<kiln_kernels::Act>(k); }
static_assert(kernel_act(ops::Activation::SiLU) == kiln_kernels::Act::SiLU &&
                  kernel_act(ops::Activation::LeakyRelu) == kiln_kernels::Act::LeakyRelu,
              "ops::Activation::Kind and kiln_kernels::Act list the kinds in the same order");

using kiln_kernels::silu_ps;

__attribute__((target("avx512f"), always_inline)) inline __m512 activation_ps(__m512 v, ops::Activation::Kind kind,
                                                                             __m512 lo, __m512 hi) {
  return kiln_kernels::activation_ps(v, kernel_act(kind), lo, hi);
}

inline bool activation_in_registers(const ops::Activation& a) { return kiln_kernels::in_registers(kernel_act(a.kind)); }

// The `lo` and `hi` operands of activation_ps for `a`.
__attribute__((target("avx512f"), always_inline)) inline __m512 activation_lo(const ops::Activation& a) {
  return kiln_kernels::activation_lo(kernel_act(a.kind), a.a);
}
__attribute__((target("avx512f"), always_inline)) inline __m512 activation_hi(const ops::Activation& a) {
  return kiln_kernels::activation_hi(a.b);
}

}  // namespace kiln::backends::cpu
