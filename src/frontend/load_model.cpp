#include "frontend/load_model.h"

#include "frontend/onnx/importer.h"
#include "frontend/tf/importer.h"
#include "frontend/tf/model_files.h"

namespace kiln::frontend {

ModelKind model_kind(const std::filesystem::path& path) {
  return tf_fe::is_tf_model_path(path) ? ModelKind::TensorFlow : ModelKind::Onnx;
}

std::unique_ptr<ir::Graph> load_model(const std::filesystem::path& path) {
  if (model_kind(path) == ModelKind::TensorFlow) return tf_fe::load_model(path);
  return onnx_fe::load_model(path);
}

}  // namespace kiln::frontend
