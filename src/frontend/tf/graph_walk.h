// The graph-import routine: converts the nodes of a NodeSet, in topological order, into an
// ir::Graph through the converter table. The same walk imports the main graph, a library
// function's body into a subgraph (While/If, control_flow.cpp) and the parts of a TensorFlow 1
// while loop (tf1_loops.cpp).
#pragma once
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "frontend/tf/converter.h"
#include "frontend/tf/node_set.h"

namespace kiln::tf_fe {

// The IR values of TensorFlow nodes for one walk: the graph the walk adds to, and the outputs
// of the nodes it has converted or been given. A scope falls back to its parent's values, so a
// loop body reads what the enclosing graph computed (ONNX's outer-scope values).
struct Scope {
  Scope* parent = nullptr;
  ir::Graph* graph = nullptr;
  std::string prefix;                          // starts the names of the values made here
  std::vector<ir::Value*> args;                // a function's arguments (NodeInput::arg)
  int branch = 0;                              // the conditional branch converted here (NodeSet::branch)
  std::map<int, std::vector<ir::Value*>> values;  // node -> its outputs (nullptr: not available here)

  const std::vector<ir::Value*>* find(int node) const {
    for (const Scope* s = this; s; s = s->parent) {
      auto it = s->values.find(node);
      if (it != s->values.end()) return &it->second;
    }
    return nullptr;
  }
};

class GraphWalk : public ImportContext {
 public:
  explicit GraphWalk(const tfpb::FunctionDefLibrary& library);

  // Converts the nodes of `region` (indices into `set`, in its order) into scope.graph and
  // records their outputs in `scope`; nodes `scope` already has a value for are skipped.
  void walk(const NodeSet& set, Scope& scope, const std::vector<int>& region);
  // The nodes that run in the root frame (every node of a graph without TensorFlow 1 loops),
  // and the Exits that leave top-level loops, in order.
  static std::vector<int> root_region(const NodeSet& set);
  // The nodes of frame `frame` that `targets` need, in order, stopping at nodes `scope` has
  // values for; a loop nested in `frame` counts as its Exits plus what it reads from outside.
  std::vector<int> needed(const NodeSet& set, int frame, const std::vector<int>& targets, const Scope& scope) const;

  std::vector<ir::Value*> call_function(const std::string& fn, ir::Graph& into, const std::vector<ir::Value*>& args,
                                        const std::string& prefix, const std::string& caller) override;
  ops::ShapeInference& inference() override { return infer_; }
  void drop(std::shared_ptr<ir::Graph> g) override;

 private:
  std::map<std::string, const tfpb::FunctionDef*> functions_;
  std::map<std::string, std::unique_ptr<NodeSet>> bodies_;  // parsed on first call
  std::vector<std::string> calling_;                        // the functions being imported (recursion)
  ops::ShapeInference infer_;
  std::set<const ir::Value*> tf_named_;  // values already carrying a TensorFlow tensor name
  std::vector<std::shared_ptr<ir::Graph>> dropped_;

  ir::Value* input_value(const NodeSet& set, const Scope& scope, int node, const NodeInput& r) const;
  void convert(const NodeSet& set, Scope& scope, int node);
  void constant(const NodeSet& set, Scope& scope, int node);
  // A TensorFlow 1 while loop: the frame's nodes rebuilt as an ONNX Loop in scope.graph, its
  // Exits bound in `scope` (tf1_loops.cpp).
  void build_frame(const NodeSet& set, int frame, Scope& scope);
  // A TensorFlow 1 conditional: the Merge and the two branches it joins as an ONNX If in
  // scope.graph (tf1_conds.cpp).
  void build_cond(const NodeSet& set, int merge, Scope& scope);
};

}  // namespace kiln::tf_fe
