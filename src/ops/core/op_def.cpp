#include "ops/core/op_def.h"

#include <cstring>

namespace kiln::ops {

const char* pattern_kind_name(PatternKind k) {
  switch (k) {
    case PatternKind::ElemWise: return "ElemWise";
    case PatternKind::Broadcast: return "Broadcast";
    case PatternKind::Injective: return "Injective";
    case PatternKind::CommReduce: return "CommReduce";
    case PatternKind::OutEWiseFusable: return "OutEWiseFusable";
    case PatternKind::Tuple: return "Tuple";
    case PatternKind::Opaque: return "Opaque";
  }
  return "?";
}

InferContext::InferContext(const ir::Node& node, int64_t opset, std::vector<ir::TensorType> inputs,
                           std::vector<const kiln::Tensor*> values, SymbolSource& symbols)
    : outputs(node.num_outputs()),
      output_values(node.num_outputs()),
      node_(node),
      opset_(opset),
      inputs_(std::move(inputs)),
      values_(std::move(values)),
      symbols_(symbols) {}

const ir::TensorType& InferContext::input(int i) const {
  if (i >= num_inputs() || !node_.has_input(i)) fail("missing required input " + std::to_string(i));
  return inputs_[i];
}

const kiln::Tensor* InferContext::value(int i) const {
  return i < static_cast<int>(values_.size()) ? values_[i] : nullptr;
}

void InferContext::set_output(int i, ir::TensorType t) {
  if (i < 0 || i >= num_outputs()) return;  // optional output not requested
  outputs[i] = std::move(t);
}

void InferContext::set_output_value(int i, kiln::Tensor t) {
  if (i < 0 || i >= num_outputs()) return;
  // A sequence or optional keeps the type inference gave it (dims describe the elements).
  if (t.kind() == kiln::ValueKind::Tensor) outputs[i] = ir::TensorType::from_dims(t.dtype(), t.dims());
  output_values[i] = std::move(t);
}

void InferContext::fail(const std::string& msg) const { throw Error(node_.describe() + ": " + msg); }

KernelContext::KernelContext(const ir::Node& node, int64_t opset, std::vector<const kiln::Tensor*> inputs)
    : outputs(node.num_outputs()), node_(node), opset_(opset), inputs_(std::move(inputs)) {}

const kiln::Tensor& KernelContext::input(int i) const {
  if (!has_input(i)) fail("missing required input " + std::to_string(i));
  return *inputs_[i];
}

kiln::Tensor& KernelContext::make_output(int i, DType dtype, std::vector<int64_t> dims) {
  if (i < 0 || i >= num_outputs()) fail("kernel wrote output " + std::to_string(i) + " that the node lacks");
  try {
    if (i < static_cast<int>(slots.size()) && slots[i].data && dtype != DType::String) {
      kiln::Tensor t = kiln::Tensor::wrap(dtype, dims, slots[i].data);
      if (t.nbytes() <= slots[i].capacity) {
        if (slots[i].zero) std::memset(slots[i].data, 0, t.nbytes());
        outputs[i] = t;
        return outputs[i];
      }
    }
    outputs[i] = kiln::Tensor(dtype, std::move(dims));
  } catch (const Error& e) {
    fail(std::string("output ") + std::to_string(i) + ": " + e.what());
  }
  return outputs[i];
}

void KernelContext::set_output(int i, kiln::Tensor t) {
  if (i < 0 || i >= num_outputs()) fail("kernel wrote output " + std::to_string(i) + " that the node lacks");
  outputs[i] = std::move(t);
}

void KernelContext::fail(const std::string& msg) const { throw Error(node_.describe() + ": " + msg); }

}  // namespace kiln::ops
