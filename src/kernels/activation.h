// The activation epilogues every kernel may apply: which one, as a template argument or a
// run-time value, and the scalar form (the transcendental ones through vector_math.h, so that a
// loop applying one vectorizes).
#pragma once
#include <algorithm>
#include <cstdint>

#include "vector_math.h"

namespace kiln_kernels {

// An elementwise epilogue, fixed at compile time (the transcendental ones through vector_math.h,
// so that a loop applying one vectorizes) (a template argument of the kernels that take
// one), with its parameters a, b at run time: Clip's [min, max], LeakyRelu's alpha, HardSigmoid's
// alpha and beta.
enum class Act { None, Relu, Clip, Sigmoid, Tanh, SiLU, Gelu, GeluTanh, HardSigmoid, HardSwish, LeakyRelu };

template <Act A>
inline float activate(float x, float a, float b) {
  if constexpr (A == Act::None) return x;
  if constexpr (A == Act::Relu) return x > 0.f ? x : 0.f;
  if constexpr (A == Act::Clip) return std::min(std::max(x, a), b);
  if constexpr (A == Act::Sigmoid) return math::sigmoid(x);
  if constexpr (A == Act::Tanh) return math::tanh(x);
  if constexpr (A == Act::SiLU) return math::silu(x);
  if constexpr (A == Act::Gelu) return 0.5f * x * (1.f + math::erf(x * 0.70710678118654752f));
  if constexpr (A == Act::GeluTanh) return 0.5f * x * (1.f + math::tanh(0.7978845608028654f * (x + 0.044715f * x * x * x)));
  if constexpr (A == Act::HardSigmoid) return std::max(0.f, std::min(1.f, a * x + b));
  if constexpr (A == Act::HardSwish) return x * std::max(0.f, std::min(1.f, x / 6.f + 0.5f));
  if constexpr (A == Act::LeakyRelu) return x >= 0.f ? x : a * x;
  return x;
}

// The activation `kind`, chosen at run time, on one value.
inline float activate(Act kind, float x, float a, float b) {
  switch (kind) {
    case Act::None: return x;
    case Act::Relu: return activate<Act::Relu>(x, a, b);
    case Act::Clip: return activate<Act::Clip>(x, a, b);
    case Act::Sigmoid: return activate<Act::Sigmoid>(x, a, b);
    case Act::Tanh: return activate<Act::Tanh>(x, a, b);
    case Act::SiLU: return activate<Act::SiLU>(x, a, b);
    case Act::Gelu: return activate<Act::Gelu>(x, a, b);
    case Act::GeluTanh: return activate<Act::GeluTanh>(x, a, b);
    case Act::HardSigmoid: return activate<Act::HardSigmoid>(x, a, b);
    case Act::HardSwish: return activate<Act::HardSwish>(x, a, b);
    case Act::LeakyRelu: return activate<Act::LeakyRelu>(x, a, b);
  }
  return x;
}

// The activation over n values in place.
template <Act A>
inline void activate_all(float* __restrict__ y, int64_t n, float a, float b) {
  if constexpr (A != Act::None)
    for (int64_t i = 0; i < n; ++i) y[i] = activate<A>(y[i], a, b);
}

}  // namespace kiln_kernels
