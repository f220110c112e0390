#include "passes/graph_util.h"

#include <kiln/error.h>

#include <algorithm>
#include <cmath>
#include <unordered_set>

namespace kiln::passes {

const Tensor* const_of(const ir::Value* v) { return v && v->is_constant() ? &v->constant() : nullptr; }

std::optional<double> uniform_const(const ir::Value* v) {
  const Tensor* t = const_of(v);
  if (!t || t->is_sequence() || t->is_none() || t->numel() == 0) return std::nullopt;
  if (!dtype_is_float(t->dtype()) && !dtype_is_integer(t->dtype())) return std::nullopt;
  double first = t->as_double(0);
  for (int64_t i = 1; i < t->numel(); ++i)
    if (t->as_double(i) != first) return std::nullopt;
  return first;
}

bool is_graph_output(const ir::Graph& g, const ir::Value* v) {
  return std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end();
}

bool single_use(const ir::Graph& g, const ir::Value* v) { return v->uses().size() == 1 && !is_graph_output(g, v); }

ir::Node* producer_of(const ir::Value* v, const std::string& op) {
  if (!v || !v->producer()) return nullptr;
  ir::Node* p = v->producer();
  return p->op_type() == op && p->domain().empty() ? p : nullptr;
}

bool has_subgraph(const ir::Node& n) {
  for (const auto& [k, a] : n.attrs)
    if (a.g || !a.graphs.empty()) return true;
  return false;
}

bool all_inputs_constant(const ir::Node& n) {
  for (const ir::Value* v : n.inputs())
    if (v && !v->is_constant()) return false;
  return true;
}

ir::Value* add_const(ir::Graph& g, const std::string& hint, Tensor t) {
  return g.add_constant(g.unique_name(hint), std::move(t));
}

ir::Value* add_value_like(ir::Graph& g, const ir::Value* like, const std::string& hint) {
  return g.add_value(g.unique_name(hint), like ? like->type : ir::TensorType());
}

// Values keep their identity: uses move to a placeholder while the node goes away, then come
// back to the same value, now a constant.
void fold_to_constants(ir::Graph& g, ir::Node* n, std::vector<Tensor> values) {
  std::vector<std::pair<ir::Value*, ir::Value*>> moved;
  for (int i = 0; i < n->num_outputs(); ++i) {
    ir::Value* o = n->output(i);
    if (!o) continue;
    ir::Value* tmp = g.add_value(g.unique_name("fold_tmp"));
    g.replace_all_uses(o, tmp);
    moved.emplace_back(o, tmp);
  }
  std::vector<ir::Value*> outs = n->outputs();
  g.remove_node(n);
  for (size_t i = 0; i < outs.size(); ++i)
    if (outs[i]) outs[i]->set_constant(std::move(values.at(i)));
  for (auto& [o, tmp] : moved) g.replace_all_uses(tmp, o);
}

int remove_dead_nodes(ir::Graph& g) {
  int removed = 0;
  for (bool again = true; again;) {
    again = false;
    std::unordered_set<const ir::Value*> outs(g.outputs().begin(), g.outputs().end());
    std::vector<ir::Node*> nodes = g.nodes();
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      ir::Node* n = *it;
      bool live = false;
      for (const ir::Value* o : n->outputs())
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
void restore_output_names(ir::Graph& g, const std::vector<std::string>& names) {
  auto& outs = g.mutable_outputs();
  for (size_t i = 0; i < outs.size() && i < names.size(); ++i) {
    ir::Value* v = outs[i];
    if (v->name() == names[i]) continue;
    ir::Value* orig = g.find_value(names[i]);
    if (!orig || orig->producer() || orig->is_constant() || orig->is_graph_input() || !orig->uses().empty())
      continue;
    orig->type = v->type;
    const bool shared_slot = std::count(outs.begin(), outs.end(), v) > 1;
    ir::Node* p = v->producer();
    if (p && p->owner() == &g && !shared_slot && !v->is_constant()) {
      std::vector<ir::Value*> pouts = p->outputs();
      std::replace(pouts.begin(), pouts.end(), v, orig);
      // Detach p's outputs first so the copy can take them over.
      std::vector<std::pair<ir::Value*, ir::Value*>> moved;
      for (ir::Value* o : p->outputs()) {
        if (!o) continue;
        ir::Value* tmp = g.add_value(g.unique_name("rename_tmp"));
        g.replace_all_uses(o, tmp);
        moved.emplace_back(o, tmp);
      }
      std::vector<ir::Value*> ins = p->inputs();
      ir::Attributes attrs = p->attrs;
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

std::vector<float> to_floats(const Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) out[i] = static_cast<float>(t.as_double(i));
  return out;
}

Tensor floats_like(const Tensor& like, const std::vector<float>& v, std::vector<int64_t> dims) {
  Tensor t(like.dtype(), std::move(dims));
  switch (like.dtype()) {
    case DType::Float: std::copy(v.begin(), v.end(), t.data<float>()); break;
    case DType::Double: std::copy(v.begin(), v.end(), t.data<double>()); break;
    case DType::Float16:
      for (size_t i = 0; i < v.size(); ++i) t.data<Float16>()[i] = Float16(v[i]);
      break;
    case DType::BFloat16:
      for (size_t i = 0; i < v.size(); ++i) t.data<BFloat16>()[i] = BFloat16(v[i]);
      break;
    default: throw Error("floats_like: not a float dtype: " + dtype_name(like.dtype()));
  }
  return t;
}

}  // namespace kiln::passes
