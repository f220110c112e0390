#include "fusion/indexed_forward_graph.h"

#include <algorithm>
#include <sstream>

#include "ops/core/registry.h"

namespace kiln::fusion {

using ops::PatternKind;

namespace {

bool has_subgraph(const ir::Node& n) {
  for (const auto& [name, a] : n.attrs)
    if (a.kind == ir::Attribute::Kind::Graph || a.kind == ir::Attribute::Kind::Graphs) return true;
  return false;
}

// Every node nested (at any depth) in n's subgraphs, mapped to `top`: a body's reads of outer
// values are dependencies of the node that owns the body.
void map_nested(const ir::Node& n, const ir::Node* top, std::unordered_map<const ir::Node*, const ir::Node*>& out) {
  auto visit = [&](const ir::Graph* sg) {
    if (!sg) return;
    for (const ir::Node* m : sg->nodes()) {
      out[m] = top;
      map_nested(*m, top, out);
    }
  };
  for (const auto& [name, a] : n.attrs) {
    if (a.kind == ir::Attribute::Kind::Graph) visit(a.g.get());
    if (a.kind == ir::Attribute::Kind::Graphs)
      for (const auto& sg : a.graphs) visit(sg.get());
  }
}

PatternKind max_pattern(PatternKind a, PatternKind b) { return static_cast<int>(a) > static_cast<int>(b) ? a : b; }

}  // namespace

bool same_shape(const ir::TensorType& in, const ir::TensorType& out) {
  if (!in.rank_known || !out.rank_known || !in.is_tensor() || !out.is_tensor() || in.rank() != out.rank()) return false;
  for (int i = 0; i < in.rank(); ++i)
    if (!in.dims[static_cast<size_t>(i)].same_as(out.dims[static_cast<size_t>(i)])) return false;
  return true;
}

// Whether a Transpose only moves axes of extent 1 (a reshape: the same element order).
static bool moves_only_unit_axes(const ir::Node& n) {
  const ir::TensorType& t = n.input(0)->type;
  std::vector<int64_t> perm = n.attr_ints("perm");
  if (perm.empty())
    for (int64_t i = t.rank(); i-- > 0;) perm.push_back(i);
  std::vector<int64_t> kept;  // the non-unit axes in output order
  for (int64_t a : perm) {
    if (a < 0) a += t.rank();
    if (a < 0 || a >= t.rank()) return false;
    const ir::Dim& d = t.dims[static_cast<size_t>(a)];
    if (!d.is_static() || d.value != 1) kept.push_back(a);
  }
  return std::is_sorted(kept.begin(), kept.end());
}

PatternKind node_pattern(const ir::Node& n) {
  if (has_subgraph(n)) return PatternKind::Opaque;
  for (const ir::Value* v : n.inputs())
    if (v && !v->type.is_tensor()) return PatternKind::Opaque;
  for (const ir::Value* v : n.outputs())
    if (v && !v->type.is_tensor()) return PatternKind::Opaque;
  PatternKind k;
  try {
    k = ops::Registry::instance().lookup(n).pattern;
  } catch (const kiln::Error&) {
    return PatternKind::Opaque;  // an op kiln cannot run is certainly not fusable
  }
  // A Transpose that moves the innermost axis, in an elementwise group, gathers each output row
  // from across the whole tensor (one cache line per element, each line met again only rows
  // later, long evicted from a large tensor); the Transpose kernel moves it in cache-sized 2-D
  // tiles. It stays a kernel of its own.
  if (k == PatternKind::Injective && n.domain().empty() && n.op_type() == "Transpose" && n.input(0) &&
      n.input(0)->type.rank_known && n.input(0)->type.rank() > 1) {
    const int64_t rank = n.input(0)->type.rank();
    const std::vector<int64_t> perm = n.attr_ints("perm");
    const int64_t last = perm.empty() ? 0 : perm.back();  // no perm: reversed axes
    const int64_t inner = last < 0 ? last + rank : last;
    if (inner != rank - 1 && !moves_only_unit_axes(n)) return PatternKind::Opaque;
  }
  if (k == PatternKind::Broadcast && n.num_outputs() == 1 && n.output(0)) {
    bool all_same = true;
    for (const ir::Value* v : n.inputs())
      if (v && !same_shape(v->type, n.output(0)->type)) all_same = false;
    if (all_same) k = PatternKind::ElemWise;
  }
  return k;
}

IndexedForwardGraph::IndexedForwardGraph(const ir::Graph& g, const PatternFn& pattern) {
  const std::vector<ir::Node*> order = g.nodes();
  std::unordered_map<const ir::Node*, const ir::Node*> enclosing;  // nested node -> node of g
  for (const ir::Node* n : order) enclosing[n] = n;
  for (const ir::Node* n : order) map_nested(*n, n, enclosing);

  // Dependencies of each node of g: producers of its inputs and of the outer values its
  // subgraphs read.
  std::unordered_map<const ir::Node*, std::vector<ir::Node*>> deps;
  for (ir::Node* n : order) {
    for (const ir::Value* v : n->inputs())
      if (v && v->producer() && v->producer()->owner() == &g) deps[n].push_back(v->producer());
  }
  for (ir::Node* p : order)
    for (const ir::Value* v : p->outputs()) {
      if (!v) continue;
      for (const ir::Use& u : v->uses()) {
        if (u.node->owner() == &g) continue;
        auto it = enclosing.find(u.node);
        if (it != enclosing.end()) deps[it->second].push_back(p);
      }
    }

  // Post-DFS from the graph outputs (TVM visits the function body), then from every other
  // node in graph order so dead nodes get an index too. Iterative: long chains are common.
  std::vector<ir::Node*> roots;
  for (const ir::Value* v : g.outputs())
    if (v && v->producer() && v->producer()->owner() == &g) roots.push_back(v->producer());
  roots.insert(roots.end(), order.begin(), order.end());
  std::unordered_map<const ir::Node*, int> state;  // 1 on stack, 2 done
  for (ir::Node* root : roots) {
    if (state[root]) continue;
    std::vector<std::pair<ir::Node*, size_t>> stack{{root, 0}};
    state[root] = 1;
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      const std::vector<ir::Node*>& d = deps[n];
      if (next < d.size()) {
        ir::Node* p = d[next++];
        if (!state[p]) {
          state[p] = 1;
          stack.push_back({p, 0});
        }
        continue;
      }
      state[n] = 2;
      Node node;
      node.ref = n;
      node.index = static_cast<int>(nodes_.size());
      node.pattern = pattern(*n);
      index_[n] = node.index;
      nodes_.push_back(std::move(node));
      stack.pop_back();
    }
  }

