// Whole-graph shape and type inference over the op registry, with symbolic dims.
//
// Nodes are visited in topological order; each OpDef's infer function maps input types (and
// input values known at compile time) to output types. When every input of a deterministic
// node is known and small, the node is also evaluated with its reference kernel, so shape
// computations (Shape -> Gather -> Concat -> Reshape) resolve to constants.
#pragma once
#include <kiln/tensor.h>

#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "ops/core/op_def.h"

namespace kiln::ops {

class ShapeInference : public SymbolSource {
 public:
  // Nodes whose inputs hold at most this many elements in all are evaluated when known.
  explicit ShapeInference(int64_t max_fold_elements = 4096) : max_fold_elements_(max_fold_elements) {}

  // Infers every node of g (and its subgraphs' outer types where ops do so). Throws kiln::Error
  // naming the node on the first inconsistency, UnsupportedError for unknown ops.
  void run(ir::Graph& g);
  void infer_node(ir::Node& n);

  // The compile-time value of v (constant or inferred), or nullptr.
  const kiln::Tensor* known(const ir::Value* v) const;
  ir::Dim fresh() override;

 private:
  int64_t max_fold_elements_;
  std::unordered_map<const ir::Value*, kiln::Tensor> known_;
  int64_t next_symbol_ = 0;
};

// Infers a subgraph (If/Loop/Scan/SequenceMap body) whose inputs have the given types (a type
// with undefined dtype and unknown rank keeps the body's declared type) and returns the types
// of its outputs. Fresh symbols come from the enclosing node's context, so they never collide
// with the enclosing graph's. With keep = false every type in the body is restored afterwards
// (a trial pass, e.g. for loop-carried values whose shape may change per iteration).
std::vector<ir::TensorType> infer_subgraph(InferContext& ctx, ir::Graph& body,
                                           const std::vector<ir::TensorType>& inputs, bool keep = true);

// Runs one node on the reference kernels; checks the kernel produced every requested output.
// Errors come back as kiln::Error naming the node.
std::vector<kiln::Tensor> run_reference(const ir::Node& node, const std::vector<const kiln::Tensor*>& inputs,
                                        const SubgraphRunner* subgraphs = nullptr,
                                        const std::vector<KernelContext::OutputSlot>* slots = nullptr);

}  // namespace kiln::ops
