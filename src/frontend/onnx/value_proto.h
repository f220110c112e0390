// Test-data files of any ONNX value kind: TensorProto, SequenceProto (a list of tensors) or
// OptionalProto (a tensor, a sequence, or nothing), read into kiln's Tensor handle.
#pragma once
#include <kiln/tensor.h>

#include <filesystem>
#include <string>

#include "ir/type.h"

namespace kiln::onnx_fe {

// Reads a value file whose kind follows `expected` (sequence/optional flags; tensor otherwise).
Tensor load_value_file(const std::filesystem::path& path, const ir::TensorType& expected, std::string* name = nullptr);

}  // namespace kiln::onnx_fe
