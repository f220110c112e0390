// \file partitioner.cpp
// \brief Splits a graph into fusion groups, after TVM's FuseOps (src/relay/transforms/fuse_ops.cc).
//
// Note on the fusing algorithm
// ============================
// Every op has a pattern kind, from simple to complex:
//
//   ElemWise < Broadcast < Injective < CommReduce < OutEWiseFusable < Tuple < Opaque
//
// and a group is run as one kernel, so fusing saves writing and re-reading the intermediates.
// The question is which neighbours may share a kernel. The key idea is the post-dominator:
//
//            conv2d                      the post-dominator of conv2d is `add`: every path
//           ╱      ╲                     from conv2d to the outputs goes through it. If every
//       bias_add   relu                  op on those paths is elementwise or broadcast, the
//          │        │                    whole diamond can be computed as conv2d's epilogue,
//        exp       sqrt                  tile by tile, while the conv output is still in cache.
//           ╲      ╱
//             add  ◀── post-dominator    Fusing a node into its post-dominator (and everything
//              │                         between) never makes the group graph cyclic: no path
//            (out)                       leaves the group and re-enters it.
//
// Steps:
//  1. IndexedForwardGraph: nodes in post-DFS (topological) order, each edge tagged with the
//     consumer's pattern (a broadcast whose input already has the output shape is ElemWise).
//  2. DominatorTree::post_dom: parent = LCA of the consumers, in one reverse-topological pass,
//     with the combined (max) pattern along the way. Graph outputs have no parent.
//  3. Union-find over groups, one per node at first; visit nodes in topological order and try
//     to merge each node's group, with every node on the paths to its post-dominator, into the
//     post-dominator's group. Three phases:
//
//     phase 0  OutEWiseFusable (conv, matmul, gemm): when the path pattern is ElemWise and every
//              group on the way is at most Broadcast; the group keeps the conv as its anchor.
//              ElemWise/Broadcast nodes: into an injective, reduction or anchor-led sink when
//              the path is at most Injective (the sink's kind is what its group has become).
//     phase 1  the same for ElemWise/Broadcast, and now Injective and Tuple (concat) nodes fuse
//              into their post-dominator along injective paths. Deferred so that convs claim
//              their epilogues first.
//     phase 2  injective ops fuse into a tuple (concat) that has itself been fused into an
//              injective consumer.
//
//  Never: Opaque nodes fuse with anything; anything fuses past a node whose value is a graph
//  output (it has no post-dominator); a reduction passes its result on (it is always a sink);
//  two anchors share a group; a group grows beyond max_group_size.
//
// The fusion level clamps patterns before this runs: level 1 treats every non-ElemWise op as
// Opaque, level 2 treats anchors as Opaque, level 0 skips fusion.
#include "fusion/partitioner.h"

#include <kiln/error.h>

#include <algorithm>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "fusion/dominator_tree.h"
#include "fusion/indexed_forward_graph.h"

namespace kiln::fusion {

using ops::PatternKind;

namespace {

int rank(PatternKind k) { return static_cast<int>(k); }
bool le(PatternKind a, PatternKind b) { return rank(a) <= rank(b); }
PatternKind combine(PatternKind a, PatternKind b) { return rank(a) > rank(b) ? a : b; }

PatternKind clamp_to_level(PatternKind k, int level) {
  if (level <= 1) return k == PatternKind::ElemWise ? k : PatternKind::Opaque;
  if (level == 2) return k == PatternKind::OutEWiseFusable ? PatternKind::Opaque : k;
  return k;
}

class Partitioner {
 public:
  Partitioner(const IndexedForwardGraph& graph, int max_group_size) : graph_(graph), max_size_(max_group_size) {
    groups_.resize(static_cast<size_t>(graph.size()));
    for (int i = 0; i < graph.size(); ++i) {
      Grp& g = groups_[static_cast<size_t>(i)];
      g.pattern = graph.node(i).pattern;
      g.has_anchor = g.pattern == PatternKind::OutEWiseFusable;
    }
  }

  void run() {
    DominatorTree tree = DominatorTree::post_dom(graph_);
    for (int phase = 0; phase < 3; ++phase) run_phase(tree, phase);
  }

  int root(int i) {
    while (groups_[static_cast<size_t>(i)].parent >= 0) {
      int p = groups_[static_cast<size_t>(i)].parent;
      int gp = groups_[static_cast<size_t>(p)].parent;
      if (gp >= 0) groups_[static_cast<size_t>(i)].parent = gp;  // path halving
      i = p;
    }
    return i;
  }

