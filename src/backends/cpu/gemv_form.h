// A one-row Gemm (or kiln.FusedGemm with its activation) as the gemv kernels take it: y =
// act(alpha * W x + beta * C), constant W and C. gemv.cpp runs one; gemv_chain.cpp two in a row.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"
#include "ops/core/activation.h"

namespace kiln::backends::cpu {

struct GemvForm {
  const float* w = nullptr;  // W [n, k] row-major, or [k, n] with k_major (a B not transposed)
  bool k_major = false;
  float alpha = 1.f;
  std::vector<float> bias;  // beta * C per output, or empty
  int64_t n = 0, k = 0;
  ops::Activation act{ops::Activation::None};
};

// The form of `node` when it is a Gemm or kiln.FusedGemm of one float row by a constant matrix;
// nullopt otherwise.
std::optional<GemvForm> gemv_form(const ir::Node& node);

}  // namespace kiln::backends::cpu
