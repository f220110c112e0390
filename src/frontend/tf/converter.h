// What a TensorFlow op's converter sees (graph_walk.cpp calls one per NodeDef): the node, its data
// inputs already as IR values, and a builder that emits ai.onnx nodes into the graph, each
// inferred as it is made, so a converter can read the rank, dtype and compile-time value of
// what it builds on (StridedSlice's begin/end, a reduction's axes, a Transpose's perm). The
// graph may be a subgraph (a loop body, a branch) whose nodes read values of the graphs
// around it; control-flow converters reach the library's functions through the ImportContext.
#pragma once
#include <kiln/dtype.h>
#include <kiln/tensor.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "frontend/tf/graph_def.pb.h"
#include "ir/graph.h"
#include "ops/core/infer_graph.h"

namespace kiln::tf_fe {

// What the import offers converters beyond their own node.
class ImportContext {
 public:
  virtual ~ImportContext() = default;
  // Converts library function `fn` into `into` (which may be a subgraph), its input arguments
  // bound to `args` (values of `into` or of a graph around it), the values it makes named
  // `prefix` + its node names; returns its outputs in output_arg order. `caller` ("TensorFlow
  // node 'w' (While)") starts the errors about the call itself (a missing function, a wrong
  // number of arguments, recursion).
  virtual std::vector<ir::Value*> call_function(const std::string& fn, ir::Graph& into,
                                                const std::vector<ir::Value*>& args, const std::string& prefix,
                                                const std::string& caller) = 0;
  virtual ops::ShapeInference& inference() = 0;
  // Drops a subgraph built and not used (a loop body built again with wider types): its nodes
  // stop reading the enclosing graphs' values, and it is kept until the import ends, as the
  // inference's table of known values is keyed by value address, which a freed value could
  // hand to a new one.
  virtual void drop(std::shared_ptr<ir::Graph> g) = 0;
};

class Converter {
 public:
  // `where` follows the op in error messages (" in function 'body'"); `prefix` starts the names
  // of the values it makes (a called function's are prefixed with the caller's name).
  Converter(ir::Graph& g, ops::ShapeInference& infer, const tfpb::NodeDef& node, std::vector<ir::Value*> inputs,
            ImportContext* context = nullptr, std::string where = "", std::string prefix = "");

  const tfpb::NodeDef& node() const { return node_; }
  const std::string& name() const { return node_.name(); }
  ir::Graph& graph() const { return g_; }
  const std::string& prefix() const { return prefix_; }
  // The import this node is part of; fails when the converter runs without one.
  ImportContext& context() const;

  // "TensorFlow node 'conv1' (Conv2D)", with `where` when the node is in a function.
  std::string describe() const;
  // "TensorFlow node 'conv1' (Conv2D): msg" as kiln::Error / UnsupportedError.
  [[noreturn]] void fail(const std::string& msg) const;
  [[noreturn]] void unsupported(const std::string& msg) const;

  // Data inputs (control inputs are not here).
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  ir::Value* in(int i) const;
  void expect_inputs(int min, int max = -1) const;

  // Attributes; the *_or forms return the default when absent, the others fail when absent.
  bool has_attr(const std::string& a) const;
  const tfpb::AttrValue& attr(const std::string& a) const;
  int64_t attr_int(const std::string& a) const;
  int64_t attr_int_or(const std::string& a, int64_t def) const;
  float attr_float_or(const std::string& a, float def) const;
  bool attr_bool_or(const std::string& a, bool def) const;
  std::string attr_string_or(const std::string& a, const std::string& def) const;
  std::vector<int64_t> attr_ints_or(const std::string& a, std::vector<int64_t> def) const;
  std::vector<std::string> attr_strings_or(const std::string& a) const;
  DType attr_type(const std::string& a) const;
  DType attr_type_or(const std::string& a, DType def) const;
  // "NHWC" (default) or "NCHW"-style data_format: true when channels come last.
  bool channels_last() const;

  // The type inference gave v (rank known or not).
  const ir::TensorType& type(ir::Value* v) const { return v->type; }
  int rank(ir::Value* v) const;  // fails when unknown
  // Compile-time value of v (a constant, or computed by inference), or nullptr.
  const kiln::Tensor* known(ir::Value* v) const { return infer_.known(v); }
  // The known integer values of input i (any integer dtype), or fail naming `what`.
  std::vector<int64_t> known_ints(int i, const std::string& what) const;
  std::optional<std::vector<int64_t>> maybe_ints(ir::Value* v) const;

  // Emission. Every node is named after the TensorFlow node; each is inferred at once.
  ir::Value* op(const std::string& type, std::vector<ir::Value*> inputs, ir::Attributes attrs = {});
  std::vector<ir::Value*> op_n(const std::string& type, std::vector<ir::Value*> inputs, int outputs,
                               ir::Attributes attrs = {});
  ir::Value* ints(const std::vector<int64_t>& v);  // int64 [n]
  ir::Value* scalar(double v, DType dtype);
  ir::Value* constant(kiln::Tensor t);
  ir::Value* cast(ir::Value* v, DType to);        // no node when already `to`
  ir::Value* as_int64(ir::Value* v) { return cast(v, DType::Int64); }
  ir::Value* transpose(ir::Value* v, const std::vector<int64_t>& perm);
  ir::Value* unsqueeze(ir::Value* v, const std::vector<int64_t>& axes);
  ir::Value* squeeze(ir::Value* v, const std::vector<int64_t>& axes);
  ir::Value* reshape(ir::Value* v, const std::vector<int64_t>& shape);

  // NHWC <-> NCHW for a value of rank r (2 + spatial dims).
  static std::vector<int64_t> to_channels_first(int r);
  static std::vector<int64_t> to_channels_last(int r);

 private:
  ir::Graph& g_;
  ops::ShapeInference& infer_;
  const tfpb::NodeDef& node_;
  std::vector<ir::Value*> inputs_;
  ImportContext* context_;
  std::string where_, prefix_;
};

// A converter returns the node's outputs in order (output k is "name:k").
using ConvertFn = std::function<std::vector<ir::Value*>(Converter&)>;

// The op table: op type -> converter. Each convert_*.cpp adds its family.
using ConverterTable = std::map<std::string, ConvertFn>;
void add_array_converters(ConverterTable& t);
void add_math_converters(ConverterTable& t);
void add_nn_converters(ConverterTable& t);
void add_control_flow_converters(ConverterTable& t);
void add_tensor_list_converters(ConverterTable& t);
const ConverterTable& converters();

// kiln dtype of a TensorFlow DataType; fails naming `what` for the ones kiln has no type for.
DType dtype_from_tf(int tf_dtype, const std::string& what);

}  // namespace kiln::tf_fe
