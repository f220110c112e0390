#include "ir/graph.h"

#include <kiln/error.h>

#include <algorithm>
#include <queue>
#include <unordered_map>

namespace kiln::ir {

const char* attribute_kind_name(Attribute::Kind k) {
  switch (k) {
    case Attribute::Kind::Float: return "float";
    case Attribute::Kind::Int: return "int";
    case Attribute::Kind::String: return "string";
    case Attribute::Kind::Tensor: return "tensor";
    case Attribute::Kind::Graph: return "graph";
    case Attribute::Kind::Floats: return "floats";
    case Attribute::Kind::Ints: return "ints";
    case Attribute::Kind::Strings: return "strings";
    case Attribute::Kind::Tensors: return "tensors";
    case Attribute::Kind::Graphs: return "graphs";
    case Attribute::Kind::Type: return "type";
  }
  return "?";
}

void Value::set_constant(kiln::Tensor t) {
  type = TensorType::from_dims(t.dtype(), t.dims());
  constant_ = std::make_shared<kiln::Tensor>(std::move(t));
}

// ---------------------------------------------------------------- Node

void Node::set_input(int i, Value* v) {
  if (i < 0) throw Error(describe() + ": negative input index");
  if (i >= num_inputs()) inputs_.resize(i + 1, nullptr);
  if (Value* old = inputs_[i]) {
    auto& u = old->uses_;
    u.erase(std::remove(u.begin(), u.end(), Use{this, i}), u.end());
  }
  inputs_[i] = v;
  if (v) v->uses_.push_back(Use{this, i});
}

const Attribute* Node::attr(const std::string& name) const {
  auto it = attrs.find(name);
  return it == attrs.end() ? nullptr : &it->second;
}

std::string Node::describe() const { return "node '" + name_ + "' (" + op_type_ + ")"; }

namespace {
const Attribute* typed(const Node& n, const std::string& name, Attribute::Kind kind) {
  const Attribute* a = n.attr(name);
  if (a && a->kind != kind)
    throw Error(n.describe() + ": attribute '" + name + "' is " + attribute_kind_name(a->kind) +
                ", expected " + attribute_kind_name(kind));
  return a;
}
}  // namespace

int64_t Node::attr_int(const std::string& name, int64_t def) const {
  const Attribute* a = typed(*this, name, Attribute::Kind::Int);
  return a ? a->i : def;
}
float Node::attr_float(const std::string& name, float def) const {
  const Attribute* a = attr(name);
  if (a && a->kind == Attribute::Kind::Int) return static_cast<float>(a->i);
  a = typed(*this, name, Attribute::Kind::Float);
  return a ? a->f : def;
}
std::string Node::attr_string(const std::string& name, const std::string& def) const {
  const Attribute* a = typed(*this, name, Attribute::Kind::String);
  return a ? a->s : def;
}
std::vector<int64_t> Node::attr_ints(const std::string& name, std::vector<int64_t> def) const {
  const Attribute* a = typed(*this, name, Attribute::Kind::Ints);
  return a ? a->ints : def;
}
std::vector<float> Node::attr_floats(const std::string& name, std::vector<float> def) const {
  const Attribute* a = typed(*this, name, Attribute::Kind::Floats);
  return a ? a->floats : def;
}
std::vector<std::string> Node::attr_strings(const std::string& name, std::vector<std::string> def) const {
  const Attribute* a = typed(*this, name, Attribute::Kind::Strings);
  return a ? a->strings : def;
}
int64_t Node::attr_int_required(const std::string& name) const {
  const Attribute* a = typed(*this, name, Attribute::Kind::Int);
  if (!a) throw Error(describe() + ": missing required attribute '" + name + "'");
  return a->i;
}
const kiln::Tensor& Node::attr_tensor_required(const std::string& name) const {
  const Attribute* a = typed(*this, name, Attribute::Kind::Tensor);
  if (!a) throw Error(describe() + ": missing required attribute '" + name + "'");
  return a->t;
}
std::shared_ptr<Graph> Node::attr_graph(const std::string& name) const {
  const Attribute* a = typed(*this, name, Attribute::Kind::Graph);
  return a ? a->g : nullptr;
}

// ---------------------------------------------------------------- Graph

int64_t Graph::opset(const std::string& domain) const {
  for (const Graph* g = this; g; g = g->parent) {
    auto it = g->opsets.find(domain);
    if (it != g->opsets.end()) return it->second;
  }
  return domain.empty() ? 1 : 0;
}

Value* Graph::add_value(std::string name, TensorType type) {
  if (name.empty()) name = unique_name("v");
  if (by_name_.count(name)) throw Error("duplicate value name '" + name + "'");
  auto v = std::make_unique<Value>();
  v->name_ = name;
  v->type = std::move(type);
  v->owner_ = this;
  Value* raw = v.get();
  values_.push_back(std::move(v));
  by_name_[raw->name_] = raw;
  return raw;
}

Value* Graph::add_input(std::string name, TensorType type) {
  Value* v = add_value(std::move(name), std::move(type));
  v->is_graph_input_ = true;
  inputs_.push_back(v);
  return v;
}

Value* Graph::add_constant(std::string name, kiln::Tensor t) {
  Value* v = add_value(std::move(name));
  v->set_constant(std::move(t));
  return v;
}

Node* Graph::add_node(std::string op_type, std::vector<Value*> inputs, std::vector<Value*> outputs,
                      Attributes attrs, std::string name, std::string domain) {
  auto n = std::make_unique<Node>();
  Node* raw = n.get();
  raw->op_type_ = std::move(op_type);
  raw->domain_ = domain == "ai.onnx" ? "" : std::move(domain);
  raw->name_ = name.empty() ? unique_name(raw->op_type_) : std::move(name);
  raw->owner_ = this;
  raw->attrs = std::move(attrs);
  // Check before linking anything: a rejected node must not leave uses or producers that
  // point at it once it is freed.
  for (size_t i = 0; i < outputs.size(); ++i) {
    Value* o = outputs[i];
    if (o && (o->producer_ || o->is_constant() || o->is_graph_input_ ||
              std::find(outputs.begin(), outputs.begin() + i, o) != outputs.begin() + i))
      throw Error(raw->describe() + ": output '" + o->name() + "' already has a producer");
  }
  for (size_t i = 0; i < inputs.size(); ++i) raw->set_input(static_cast<int>(i), inputs[i]);
  raw->outputs_ = std::move(outputs);
  for (size_t i = 0; i < raw->outputs_.size(); ++i) {
    Value* o = raw->outputs_[i];
    if (!o) continue;
    o->producer_ = raw;
    o->producer_output_ = static_cast<int>(i);
  }
  nodes_.push_back(std::move(n));
  return raw;
}

void Graph::remove_node(Node* n) {
  for (Value* o : n->outputs_) {
    if (!o) continue;
    if (!o->uses_.empty() || std::find(outputs_.begin(), outputs_.end(), o) != outputs_.end())
      throw Error(n->describe() + ": cannot remove, output '" + o->name() + "' is still used");
  }
  for (int i = 0; i < n->num_inputs(); ++i) n->set_input(i, nullptr);
  for (Value* o : n->outputs_)
    if (o) { o->producer_ = nullptr; o->producer_output_ = -1; }
  nodes_.erase(std::remove_if(nodes_.begin(), nodes_.end(), [n](const auto& p) { return p.get() == n; }),
               nodes_.end());
}

void Graph::replace_all_uses(Value* from, Value* to) {
  std::vector<Use> uses = from->uses_;
  for (const Use& u : uses) u.node->set_input(u.input_index, to);
  for (Value*& o : outputs_)
    if (o == from) o = to;
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_) out.push_back(n.get());
  return out;
}

