#include "fusion/dominator_tree.h"

#include <sstream>

namespace kiln::fusion {

using ops::PatternKind;

namespace {
PatternKind combine(PatternKind a, PatternKind b) { return static_cast<int>(a) > static_cast<int>(b) ? a : b; }
}  // namespace

// Walks the deeper side up until both meet; -1 when they are in different trees (no common
// post-dominator).
int DominatorTree::lca(int lhs, int rhs, PatternKind& pattern) const {
  while (lhs != rhs) {
    if (lhs < 0 || rhs < 0) return -1;
    const Node& l = nodes_[static_cast<size_t>(lhs)];
    const Node& r = nodes_[static_cast<size_t>(rhs)];
    if (l.depth < r.depth) {
      pattern = combine(pattern, r.pattern);
      rhs = r.parent;
    } else if (r.depth < l.depth) {
      pattern = combine(pattern, l.pattern);
      lhs = l.parent;
    } else {
      pattern = combine(combine(pattern, l.pattern), r.pattern);
      lhs = l.parent;
      rhs = r.parent;
    }
  }
  return lhs;
}

DominatorTree DominatorTree::post_dom(const IndexedForwardGraph& graph) {
  DominatorTree t;
  t.nodes_.resize(static_cast<size_t>(graph.size()));
  // Consumers come later in post-DFS order, so they are done when we reach their producer.
  for (int i = graph.size() - 1; i >= 0; --i) {
    const IndexedForwardGraph::Node& g = graph.node(i);
    Node& n = t.nodes_[static_cast<size_t>(i)];
    n.gnode = i;
    if (g.extern_ref || g.outputs.empty()) {
      n.depth = 1;
      n.parent = -1;
      n.pattern = PatternKind::Opaque;
      continue;
    }
    PatternKind pattern = PatternKind::ElemWise;
    int parent = g.outputs[0].node;
    pattern = combine(pattern, g.outputs[0].pattern);
    for (size_t k = 1; k < g.outputs.size(); ++k) {
      parent = t.lca(parent, g.outputs[k].node, pattern);
      pattern = combine(pattern, g.outputs[k].pattern);
    }
    n.parent = parent;
    n.depth = parent >= 0 ? t.nodes_[static_cast<size_t>(parent)].depth + 1 : 1;
    n.pattern = pattern;
  }
  return t;
}

std::string DominatorTree::str() const {
  std::ostringstream os;
  for (const Node& n : nodes_)
    os << n.gnode << " -> " << n.parent << " " << ops::pattern_kind_name(n.pattern) << "\n";
  return os.str();
}

}  // namespace kiln::fusion
