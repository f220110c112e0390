// The post-dominator tree of an indexed forward graph (TVM's DominatorTree::PostDom).
//
// A node's post-dominator is the nearest node that every path from it to the graph outputs
// passes through. Visiting nodes in reverse topological order, a node's parent is the least
// common ancestor (in the tree built so far) of all its consumers; on the way up we combine
// (max) the patterns of the edges and tree nodes passed, so `pattern` tells the most complex
// op between a node and its post-dominator.
//
//        conv              tree:  add ◀── relu_a ◀── conv
//       ╱    ╲                     ▲ ╲
//   relu_a   relu_b                │  ╲── relu_b
//       ╲    ╱                    out
//        add          conv's parent = LCA(relu_a, relu_b) = add, pattern ElemWise
//
// A node with an external reference (graph output) has no parent: nothing may fuse past it.
#pragma once
#include <string>
#include <vector>

#include "fusion/indexed_forward_graph.h"

namespace kiln::fusion {

class DominatorTree {
 public:
  struct Node {
    int gnode = -1;   // index in the forward graph
    int parent = -1;  // index of the immediate post-dominator, -1 for none
    int depth = 0;    // 1 for roots
    ops::PatternKind pattern = ops::PatternKind::Opaque;  // combined pattern up to the parent
  };

  static DominatorTree post_dom(const IndexedForwardGraph& graph);

  const std::vector<Node>& nodes() const { return nodes_; }  // indexed like the forward graph
  const Node& node(int i) const { return nodes_[static_cast<size_t>(i)]; }
  // One line per node: "2 -> 5 ElemWise".
  std::string str() const;

 private:
  int lca(int lhs, int rhs, ops::PatternKind& pattern) const;
  std::vector<Node> nodes_;
};

}  // namespace kiln::fusion
