// Imports a TensorFlow GraphDef. Node inputs are resolved by name ("node", "node:k", "^node"
// for a control dependency), the nodes are visited in a topological order of their data and
// control edges (which also finds cycles), and each op goes through its converter
// (converter.h), which emits ai.onnx nodes inferred as they are made.
#include "frontend/tf/importer.h"

#include <kiln/error.h>

#include <map>
#include <queue>
#include <set>

#include "frontend/tf/converter.h"
#include "frontend/tf/tensor_value.h"
#include "ops/core/infer_graph.h"

namespace kiln::tf_fe {

namespace {

struct TensorRef {
  std::string node;
  int index = 0;
  bool control = false;
};

TensorRef parse_ref(const std::string& s) {
  TensorRef r;
  if (!s.empty() && s[0] == '^') {
    r.node = s.substr(1);
    r.control = true;
    return r;
  }
  const size_t colon = s.rfind(':');
  if (colon != std::string::npos && colon + 1 < s.size() &&
      s.find_first_not_of("0123456789", colon + 1) == std::string::npos) {
    r.node = s.substr(0, colon);
    r.index = std::stoi(s.substr(colon + 1));
  } else {
    r.node = s;
  }
  return r;
}

std::string tensor_name(const std::string& node, int k) { return node + ":" + std::to_string(k); }

// Ops that only order execution or check at run time: no value comes out of them.
bool is_effect_only(const std::string& op) { return op == "NoOp" || op == "Assert"; }

bool is_tf1_control_flow(const std::string& op) {
  return op == "Enter" || op == "Exit" || op == "Switch" || op == "Merge" || op == "NextIteration" ||
         op == "LoopCond" || op == "RefEnter" || op == "RefSwitch" || op == "RefMerge";
}

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

}  // namespace

std::unique_ptr<ir::Graph> import_graph(const TfModel& m, const std::string& what) {
  const auto& nodes = m.graph.node();
  const int n = nodes.size();
  std::map<std::string, int> index;
  for (int i = 0; i < n; ++i) {
    const auto& nd = nodes[i];
    if (nd.name().empty()) throw Error(what + ": node " + std::to_string(i) + " (" + nd.op() + ") has no name");
    if (!index.emplace(nd.name(), i).second) throw Error(what + ": two nodes are named '" + nd.name() + "'");
    if (is_tf1_control_flow(nd.op()))
      throw UnsupportedError("TensorFlow node '" + nd.name() + "' (" + nd.op() +
                             "): TensorFlow 1 control flow (while-loop frames) is not supported");
  }

  // Edges and a stable topological order (Kahn's, lowest node index first).
  std::vector<std::vector<TensorRef>> refs(n);
  std::vector<std::vector<int>> consumers(n);
  std::vector<int> pending(n, 0);
  std::vector<bool> data_consumed(n, false);
  for (int i = 0; i < n; ++i) {
    for (const std::string& s : nodes[i].input()) {
      TensorRef r = parse_ref(s);
      auto it = index.find(r.node);
      if (it == index.end())
        throw Error("TensorFlow node '" + nodes[i].name() + "' (" + nodes[i].op() + "): input '" + s +
                    "' names no node of the graph");
      consumers[it->second].push_back(i);
      ++pending[i];
      if (!r.control) data_consumed[it->second] = true;
      refs[i].push_back(std::move(r));
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<int> order;
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int c : consumers[i])
      if (--pending[c] == 0) ready.push(c);
  }
  if (static_cast<int>(order.size()) != n) {
    for (int i = 0; i < n; ++i)
      if (pending[i] > 0)
        throw Error("TensorFlow node '" + nodes[i].name() + "' (" + nodes[i].op() +
                    "): is on a cycle (a cycle outside a loop frame cannot run)");
  }

  auto g = std::make_unique<ir::Graph>();
  g->name = "tensorflow";
  g->opsets[""] = kImportOpset;
  ops::ShapeInference infer;
  std::map<std::string, std::vector<ir::Value*>> outputs;  // node -> its outputs

  // Placeholders first, in the signature's order where it names them, then node order.
  std::vector<int> placeholder_order;
  std::set<int> placed;
  for (const std::string& s : m.inputs) {
    auto it = index.find(parse_ref(s).node);
    if (it != index.end() && nodes[it->second].op() == "Placeholder" && placed.insert(it->second).second)
      placeholder_order.push_back(it->second);
  }
  for (int i = 0; i < n; ++i)
    if (nodes[i].op() == "Placeholder" && placed.insert(i).second) placeholder_order.push_back(i);
  for (int i : placeholder_order) outputs[nodes[i].name()] = {g->add_input(nodes[i].name(), placeholder_type(nodes[i]))};

  const ConverterTable& table = converters();
  std::set<const ir::Value*> tf_named;
  for (int i : order) {
    const tfpb::NodeDef& nd = nodes[i];
    if (nd.op() == "Placeholder") continue;
    const std::string node_what = "TensorFlow node '" + nd.name() + "' (" + nd.op() + ")";
    if (is_effect_only(nd.op())) {
      outputs[nd.name()] = {};
      continue;
    }
    if (nd.op() == "Const") {
      if (!nd.attr().count("value")) throw Error(node_what + ": attribute 'value' is missing");
      const tfpb::TensorProto& p = nd.attr().at("value").tensor();
      if (p.tensor_content().empty() && p.float_val().empty() && p.int_val().empty() && p.int64_val().empty() &&
          p.half_val().empty() && p.bool_val().empty() && p.double_val().empty() && p.string_val().empty()) {
        // A TF.js Const whose weight the manifest did not give holds only dtype and shape.
        int64_t numel = 1;
        for (const auto& d : p.tensor_shape().dim()) numel *= d.size();
        if (numel != 0) throw Error(node_what + ": has no value (its weight is missing from the weights manifest)");
      }
      ir::Value* v = g->add_constant(nd.name(), tensor_from_proto(p, node_what));
      v->type = ir::TensorType::from_dims(v->constant().dtype(), v->constant().dims());
      outputs[nd.name()] = {v};
      continue;
    }
    auto conv = table.find(nd.op());
    if (conv == table.end()) throw UnsupportedError(node_what + ": TensorFlow op '" + nd.op() + "' is not supported");
    std::vector<ir::Value*> ins;
    for (const TensorRef& r : refs[i]) {
      if (r.control) continue;
      const auto& outs = outputs.at(r.node);
      if (r.index < 0 || r.index >= static_cast<int>(outs.size()) || !outs[r.index])
        throw Error(node_what + ": input '" + r.node + ":" + std::to_string(r.index) + "' does not exist (node '" +
                    r.node + "' has " + std::to_string(outs.size()) + " outputs)");
      ins.push_back(outs[r.index]);
    }
    Converter c(*g, infer, nd, std::move(ins));
    std::vector<ir::Value*> outs = conv->second(c);
    // What the converter made carries TensorFlow's tensor name ("node:k"), so that `keep`,
    // `inspect` and errors speak of the tensors as the model's author knows them.
    // A tensor passed through (Identity and its kin) gets an Identity node of that name, which
    // the optimizer removes again.
    for (size_t k = 0; k < outs.size(); ++k) {
      ir::Value* v = outs[k];
      const std::string tn = tensor_name(nd.name(), static_cast<int>(k));
      if (!v || g->find_value(tn)) continue;
      if (v->is_constant() || v->is_graph_input() || tf_named.count(v)) {
        ir::Value* id = g->add_value(tn, v->type);
        infer.infer_node(*g->add_node("Identity", {v}, {id}, {}, tn));
        v = outs[k] = id;
      } else {
        g->rename_value(v, tn);
      }
      tf_named.insert(v);
    }
    outputs[nd.name()] = std::move(outs);
  }

  // Outputs: the signature's tensors, or every output of a node no other node reads.
  std::vector<std::pair<std::string, int>> wanted;
  for (const std::string& s : m.outputs) {
    TensorRef r = parse_ref(s);
    if (!index.count(r.node)) throw Error(what + ": the signature's output '" + s + "' names no node");
    wanted.emplace_back(r.node, r.index);
  }
  if (wanted.empty()) {
    for (int i : order) {
      const std::string& op = nodes[i].op();
      if (data_consumed[i] || op == "Const" || op == "Placeholder" || is_effect_only(op)) continue;
      for (int k = 0; k < static_cast<int>(outputs[nodes[i].name()].size()); ++k) wanted.emplace_back(nodes[i].name(), k);
    }
  }
  if (wanted.empty()) throw Error(what + ": the graph has no output");
  for (const auto& [node, k] : wanted) {
    const auto& outs = outputs.at(node);
    if (k >= static_cast<int>(outs.size()) || !outs[k])
      throw Error(what + ": output '" + tensor_name(node, k) + "' does not exist");
    const std::string name = tensor_name(node, k);
    ir::Value* v = outs[k];
    if (v->name() != name) {
      if (g->find_value(name)) throw Error(what + ": output '" + name + "' is named twice");
      ir::Value* id = g->add_value(name);
      g->add_node("Identity", {v}, {id}, {}, name);
      v = id;
    }
    g->add_output(v);
  }

  // The session infers again from the inputs; only declared types stay.
  for (ir::Value* v : g->values())
    if (!v->is_graph_input() && !v->is_constant()) v->type = {};
  g->topological_sort();
  return g;
}

std::unique_ptr<ir::Graph> load_model(const std::filesystem::path& path) {
  return import_graph(read_tf_model(path), path.string());
}

}  // namespace kiln::tf_fe
