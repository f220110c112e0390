// An operator's definition: what a node of this op may look like, how its output types follow
// from its input types (shape inference, with symbolic dims), how it fuses (pattern kind), and
// its reference kernel. The reference kernels are the oracle every optimized path is checked
// against and the fallback backend; they favour clarity over speed.
#pragma once
#include <kiln/error.h>
#include <kiln/tensor.h>

#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::ops {

// TVM's OpPatternKind: how an op may fuse with its neighbours.
enum class PatternKind {
  ElemWise = 0,         // out[i] = f(in[i])
  Broadcast = 1,        // out[i] = f(in[broadcast(i)])
  Injective = 2,        // each output reads one input element (transpose, gather, concat)
  CommReduce = 3,       // reductions
  OutEWiseFusable = 4,  // conv/matmul: elementwise epilogues fuse into its output
  Tuple = 7,            // makes a tuple of its inputs (concat-like sinks)
  Opaque = 8,           // never fuses
};
const char* pattern_kind_name(PatternKind k);

// A symbolic-dimension generator, so data-dependent or unknown extents get fresh names
// ("unk__3") that later stages can bind at run time.
struct SymbolSource {
  virtual ~SymbolSource() = default;
  virtual ir::Dim fresh() = 0;
};

// What a shape-inference function sees and fills.
class InferContext {
 public:
  InferContext(const ir::Node& node, int64_t opset, std::vector<ir::TensorType> inputs,
               std::vector<const kiln::Tensor*> values, SymbolSource& symbols);

  const ir::Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  bool has_input(int i) const { return node_.has_input(i); }
  // Type of input i; throws (naming the node) when the input is absent.
  const ir::TensorType& input(int i) const;
  // The value of input i when it is known at compile time (constant or inferred), else nullptr.
  const kiln::Tensor* value(int i) const;
  int num_outputs() const { return node_.num_outputs(); }
  bool has_output(int i) const { return node_.output(i) != nullptr; }

  void set_output(int i, ir::TensorType t);
  void set_output(int i, DType dtype, std::vector<ir::Dim> dims) { set_output(i, ir::TensorType(dtype, std::move(dims))); }
  // Also record the output's value, when an inference step can compute it (e.g. Shape of a
  // static shape); later nodes then see it through value().
  void set_output_value(int i, kiln::Tensor t);
  ir::Dim fresh_dim() { return symbols_.fresh(); }

  // Throws kiln::Error "node 'n' (Op): <msg>".
  [[noreturn]] void fail(const std::string& msg) const;

  std::vector<ir::TensorType> outputs;
  std::vector<kiln::Tensor> output_values;  // undefined tensors where unknown

 private:
  const ir::Node& node_;
  int64_t opset_;
  std::vector<ir::TensorType> inputs_;
  std::vector<const kiln::Tensor*> values_;
  SymbolSource& symbols_;
};

// Runs a subgraph (If/Loop/Scan body) with the given inputs; the runtime provides it.
using SubgraphRunner = std::function<std::vector<kiln::Tensor>(
    const ir::Graph& body, const std::vector<kiln::Tensor>& inputs)>;

// What a reference kernel sees: concrete inputs; it allocates and fills its outputs.
class KernelContext {
 public:
  KernelContext(const ir::Node& node, int64_t opset, std::vector<const kiln::Tensor*> inputs);

  const ir::Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  bool has_input(int i) const { return i < num_inputs() && inputs_[i] != nullptr; }
  // Throws (naming the node) when input i is absent.
  const kiln::Tensor& input(int i) const;
  int num_outputs() const { return node_.num_outputs(); }
  bool has_output(int i) const { return node_.output(i) != nullptr; }

  // Allocates output i (zero-filled) and returns it for writing.
  kiln::Tensor& make_output(int i, DType dtype, std::vector<int64_t> dims);
  // Sets output i to an existing tensor (e.g. Identity, Reshape share their input's buffer).
  void set_output(int i, kiln::Tensor t);

  [[noreturn]] void fail(const std::string& msg) const;

  std::vector<kiln::Tensor> outputs;
  const SubgraphRunner* subgraphs = nullptr;

  // Memory the runtime planned for each output (an arena slot). make_output places an output
  // there when it fits; `zero` = false for in-place results whose slot holds the input.
  struct OutputSlot {
    void* data = nullptr;
    size_t capacity = 0;
    bool zero = true;
  };
  std::vector<OutputSlot> slots;

 private:
  const ir::Node& node_;
  int64_t opset_;
  std::vector<const kiln::Tensor*> inputs_;
};

using InferFn = std::function<void(InferContext&)>;
using KernelFn = std::function<void(KernelContext&)>;

struct OpDef {
  std::string name;
  std::string domain;     // "" = ai.onnx
  int since_version = 1;  // lowest opset this definition accepts
  // The newest ai.onnx version of the op this definition implements, or refuses by name where
  // it does not (a mode, a type): a model whose opset selects a later change listed in
  // onnx_versions.h is refused.
  int max_version = 17;
  int min_inputs = 0, max_inputs = 0;  // max -1 = variadic
  int min_outputs = 1, max_outputs = 1;
  PatternKind pattern = PatternKind::Opaque;
  InferFn infer;
  KernelFn kernel;
  // Random ops etc.: the value may not be computed ahead of time.
  bool deterministic = true;
};

}  // namespace kiln::ops
