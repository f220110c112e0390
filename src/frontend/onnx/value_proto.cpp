#include "frontend/onnx/value_proto.h"

#include <kiln/error.h>
#include <onnx/onnx-data_pb.h>

#include <fstream>
#include <sstream>

#include "frontend/onnx/tensor_proto.h"

namespace kiln::onnx_fe {

namespace fs = std::filesystem;

namespace {

std::string read_all(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open '" + path.string() + "'");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Tensor from_sequence(const onnx::SequenceProto& sp, const fs::path& dir, const std::string& what) {
  if (sp.elem_type() != onnx::SequenceProto::TENSOR && sp.elem_type() != onnx::SequenceProto::UNDEFINED)
    throw UnsupportedError(what + ": only sequences of tensors are supported");
  std::vector<Tensor> items;
  DType elem = DType::Undefined;
  for (const auto& tp : sp.tensor_values()) {
    items.push_back(tensor_from_proto(tp, dir, what));
    elem = items.back().dtype();
  }
  return Tensor::sequence(elem, std::move(items));
}

}  // namespace

Tensor load_value_file(const fs::path& path, const ir::TensorType& expected, std::string* name) {
  const std::string what = "value file '" + path.string() + "'";
  std::string bytes = read_all(path);
  if (expected.is_optional) {
    onnx::OptionalProto op;
    if (!op.ParseFromString(bytes)) throw Error(what + ": not an OptionalProto");
    if (name) *name = op.name();
    if (op.has_tensor_value()) return tensor_from_proto(op.tensor_value(), path.parent_path(), what);
    if (op.has_sequence_value()) return from_sequence(op.sequence_value(), path.parent_path(), what);
    return Tensor::none(expected.dtype, expected.is_sequence ? ValueKind::Sequence : ValueKind::Tensor);
  }
  if (expected.is_sequence) {
    onnx::SequenceProto sp;
    if (!sp.ParseFromString(bytes)) throw Error(what + ": not a SequenceProto");
    if (name) *name = sp.name();
    Tensor t = from_sequence(sp, path.parent_path(), what);
    return t.dtype() == DType::Undefined ? Tensor::sequence(expected.dtype, t.items()) : t;
  }
  return load_tensor_file(path, name);
}

}  // namespace kiln::onnx_fe
