// Imports a TensorFlow GraphDef: its nodes resolved and ordered (node_set.h), Placeholders as
// graph inputs, then one walk over the nodes (graph_walk.h) converting each through its
// converter; While/If bodies and TensorFlow 1 loops become subgraphs on the way.
#include "frontend/tf/importer.h"

#include <kiln/error.h>

#include <set>

#include "frontend/tf/converter.h"
#include "frontend/tf/graph_walk.h"
#include "frontend/tf/node_set.h"

namespace kiln::tf_fe {

namespace {

std::string tensor_name(const std::string& node, int k) { return node + ":" + std::to_string(k); }

bool is_effect_only(const std::string& op) { return op == "NoOp" || op == "Assert"; }

ir::TensorType placeholder_type(const tfpb::NodeDef& n) {
  const std::string what = "TensorFlow node '" + n.name() + "' (Placeholder)";
  if (!n.attr().count("dtype")) throw Error(what + ": attribute 'dtype' is missing");
  const DType dt = dtype_from_tf(n.attr().at("dtype").type(), what);
  if (!n.attr().count("shape") || n.attr().at("shape").shape().unknown_rank()) return ir::TensorType::unranked(dt);
  std::vector<ir::Dim> dims;
  int i = 0;
  for (const auto& d : n.attr().at("shape").shape().dim()) {
    if (d.size() >= 0) dims.push_back(ir::Dim(d.size()));
    else dims.push_back(ir::Dim::sym(n.name() + "_d" + std::to_string(i)));
    ++i;
  }
  return ir::TensorType(dt, dims);
}

// The session infers again from the inputs; only declared types stay: the graph's inputs and
// constants, and of a subgraph's inputs their kind and dtype (its enclosing node gives shapes).
void forget_inferred_types(ir::Graph& g) {
  for (ir::Value* v : g.values()) {
    if (v->is_constant()) continue;
    if (v->is_graph_input()) {
      if (g.parent) {
        ir::TensorType t = ir::TensorType::unranked(v->type.dtype);
        t.is_sequence = v->type.is_sequence;
        t.is_optional = v->type.is_optional;
        v->type = t;
      }
      continue;
    }
    v->type = {};
  }
  for (ir::Node* n : g.nodes())
    for (auto& [k, a] : n->attrs) {
      if (a.g) forget_inferred_types(*a.g);
      for (auto& sg : a.graphs) forget_inferred_types(*sg);
    }
}

void sort_all(ir::Graph& g) {
  g.topological_sort();
  for (ir::Node* n : g.nodes())
    for (auto& [k, a] : n->attrs) {
      if (a.g) sort_all(*a.g);
      for (auto& sg : a.graphs) sort_all(*sg);
    }
}

}  // namespace

std::unique_ptr<ir::Graph> import_graph(const TfModel& m, const std::string& what) {
  NodeSet set(m.graph.node(), nullptr, "");
  const int n = set.size();

  auto g = std::make_unique<ir::Graph>();
  g->name = "tensorflow";
  g->opsets[""] = kImportOpset;
  GraphWalk walk(m.graph.library());
  Scope root;
  root.graph = g.get();

  // Placeholders first, in the signature's order where it names them, then node order.
  std::vector<int> placeholder_order;
  std::set<int> placed;
  for (const std::string& s : m.inputs) {
    const std::string node = s.substr(0, s.find(':'));
    const int i = set.find(node);
    if (i >= 0 && set.node(i).op() == "Placeholder" && placed.insert(i).second) placeholder_order.push_back(i);
  }
  for (int i = 0; i < n; ++i)
    if (set.node(i).op() == "Placeholder" && placed.insert(i).second) placeholder_order.push_back(i);
  for (int i : placeholder_order) {
    if (set.frame_of(i) != 0) throw Error(set.describe(i) + ": a Placeholder inside a while loop");
    root.values[i] = {g->add_input(set.node(i).name(), placeholder_type(set.node(i)))};
  }

  walk.walk(set, root, GraphWalk::root_region(set));

  // Outputs: the signature's tensors, or every output of a node no other node reads.
  std::vector<std::pair<int, int>> wanted;
  for (const std::string& s : m.outputs) {
    NodeInput r;
    try {
      r = set.resolve(s, what + ": the signature's output '" + s + "'");
    } catch (const Error&) {
      throw Error(what + ": the signature's output '" + s + "' names no node");
    }
    wanted.emplace_back(r.node, r.output);
  }
  if (wanted.empty()) {
    for (int i : set.order()) {
      const std::string& op = set.node(i).op();
      if (set.data_consumed(i) || op == "Const" || op == "Placeholder" || is_effect_only(op) || !root.values.count(i))
        continue;
      const auto& outs = root.values.at(i);
      for (int k = 0; k < static_cast<int>(outs.size()); ++k)
        if (outs[k]) wanted.emplace_back(i, k);  // a TF1 Merge's value_index is made only when read
    }
  }
  if (wanted.empty()) throw Error(what + ": the graph has no output");
  for (const auto& [node, k] : wanted) {
    const std::string name = tensor_name(set.node(node).name(), k);
    const std::vector<ir::Value*>* outs = root.find(node);
    if (!outs)
      throw Error(what + ": output '" + name +
                  "' exists only inside a while loop or a conditional branch (read it through an Exit or a Merge)");
    if (k >= static_cast<int>(outs->size()) || !(*outs)[k]) throw Error(what + ": output '" + name + "' does not exist");
    ir::Value* v = (*outs)[k];
    if (v->name() != name) {
      if (g->find_value(name)) throw Error(what + ": output '" + name + "' is named twice");
      ir::Value* id = g->add_value(name);
      g->add_node("Identity", {v}, {id}, {}, name);
      v = id;
    }
    g->add_output(v);
  }

  forget_inferred_types(*g);
  sort_all(*g);
  return g;
}

std::unique_ptr<ir::Graph> load_model(const std::filesystem::path& path) {
  return import_graph(read_tf_model(path), path.string());
}

}  // namespace kiln::tf_fe
