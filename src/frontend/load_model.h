// Any model file a frontend reads, by its kind: ONNX (.onnx, or a .pb holding a ModelProto),
// a frozen TensorFlow GraphDef (.pb) or a TF.js graph model (model.json).
#pragma once
#include <filesystem>
#include <memory>

#include "ir/graph.h"

namespace kiln::frontend {

enum class ModelKind { Onnx, TensorFlow };

ModelKind model_kind(const std::filesystem::path& path);
std::unique_ptr<ir::Graph> load_model(const std::filesystem::path& path);

}  // namespace kiln::frontend
