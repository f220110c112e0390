// The indexed forward graph (TVM's IndexedForwardGraph): the operator nodes of one ir::Graph in
// post-DFS order, each with its fusion pattern and the list of nodes that consume its outputs.
// The fusion analysis (post-dominator tree, partitioner) works on this view only.
//
//   index:   0        1        2        3
//   node:   Conv ──▶ Relu ──▶ Add ──▶ Relu*       * extern_ref: a graph output
//            └───────────────▲
//   edges carry the consumer's pattern as seen from that input: Conv→Add is ElemWise even
//   though Add broadcasts, because Conv's output already has Add's output shape.
//
// Graph inputs and constants are not nodes: they are inputs of whatever group reads them.
#pragma once
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "ops/core/op_def.h"

namespace kiln::fusion {

// The fusion pattern of one node: its OpDef's pattern kind, Opaque for unknown ops, ops with
// subgraphs or non-tensor values, and ElemWise for a Broadcast op whose inputs all have the
// output's shape (equal static dims or equal symbols).
ops::PatternKind node_pattern(const ir::Node& n);

// True when `in` and `out` have the same known shape (same rank, every dim the same extent).
bool same_shape(const ir::TensorType& in, const ir::TensorType& out);

class IndexedForwardGraph {
 public:
  struct Edge {
    int node = -1;  // index of the consumer
    ops::PatternKind pattern = ops::PatternKind::Opaque;
  };
  struct Node {
    ir::Node* ref = nullptr;
    int index = -1;           // position in post-DFS order
    bool extern_ref = false;  // an output is a graph output or read outside this graph
    ops::PatternKind pattern = ops::PatternKind::Opaque;
    std::vector<Edge> outputs;  // one edge per consuming node
    // Producers this node waits for: of its inputs and of outer values its subgraphs read.
    std::vector<int> inputs;
  };
  using PatternFn = std::function<ops::PatternKind(const ir::Node&)>;

  // `pattern` decides each node's kind (the partitioner passes a clamped one per fusion level).
  explicit IndexedForwardGraph(const ir::Graph& g, const PatternFn& pattern = node_pattern);

  const std::vector<Node>& nodes() const { return nodes_; }  // post-DFS order
  const Node& node(int i) const { return nodes_[static_cast<size_t>(i)]; }
  int size() const { return static_cast<int>(nodes_.size()); }
  // -1 when n is not a node of this graph.
  int index_of(const ir::Node* n) const;
  // One line per node: "3 Add(add1) ElemWise -> 4:ElemWise [extern]".
  std::string str() const;

 private:
  std::vector<Node> nodes_;
  std::unordered_map<const ir::Node*, int> index_;
};

}  // namespace kiln::fusion
