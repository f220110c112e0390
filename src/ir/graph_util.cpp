#include "ir/graph_util.h"

#include <kiln/error.h>

#include <algorithm>
#include <cmath>
#include <unordered_set>

namespace kiln::ir {

const Tensor* const_of(const Value* v) { return v && v->is_constant() ? &v->constant() : nullptr; }

std::optional<double> uniform_const(const Value* v) {
  const Tensor* t = const_of(v);
  if (!t || t->is_sequence() || t->is_none() || t->numel() == 0) return std::nullopt;
  if (!dtype_is_float(t->dtype()) && !dtype_is_integer(t->dtype())) return std::nullopt;
  double first = t->as_double(0);
  for (int64_t i = 1; i < t->numel(); ++i)
    if (t->as_double(i) != first) return std::nullopt;
  return first;
}

std::optional<std::vector<int64_t>> reduction_axes(const Node& n) {
  if (n.has_attr("axes")) return n.attr_ints("axes");
  if (n.num_inputs() < 2 || !n.input(1)) return std::vector<int64_t>{};
  const Tensor* t = const_of(n.input(1));
  if (!t || !t->defined() || t->kind() != ValueKind::Tensor || !dtype_is_integer(t->dtype()) || t->rank() > 1)
    return std::nullopt;
  return t->to_int64_vector();
}

bool is_graph_output(const Graph& g, const Value* v) {
  return std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end();
}

bool single_use(const Graph& g, const Value* v) { return v->uses().size() == 1 && !is_graph_output(g, v); }

Node* producer_of(const Value* v, const std::string& op) {
  if (!v || !v->producer()) return nullptr;
  Node* p = v->producer();
  return p->op_type() == op && p->domain().empty() ? p : nullptr;
}

bool has_subgraph(const Node& n) {
  for (const auto& [k, a] : n.attrs)
    if (a.g || !a.graphs.empty()) return true;
  return false;
}

bool all_inputs_constant(const Node& n) {
  for (const Value* v : n.inputs())
    if (v && !v->is_constant()) return false;
  return true;
}

Value* add_const(Graph& g, const std::string& hint, Tensor t) {
  return g.add_constant(g.unique_name(hint), std::move(t));
}

Value* add_value_like(Graph& g, const Value* like, const std::string& hint) {
  return g.add_value(g.unique_name(hint), like ? like->type : TensorType());
}

// Values keep their identity: uses move to a placeholder while the node goes away, then come
// back to the same value, now a constant.
void fold_to_constants(Graph& g, Node* n, std::vector<Tensor> values) {
  std::vector<std::pair<Value*, Value*>> moved;
  for (int i = 0; i < n->num_outputs(); ++i) {
    Value* o = n->output(i);
    if (!o) continue;
    Value* tmp = g.add_value(g.unique_name("fold_tmp"));
    g.replace_all_uses(o, tmp);
    moved.emplace_back(o, tmp);
  }
  std::vector<Value*> outs = n->outputs();
  g.remove_node(n);
  for (size_t i = 0; i < outs.size(); ++i)
    if (outs[i]) outs[i]->set_constant(std::move(values.at(i)));
  for (auto& [o, tmp] : moved) g.replace_all_uses(tmp, o);
}

int remove_dead_nodes(Graph& g) {
  int removed = 0;
  for (bool again = true; again;) {
    again = false;
    std::unordered_set<const Value*> outs(g.outputs().begin(), g.outputs().end());
    std::vector<Node*> nodes = g.nodes();
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      Node* n = *it;
      bool live = false;
      for (const Value* o : n->outputs())
        if (o && (!o->uses().empty() || outs.count(o))) live = true;
      if (live) continue;
      g.remove_node(n);
      ++removed;
      again = true;
    }
  }
  return removed;
}

// A rewrite may have put another value in an output slot. The original value, by then
// orphaned, takes its place again: it becomes the output of the new value's producer (a copy
// of that node), a copy of the constant, or, for a graph input, the output of an Identity.
void restore_output_names(Graph& g, const std::vector<std::string>& names) {
  auto& outs = g.mutable_outputs();
  for (size_t i = 0; i < outs.size() && i < names.size(); ++i) {
    Value* v = outs[i];
    if (v->name() == names[i]) continue;
    Value* orig = g.find_value(names[i]);
    if (!orig || orig->producer() || orig->is_constant() || orig->is_graph_input() || !orig->uses().empty())
      continue;
    orig->type = v->type;
    const bool shared_slot = std::count(outs.begin(), outs.end(), v) > 1;
    Node* p = v->producer();
    if (p && p->owner() == &g && !shared_slot && !v->is_constant()) {
      std::vector<Value*> pouts = p->outputs();
      std::replace(pouts.begin(), pouts.end(), v, orig);
      // Detach p's outputs first so the copy can take them over.
      std::vector<std::pair<Value*, Value*>> moved;
      for (Value* o : p->outputs()) {
        if (!o) continue;
        Value* tmp = g.add_value(g.unique_name("rename_tmp"));
        g.replace_all_uses(o, tmp);
        moved.emplace_back(o, tmp);
      }
      std::vector<Value*> ins = p->inputs();
      Attributes attrs = p->attrs;
      std::string op = p->op_type(), name = p->name(), domain = p->domain();
      g.remove_node(p);
      g.add_node(op, ins, pouts, std::move(attrs), name, domain);
      for (auto& [o, tmp] : moved) g.replace_all_uses(tmp, o == v ? orig : o);
    } else if (v->is_constant() && !shared_slot) {
      orig->set_constant(v->constant());
      outs[i] = orig;
    } else {
      g.add_node("Identity", {v}, {orig}, {}, g.unique_name("output_identity"));
      outs[i] = orig;
    }
  }
  g.topological_sort();
}

}  // namespace kiln::ir
