// onnx::TensorProto <-> kiln::Tensor, including external data and the model-zoo .pb files.
#pragma once
#include <kiln/tensor.h>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "frontend/onnx/external_section.h"

namespace onnx {
class TensorProto;
}

namespace kiln::onnx_fe {

// Decodes a TensorProto. External data is read only from files inside `base_dir` (the model's
// folder): absolute locations, '..' escapes and symlinks leading outside are refused.
// `what` names the tensor in error messages ("initializer 'w'"). `raw`, when given, is the
// tensor's raw_data kept outside `p` (raw_data_split.h) and read instead of p's fields.
// `section`, when given, holds the data of tensors whose external location is
// kSectionLocation (external_section.h).
Tensor tensor_from_proto(const onnx::TensorProto& p, const std::filesystem::path& base_dir, const std::string& what,
                         std::optional<std::string_view> raw = std::nullopt, const ExternalSection* section = nullptr);
void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto* p);
// The same with the data in `section` (when it takes the tensor) as external data.
void tensor_to_proto(const Tensor& t, const std::string& name, ExternalSectionWriter& section, onnx::TensorProto* p);

// Reads / writes one TensorProto file (test_data_set_N/input_K.pb). `name` receives the stored
// tensor name, which may be empty.
Tensor load_tensor_file(const std::filesystem::path& path, std::string* name = nullptr);
void save_tensor_file(const Tensor& t, const std::string& name, const std::filesystem::path& path);

}  // namespace kiln::onnx_fe