  for (const ir::Value* v : g.outputs())
    if (v && v->producer() && v->producer()->owner() == &g) nodes_[static_cast<size_t>(index_.at(v->producer()))].extern_ref = true;

  for (Node& node : nodes_) {
    for (const ir::Node* d : deps[node.ref]) {
      int di = index_.at(d);
      if (std::find(node.inputs.begin(), node.inputs.end(), di) == node.inputs.end()) node.inputs.push_back(di);
    }
    for (const ir::Value* v : node.ref->outputs()) {
      if (!v) continue;
      for (const ir::Use& u : v->uses()) {
        if (u.node->owner() != &g) {
          node.extern_ref = true;
          continue;
        }
        const Node& consumer = nodes_[static_cast<size_t>(index_.at(u.node))];
        // TVM's edge rule: a broadcast consumer is elementwise along an input that already
        // has the output's shape.
        PatternKind ep = consumer.pattern;
        const ir::Value* out = u.node->output(0);
        if (ep == PatternKind::Broadcast && out && same_shape(v->type, out->type)) ep = PatternKind::ElemWise;
        auto e = std::find_if(node.outputs.begin(), node.outputs.end(), [&](const Edge& x) { return x.node == consumer.index; });
        if (e == node.outputs.end())
          node.outputs.push_back({consumer.index, ep});
        else
          e->pattern = max_pattern(e->pattern, ep);
      }
    }
  }
}

int IndexedForwardGraph::index_of(const ir::Node* n) const {
  auto it = index_.find(n);
  return it == index_.end() ? -1 : it->second;
}

std::string IndexedForwardGraph::str() const {
  std::ostringstream os;
  for (const Node& n : nodes_) {
    os << n.index << " " << n.ref->op_type() << "(" << n.ref->name() << ") " << ops::pattern_kind_name(n.pattern) << " ->";
    for (const Edge& e : n.outputs) os << " " << e.node << ":" << ops::pattern_kind_name(e.pattern);
    if (n.extern_ref) os << " [extern]";
    os << "\n";
  }
  return os.str();
}

}  // namespace kiln::fusion
