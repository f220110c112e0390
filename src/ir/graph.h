// The dataflow graph. Values are SSA: each is a graph input, a constant (initializer) or the
// output of exactly one node, and keeps the list of its uses. A Graph owns its nodes and
// values; nested subgraphs (If/Loop/Scan bodies) hang off node attributes and may read values
// of enclosing graphs by pointer (outer-scope values).
//
//   Value(x) ──▶ Node(Conv) ──▶ Value(y) ──▶ Node(Relu) ──▶ Value(z) = graph output
//                   ▲
//   Value(w, constant)
#pragma once
#include <kiln/tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/attribute.h"
#include "ir/type.h"

namespace kiln::ir {

class Node;
class Graph;

struct Use {
  Node* node = nullptr;
  int input_index = 0;
  bool operator==(const Use& o) const { return node == o.node && input_index == o.input_index; }
};

class Value {
 public:
  const std::string& name() const { return name_; }
  TensorType type;

  Node* producer() const { return producer_; }
  int producer_output() const { return producer_output_; }
  const std::vector<Use>& uses() const { return uses_; }
  Graph* owner() const { return owner_; }

  bool is_constant() const { return constant_ != nullptr; }
  const kiln::Tensor& constant() const { return *constant_; }
  void set_constant(kiln::Tensor t);
  // Shares another value's constant tensor (graph clones share their weights).
  const std::shared_ptr<kiln::Tensor>& constant_ptr() const { return constant_; }
  void set_constant_shared(std::shared_ptr<kiln::Tensor> t) { constant_ = std::move(t); }
  bool is_graph_input() const { return is_graph_input_; }

 private:
  friend class Graph;
  friend class Node;
  std::string name_;
  Graph* owner_ = nullptr;
  Node* producer_ = nullptr;
  int producer_output_ = -1;
  std::vector<Use> uses_;
  std::shared_ptr<kiln::Tensor> constant_;
  bool is_graph_input_ = false;
};

class Node {
 public:
  const std::string& name() const { return name_; }
  const std::string& op_type() const { return op_type_; }
  const std::string& domain() const { return domain_; }  // "" = ai.onnx
  Graph* owner() const { return owner_; }

  // Absent optional inputs/outputs are nullptr.
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  Value* input(int i) const { return i >= 0 && i < num_inputs() ? inputs_[i] : nullptr; }
  Value* output(int i) const { return i >= 0 && i < num_outputs() ? outputs_[i] : nullptr; }
  bool has_input(int i) const { return input(i) != nullptr; }
  void set_input(int i, Value* v);  // keeps use lists right

  Attributes attrs;
  bool has_attr(const std::string& name) const { return attrs.count(name) != 0; }
  const Attribute* attr(const std::string& name) const;
  // Typed lookups: return the default when absent; throw kiln::Error (naming the node) when the
  // attribute has the wrong kind, or for the *_required forms when it is missing.
  int64_t attr_int(const std::string& name, int64_t def) const;
  float attr_float(const std::string& name, float def) const;
  std::string attr_string(const std::string& name, const std::string& def) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> def = {}) const;
  std::vector<float> attr_floats(const std::string& name, std::vector<float> def = {}) const;
  std::vector<std::string> attr_strings(const std::string& name, std::vector<std::string> def = {}) const;
  int64_t attr_int_required(const std::string& name) const;
  const kiln::Tensor& attr_tensor_required(const std::string& name) const;
  std::shared_ptr<Graph> attr_graph(const std::string& name) const;  // nullptr if absent

  // "node 'conv1' (Conv)": how errors name a node.
  std::string describe() const;

 private:
  friend class Graph;
  std::string name_, op_type_, domain_;
  Graph* owner_ = nullptr;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  std::string name;
  Graph* parent = nullptr;  // enclosing graph for subgraphs
  // opset version per domain ("" = ai.onnx); subgraphs share the model's.
  std::map<std::string, int64_t> opsets;
  int64_t opset(const std::string& domain = "") const;

  // Creation.
  Value* add_value(std::string name, TensorType type = {});
  Value* add_input(std::string name, TensorType type);
  Value* add_constant(std::string name, kiln::Tensor t);
  Node* add_node(std::string op_type, std::vector<Value*> inputs, std::vector<Value*> outputs,
                 Attributes attrs = {}, std::string name = "", std::string domain = "");
  void add_output(Value* v) { outputs_.push_back(v); }

  // Removes a node; throws kiln::Error if one of its outputs is still used or is a graph output.
  void remove_node(Node* n);
  // Replace every use of `from` (including graph outputs) by `to`.
  void replace_all_uses(Value* from, Value* to);

  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  std::vector<Value*>& mutable_outputs() { return outputs_; }
  // Nodes in their stable (topological, after import) order.
  std::vector<Node*> nodes() const;
  size_t num_nodes() const { return nodes_.size(); }
  std::vector<Value*> values() const;
  std::vector<Value*> constants() const;
  Value* find_value(const std::string& name) const;  // this graph only
  // Gives v a new name; throws kiln::Error when another value has it.
  void rename_value(Value* v, std::string name);

  // Re-orders nodes topologically (stable); throws kiln::Error naming a node on a cycle.
  void topological_sort();
  // A fresh name with the given prefix, unique in this graph.
  std::string unique_name(const std::string& prefix);

 private:
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Value>> values_;
  std::map<std::string, Value*> by_name_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  int64_t name_counter_ = 0;
};

}  // namespace kiln::ir
