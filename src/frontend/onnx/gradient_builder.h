// Emits the backward ops of one Gradient node (expand_gradient.h) into its graph: plain ai.onnx
// ops in the form the graph's opset reads (axes of ReduceSum, Squeeze and Unsqueeze as an
// attribute below opset 13, as an input from it), each named after the Gradient node. The
// types of the values it reads are the ones shape inference gave before the expansion; what it
// emits is left untyped for the session's own inference.
#pragma once
#include <kiln/dtype.h>

#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::onnx_fe {

class GradientBuilder {
 public:
  // `gradient`: the Gradient node's name, which prefixes every node and value made and every
  // error ("Gradient 'my_gradient': ...").
  GradientBuilder(ir::Graph& g, std::string gradient);

  ir::Graph& graph() const { return g_; }
  int64_t opset() const { return g_.opset(); }
  // The forward node whose backward ops are being made, which errors name after the Gradient.
  void set_node(const ir::Node* n) { node_ = n; }
  [[noreturn]] void fail(const std::string& msg) const;
  [[noreturn]] void unsupported(const std::string& msg) const;

  // A node of one output.
  ir::Value* op(const std::string& type, std::vector<ir::Value*> inputs, ir::Attributes attrs = {});
  ir::Value* scalar(double v, DType dtype);
  ir::Value* ints(std::vector<int64_t> v);
  // A tensor of v's shape and dtype with every element `fill` (the seed's ones, the zeros of an
  // x that y does not depend on): a constant when v's type is static, else ConstantOfShape.
  ir::Value* filled_like(ir::Value* v, double fill);
  ir::Value* cast(ir::Value* v, DType to);
  ir::Value* reduce_sum(ir::Value* v, std::vector<int64_t> axes, bool keepdims);
  ir::Value* unsqueeze(ir::Value* v, std::vector<int64_t> axes);
  ir::Value* squeeze(ir::Value* v, std::vector<int64_t> axes);
  // Reshape(v, Shape(like)).
  ir::Value* reshape_like(ir::Value* v, ir::Value* like);
  // The gradient of an operand that NumPy broadcasting stretched: g, of type g_type (the
  // broadcast result's), summed over the axes broadcasting added to `to` or stretched from 1,
  // then given to's shape. Where the types cannot tell those axes (dims that may or may not be
  // 1), they are found at run time from the two shapes (opset 13 and later).
  ir::Value* sum_to(ir::Value* g, const ir::TensorType& g_type, ir::Value* to);

 private:
  ir::Value* sum_to_at_run_time(ir::Value* g, ir::Value* to);

  std::string prefix() const;

  ir::Graph& g_;
  std::string gradient_;
  const ir::Node* node_ = nullptr;
};

}  // namespace kiln::onnx_fe