 private:
  struct Grp {
    int parent = -1;  // union-find; -1 for a root
    PatternKind pattern = PatternKind::Opaque;
    bool has_anchor = false;
    int num_nodes = 1;
  };
  using Cond = bool (*)(PatternKind kind, bool is_sink);

  Grp& grp(int i) { return groups_[static_cast<size_t>(i)]; }
  Grp& root_grp(int i) { return grp(root(i)); }

  bool check_path_(int src, int sink, Cond cond) {
    if (!visited_.insert(src).second) return true;
    if (!cond(root_grp(src).pattern, src == sink)) return false;
    if (src == sink) return true;
    for (const auto& e : graph_.node(src).outputs)
      if (!check_path_(e.node, sink, cond)) return false;
    return true;
  }

  // True when every node on every path from src (exclusive) to sink satisfies cond, and the
  // merged group would stay within the size limit and hold at most one anchor.
  bool check_path(int src, int sink, Cond cond) {
    visited_.clear();
    for (const auto& e : graph_.node(src).outputs)
      if (!check_path_(e.node, sink, cond)) return false;
    // visited_ now holds every node between src and sink (and sink): count the merged group.
    std::set<int> roots{root(src), root(sink)};
    for (int n : visited_) roots.insert(root(n));
    int size = 0, anchors = 0;
    for (int r : roots) {
      size += grp(r).num_nodes;
      anchors += grp(r).has_anchor ? 1 : 0;
    }
    return size <= max_size_ && anchors <= 1;
  }

  void merge(int child, int parent) {
    child = root(child);
    parent = root(parent);
    if (child == parent) return;
    grp(parent).num_nodes += grp(child).num_nodes;
    grp(child).parent = parent;
    if (grp(child).has_anchor) {
      grp(parent).has_anchor = true;
      grp(parent).pattern = combine(grp(child).pattern, grp(parent).pattern);
    }
  }

  void commit_fuse_(int src, int sink, int target) {
    if (src == sink || !visited_.insert(src).second) return;
    merge(src, target);
    for (const auto& e : graph_.node(src).outputs) commit_fuse_(e.node, sink, target);
  }

  void commit_fuse(int src, int sink) {
    visited_.clear();
    commit_fuse_(src, sink, sink);
  }

  void run_phase(const DominatorTree& tree, int phase) {
    for (int nid = 0; nid < graph_.size(); ++nid) {
      const DominatorTree::Node& dom = tree.node(nid);
      // The node's own group kind: for a node that heads a group (it was a merge target),
      // what the group has become (a conv's epilogue carries the anchor's kind onwards).
      const PatternKind kind = grp(nid).pattern;
      if (kind == PatternKind::Opaque || dom.parent < 0) continue;
      const int sink = dom.parent;

      if (phase == 2) {
        // Injective ops into a tuple that has been fused into an injective consumer.
        if (rank(kind) > rank(PatternKind::Injective)) continue;
        const PatternKind sink_kind = grp(sink).pattern;
        const PatternKind sink_root_kind = root_grp(sink).pattern;
        if (sink_root_kind == PatternKind::Tuple) continue;
        if (sink_kind == PatternKind::Tuple && le(sink_root_kind, PatternKind::Injective)) {
          if (check_path(nid, sink, [](PatternKind k, bool) { return le(k, PatternKind::Injective); }))
            commit_fuse(nid, sink);
        }
        continue;
      }

      if (root(nid) == root(sink)) continue;
      if (grp(sink).pattern == PatternKind::Tuple) continue;  // tuples wait for phase 2

      if (kind == PatternKind::OutEWiseFusable) {
        if (phase != 0 || dom.pattern != PatternKind::ElemWise) continue;
        if (check_path(nid, sink, [](PatternKind k, bool) { return le(k, PatternKind::Broadcast); }))
          commit_fuse(nid, sink);
      } else if (le(kind, PatternKind::Broadcast)) {
        if (!(le(dom.pattern, PatternKind::Injective) || dom.pattern == PatternKind::CommReduce)) continue;
        auto cond = [](PatternKind k, bool is_sink) {
          // Side branches may be injective; the sink may be anything a chain can end in.
          if (!is_sink) return le(k, PatternKind::Injective);
          return le(k, PatternKind::Injective) || k == PatternKind::CommReduce || k == PatternKind::OutEWiseFusable;
        };
        if (check_path(nid, sink, cond)) commit_fuse(nid, sink);
      } else if (kind == PatternKind::Injective || kind == PatternKind::Tuple) {
        if (phase != 1) continue;
        if (check_path(nid, sink, [](PatternKind k, bool) { return le(k, PatternKind::Injective); }))
          commit_fuse(nid, sink);
      }
      // CommReduce: always a sink, never fuses onwards.
    }
  }

