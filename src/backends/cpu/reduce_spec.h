// What a float ReduceSum/Mean/Max/Min node computes, as [outer, n, inner] with n reduced: unit
// axes dropped and neighbouring axes of the same role merged. Axes follow src/ops/reduce.cpp:
// an attribute before opset 13 (ReduceSum) or 18 (the others), a constant input from then on.
// Shared by the standalone reduction kernel and the fused one (a reduction with its prologue).
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace kiln::backends::cpu {

enum class ReduceKind { Sum, Mean, Max, Min };

struct ReduceSpec {
  ReduceKind kind;
  int64_t outer = 1, n = 0, inner = 1;  // n == 0: nothing reduced (noop_with_empty_axes)
  std::vector<bool> reduced;            // per input axis
};

// nullopt when the node is not one of these four, its shapes are not static, its axes are not
// constant, or it reduces two separate groups of axes ([R, K, R]).
std::optional<ReduceSpec> reduce_spec(const ir::Node& node);

}  // namespace kiln::backends::cpu
