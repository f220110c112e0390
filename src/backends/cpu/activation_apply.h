// Vector forms of kiln's activation epilogues (ops::Activation) applied in place, for kernels
// that run the epilogue themselves: the GEMV's blocks, and the convs whose activation oneDNN
// 2.6 computes slowly as a post-op (see onednn_conv.cpp).
#pragma once
#include <cstdint>
#include <optional>

#include "ir/graph.h"

#include "ops/core/activation.h"

namespace kiln::backends::cpu {

// The activation epilogue a kernel applies for `node`: a kiln fused op's `activation`, none for
// an ai.onnx op, nullopt when the attribute names one kiln does not know (the kernel declines).
std::optional<ops::Activation> epilogue_of(const ir::Node& node);

// y[i] = Gelu(x[i]) for i in [0, n), the erf form and the tanh approximation (y may be x).
void gelu_erf(const float* x, float* y, int64_t n);
void gelu_tanh(const float* x, float* y, int64_t n);

// y[i] = act(y[i]) for i in [0, n).
void apply_activation(const ops::Activation& act, float* y, int64_t n);

// The same over n elements split across at most `threads` threads, in chunks that stay in the
// L2 cache.
void apply_activation_parallel(const ops::Activation& act, float* y, int64_t n, int threads);

}  // namespace kiln::backends::cpu
