#include "backends/cpu/activation_apply.h"

#include "backends/cpu/parallel.h"
#include "backends/cpu/avx512_activation.h"
#include "backends/cpu/simd.h"

namespace kiln::backends::cpu {

namespace {

__attribute__((target("avx512f"))) int64_t silu_avx512(float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, silu_ps(_mm512_loadu_ps(y + i)));
  return i;
}

}  // namespace

KILN_SIMD void gelu_erf(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.f + simd::erf(x[i] * 0.70710678118654752f));
}

KILN_SIMD void gelu_tanh(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.f + simd::tanh(0.7978845608028654f * (v + 0.044715f * v * v * v)));
  }
}

KILN_SIMD void apply_activation(const ops::Activation& act, float* y, int64_t n) {
  if (act.kind == ops::Activation::SiLU && has_avx512()) {
    const int64_t done = silu_avx512(y, n);
    y += done;
    n -= done;
  }
  switch (act.kind) {
    case ops::Activation::None: break;
    case ops::Activation::Relu: for (int64_t i = 0; i < n; ++i) y[i] = std::max(y[i], 0.f); break;
    case ops::Activation::Sigmoid: for (int64_t i = 0; i < n; ++i) y[i] = simd::sigmoid(y[i]); break;
    case ops::Activation::SiLU: for (int64_t i = 0; i < n; ++i) y[i] = simd::silu(y[i]); break;
    case ops::Activation::Tanh: for (int64_t i = 0; i < n; ++i) y[i] = simd::tanh(y[i]); break;
    case ops::Activation::Clip: for (int64_t i = 0; i < n; ++i) y[i] = std::min(std::max(y[i], act.a), act.b); break;
    case ops::Activation::Gelu: gelu_erf(y, y, n); break;
    case ops::Activation::GeluTanh: gelu_tanh(y, y, n); break;
    default: for (int64_t i = 0; i < n; ++i) y[i] = ops::apply(act, y[i]); break;
  }
}

std::optional<ops::Activation> epilogue_of(const ir::Node& node) {
  if (node.domain() != "kiln") return ops::Activation{ops::Activation::None};
  try {
    return ops::activation_of(node);
  } catch (const Error&) {
    return std::nullopt;
  }
}

void apply_activation_parallel(const ops::Activation& act, float* y, int64_t n, int threads) {
  if (act.kind == ops::Activation::None) return;
  // 16K floats = 64 KiB per piece: enough work to amortize the split, small enough that
  // neighbouring pieces go to different threads in cache-friendly runs.
  constexpr int64_t kPiece = 16384;
  const int64_t pieces = (n + kPiece - 1) / kPiece;
  parallel_for(pieces, threads, [&](int64_t b, int64_t e) {
    const int64_t lo = b * kPiece, hi = std::min(n, e * kPiece);
    apply_activation(act, y + lo, hi - lo);
  });
}

}  // namespace kiln::backends::cpu
