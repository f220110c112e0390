// A 1x1 conv or a product by constant weights as a call of kernels/pointwise_rows.h, the kernel
// kiln's CPU backend runs them on (kiln_pointwise, kiln_matmul_rows): the parameters the plan
// chose for the instruction where it chose that kernel, the kernel's defaults elsewhere, and
// the weights packed at compile time. Only for targets with AVX-512 (EmitContext::avx512).
#pragma once
#include <string>

#include "codegen/cpp/emit_context.h"

namespace kiln::codegen::cpp {

struct PointwiseCall {
  std::string layout;  // "kiln_kernels::PointwiseLayout(K, N, pair, depth, ldy)"
  std::string weights, bias;  // pointer expressions into weights.bin
  bool split_outputs = false;
};

// For K inputs and N outputs of node `n` (the instruction's own node, or a chain member): w is
// [N][K] (k_major: [K][N]) times alpha, bias N floats or nullptr; outputs N floats apart.
PointwiseCall pointwise_call(EmitContext& ctx, const ir::Node& n, int64_t K, int64_t N, const float* w, bool k_major,
                             float alpha, const float* bias, const std::string& key);

}  // namespace kiln::codegen::cpp