  const IndexedForwardGraph& graph_;
  int max_size_;
  std::vector<Grp> groups_;
  std::unordered_set<int> visited_;
};

// Group kind for listings and lowering (see Group::pattern).
PatternKind summarize(const std::vector<ir::Node*>& nodes, const std::vector<PatternKind>& kinds, bool has_anchor) {
  if (has_anchor) return PatternKind::OutEWiseFusable;
  if (nodes.size() == 1) return kinds[0];
  PatternKind k = PatternKind::ElemWise;
  for (PatternKind x : kinds) k = combine(k, x == PatternKind::Tuple ? PatternKind::Injective : x);
  return k;
}

int64_t saved_bytes(const ir::Graph& g, const std::vector<ir::Node*>& nodes) {
  std::unordered_set<const ir::Node*> in(nodes.begin(), nodes.end());
  std::unordered_set<const ir::Value*> outs(g.outputs().begin(), g.outputs().end());
  int64_t bytes = 0;
  for (const ir::Node* n : nodes)
    for (const ir::Value* v : n->outputs()) {
      if (!v || v->uses().empty() || outs.count(v) || !v->type.is_tensor()) continue;
      bool internal = std::all_of(v->uses().begin(), v->uses().end(), [&](const ir::Use& u) { return in.count(u.node) != 0; });
      auto numel = v->type.static_numel();
      if (internal && numel) bytes += *numel * static_cast<int64_t>(dtype_size(v->type.dtype));
    }
  return bytes;
}

}  // namespace

std::vector<Group> partition(const ir::Graph& g, const FusionOptions& opts) {
  if (opts.level < 0 || opts.level > 3) throw Error("fusion level must be 0..3, got " + std::to_string(opts.level));
  if (opts.max_group_size < 1) throw Error("max group size must be at least 1, got " + std::to_string(opts.max_group_size));
  const int level = opts.level;
  IndexedForwardGraph fg(g, [level](const ir::Node& n) { return clamp_to_level(node_pattern(n), level); });
  Partitioner p(fg, opts.max_group_size);
  if (level > 0) p.run();

  // Collect members per root, in graph (topological) order.
  const std::vector<ir::Node*> order = g.nodes();
  std::unordered_map<const ir::Node*, int> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int>(i);
  std::unordered_map<int, int> group_of_root;
  std::vector<Group> groups;
  std::vector<int> group_of_node(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    int r = p.root(fg.index_of(order[i]));
    auto [it, fresh] = group_of_root.try_emplace(r, static_cast<int>(groups.size()));
    if (fresh) groups.emplace_back();
    groups[static_cast<size_t>(it->second)].nodes.push_back(order[i]);
    group_of_node[i] = it->second;
  }
  for (Group& grp : groups) {
    std::vector<PatternKind> kinds;
    for (ir::Node* n : grp.nodes) {
      kinds.push_back(node_pattern(*n));
      if (kinds.back() == PatternKind::OutEWiseFusable && (grp.nodes.size() > 1 || level == 3)) grp.anchor = n;
    }
    grp.pattern = summarize(grp.nodes, kinds, grp.anchor != nullptr);
    grp.bytes_saved = saved_bytes(g, grp.nodes);
  }

  // Order groups by their dependencies (Kahn, ties by first node), so a consumer never runs
  // before its producer even when members interleave in the node order.
  const size_t ng = groups.size();
  std::vector<std::set<int>> succ(ng);
  std::vector<int> indeg(ng, 0);
  for (const IndexedForwardGraph::Node& n : fg.nodes()) {
    int b = group_of_node[static_cast<size_t>(position.at(n.ref))];
    for (int d : n.inputs) {
      int a = group_of_node[static_cast<size_t>(position.at(fg.node(d).ref))];
      if (a != b && succ[static_cast<size_t>(a)].insert(b).second) ++indeg[static_cast<size_t>(b)];
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;  // group ids follow first-node order
  for (size_t i = 0; i < ng; ++i)
    if (indeg[i] == 0) ready.push(static_cast<int>(i));
  std::vector<Group> sorted;
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    sorted.push_back(std::move(groups[static_cast<size_t>(i)]));
    for (int s : succ[static_cast<size_t>(i)])
      if (--indeg[static_cast<size_t>(s)] == 0) ready.push(s);
  }
  if (sorted.size() != ng) throw Error("fusion: groups depend on each other cyclically (graph '" + g.name + "')");
  return sorted;
}

std::string group_ops(const Group& group) {
  std::string s;
  for (const ir::Node* n : group.nodes) s += (s.empty() ? "" : "+") + n->op_type();
  return s;
}

}  // namespace kiln::fusion
