// TensorFlow GraphDef -> ir::Graph (the ONNX importer's counterpart; docs/tensorflow.md).
#pragma once
#include <filesystem>
#include <memory>
#include <string>

#include "frontend/tf/model_files.h"
#include "ir/graph.h"

namespace kiln::tf_fe {

// The ai.onnx opset the imported graph's nodes are written in.
constexpr int64_t kImportOpset = 21;

// Imports a GraphDef whose Const nodes hold their values (model_files.h). Placeholders become
// graph inputs named after their node, in node order (or the signature's); the outputs are the
// signature's tensors or, without one, every output no node reads, named "node:k" as
// TensorFlow names tensors. Errors name the TensorFlow node.
std::unique_ptr<ir::Graph> import_graph(const TfModel& m, const std::string& what);

// Reads and imports a frozen .pb or a TF.js model.json.
std::unique_ptr<ir::Graph> load_model(const std::filesystem::path& path);

}  // namespace kiln::tf_fe