std::vector<Value*> Graph::values() const {
  std::vector<Value*> out;
  for (const auto& v : values_) out.push_back(v.get());
  return out;
}

std::vector<Value*> Graph::constants() const {
  std::vector<Value*> out;
  for (const auto& v : values_)
    if (v->is_constant()) out.push_back(v.get());
  return out;
}

Value* Graph::find_value(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

void Graph::rename_value(Value* v, std::string name) {
  if (v->name_ == name) return;
  if (by_name_.count(name)) throw Error("duplicate value name '" + name + "'");
  by_name_.erase(v->name_);
  v->name_ = std::move(name);
  by_name_[v->name_] = v;
}

std::string Graph::unique_name(const std::string& prefix) {
  for (;;) {
    std::string n = prefix + "__" + std::to_string(name_counter_++);
    if (!by_name_.count(n)) return n;
  }
}

// Kahn's algorithm keeping the current order among ready nodes. Edges from values produced in
// this graph only: outer-scope values and subgraph reads of this graph's values are ordered by
// the node that owns the subgraph.
void Graph::topological_sort() {
  std::unordered_map<Node*, size_t> pos;
  for (size_t i = 0; i < nodes_.size(); ++i) pos[nodes_[i].get()] = i;
  std::vector<int> pending(nodes_.size(), 0);
  std::vector<std::vector<size_t>> succ(nodes_.size());
  // Values a node's subgraphs read from this graph count as inputs of the node.
  auto deps = [&](Node* n) {
    std::vector<Value*> vs(n->inputs_.begin(), n->inputs_.end());
    std::vector<const Graph*> stack;
    for (auto& [k, a] : n->attrs) {
      if (a.g) stack.push_back(a.g.get());
      for (auto& g : a.graphs) stack.push_back(g.get());
    }
    while (!stack.empty()) {
      const Graph* g = stack.back();
      stack.pop_back();
      for (const auto& sn : g->nodes_) {
        for (Value* v : sn->inputs_)
          if (v && v->owner_ == this) vs.push_back(v);
        for (auto& [k, a] : sn->attrs) {
          if (a.g) stack.push_back(a.g.get());
          for (auto& sg : a.graphs) stack.push_back(sg.get());
        }
      }
      for (Value* v : g->outputs_)
        if (v && v->owner_ == this) vs.push_back(v);
    }
    return vs;
  };
  for (size_t i = 0; i < nodes_.size(); ++i) {
    for (Value* v : deps(nodes_[i].get())) {
      if (!v || !v->producer_ || v->owner_ != this) continue;
      auto it = pos.find(v->producer_);
      if (it == pos.end()) continue;
      succ[it->second].push_back(i);
      ++pending[i];
    }
  }
  std::vector<size_t> order;
  // Smallest original index first, so an already sorted graph keeps its order.
  std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> ready;
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (pending[i] == 0) ready.push(i);
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t s : succ[i])
      if (--pending[s] == 0) ready.push(s);
  }
  if (order.size() != nodes_.size()) {
    // An unsorted node may merely depend on a cycle; every unsorted node has an unsorted
    // predecessor, so walking back from one must revisit a node, and that node is on a cycle.
    std::vector<std::vector<size_t>> pred(nodes_.size());
    for (size_t i = 0; i < nodes_.size(); ++i)
      for (size_t s : succ[i]) pred[s].push_back(i);
    size_t at = 0;
    while (pending[at] == 0) ++at;
    std::vector<bool> seen(nodes_.size(), false);
    while (!seen[at]) {
      seen[at] = true;
      for (size_t p : pred[at])
        if (pending[p] > 0) { at = p; break; }
    }
    throw Error(nodes_[at]->describe() + ": graph has a cycle through this node");
  }
  std::vector<std::unique_ptr<Node>> sorted;
  sorted.reserve(nodes_.size());
  for (size_t i : order) sorted.push_back(std::move(nodes_[i]));
  nodes_ = std::move(sorted);
}

}  // namespace kiln::ir
