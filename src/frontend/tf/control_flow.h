// ONNX Loop and If built from TensorFlow's loops and conditionals: TF2's While/If (library
// functions, control_flow.cpp) and TF1's while-loop frames (tf1_loops.cpp) share them.
//
// A TensorFlow loop tests its condition before every trip, an ONNX Loop after each (its body
// returns the next condition). So the Loop gets no trip count, its first condition is the
// cond converted into the enclosing graph on the initial values, and its body is the TF body
// followed by the cond on the body's results.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "frontend/tf/converter.h"

namespace kiln::tf_fe {

struct LoopParts {
  // The loop condition on `vars`, converted into g: the enclosing graph for the first test
  // (in_body false), the body for the others.
  std::function<ir::Value*(ir::Graph& g, const std::vector<ir::Value*>& vars, bool in_body)> cond;
  // One trip: the loop variables' next values, converted into the body graph g.
  std::function<std::vector<ir::Value*>(ir::Graph& g, const std::vector<ir::Value*>& vars)> body;
};

// Emits the Loop into g and returns its outputs, the loop variables' final values. The body is
// first built with the initial values' types; when a trip changes one (a dim that grows, a
// sequence's element shape), it is built again with those dims left symbolic, so that nothing
// converted in it relies on a shape only the first trip has. `what` starts errors.
std::vector<ir::Value*> emit_loop(ImportContext& ctx, ir::Graph& g, const std::string& name,
                                  const std::vector<ir::Value*>& init, const LoopParts& parts, const std::string& what);

// One node `type` in g, inferred at once; its output named `name` (made unique in g).
ir::Value* add_op(ImportContext& ctx, ir::Graph& g, const std::string& type, std::vector<ir::Value*> inputs,
                  const std::string& name, ir::Attributes attrs = {});

// v when g's own nodes make it; otherwise (a value of an enclosing graph, a constant, a graph
// input) an Identity of it in g, so that a subgraph's outputs are its own.
ir::Value* own_value(ImportContext& ctx, ir::Graph& g, ir::Value* v, const std::string& name);

}  // namespace kiln::tf_fe
