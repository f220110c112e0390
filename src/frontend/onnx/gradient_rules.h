// The derivative of each differentiable ai.onnx op, written as backward ops: given the
// gradient of a node's output, the gradients of its inputs (the vector-Jacobian product of
// reverse-mode automatic differentiation). expand_gradient.cpp walks a graph backwards
// through these.
#pragma once
#include <vector>

#include "frontend/onnx/gradient_builder.h"
#include "ir/graph.h"
#include "ops/core/infer_graph.h"

namespace kiln::onnx_fe {

// What a rule sees of one forward node.
struct GradientStep {
  const ir::Node& node;
  ir::Value* dy;             // the gradient of the node's output (of its type)
  std::vector<bool> wanted;  // per input: whether its gradient is needed
  std::vector<ir::Value*> dx;  // per input: the rule sets each wanted one
  GradientBuilder& b;
  const ops::ShapeInference& values;  // inputs whose value is known (a ReduceSum's axes)
};

struct GradientRule {
  std::vector<int> inputs;  // the inputs gradients flow to; the others (shapes, axes) are data
  void (*backward)(GradientStep&);
  bool differentiable(int input) const;
};

// nullptr when the op has no rule (or is not of ai.onnx).
const GradientRule* find_gradient_rule(const ir::Node& n);

}  // namespace kiln::onnx_fe
