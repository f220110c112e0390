#include "ir/clone.h"

#include <unordered_map>

namespace kiln::ir {

namespace {

class Cloner {
 public:
  // `into` is empty; its parent is already set for subgraphs.
  void copy(const Graph& src, Graph& into) {
    into.name = src.name;
    into.opsets = src.opsets;
    // Values first, in creation order, so names and constants come across unchanged.
    for (const Value* v : src.values()) {
      Value* nv;
      if (v->is_graph_input()) {
        continue;  // added below in input order
      } else if (v->is_constant()) {
        nv = into.add_value(v->name(), v->type);
        nv->set_constant_shared(v->constant_ptr());
      } else {
        nv = into.add_value(v->name(), v->type);
      }
      map_[v] = nv;
    }
    for (const Value* v : src.inputs()) map_[v] = into.add_input(v->name(), v->type);
    for (const Node* n : src.nodes()) {
      std::vector<Value*> ins, outs;
      for (const Value* v : n->inputs()) ins.push_back(v ? lookup(v) : nullptr);
      for (const Value* v : n->outputs()) outs.push_back(v ? map_.at(v) : nullptr);
      Attributes attrs = n->attrs;
      for (auto& [k, a] : attrs) {
        if (a.g) a.g = sub(*a.g, into);
        for (auto& sg : a.graphs) sg = sub(*sg, into);
      }
      into.add_node(n->op_type(), ins, outs, std::move(attrs), n->name(), n->domain());
    }
    for (const Value* v : src.outputs()) into.add_output(lookup(v));
  }

 private:
  // Values of enclosing graphs that are not cloned (when cloning a subgraph alone) map to
  // themselves.
  Value* lookup(const Value* v) {
    auto it = map_.find(v);
    return it != map_.end() ? it->second : const_cast<Value*>(v);
  }

  std::shared_ptr<Graph> sub(const Graph& src, Graph& parent) {
    auto g = std::make_shared<Graph>();
    g->parent = &parent;
    copy(src, *g);
    return g;
  }

  std::unordered_map<const Value*, Value*> map_;
};

}  // namespace

std::unique_ptr<Graph> clone(const Graph& g) {
  auto out = std::make_unique<Graph>();
  out->parent = g.parent;
  Cloner().copy(g, *out);
  return out;
}

}  // namespace kiln::ir
