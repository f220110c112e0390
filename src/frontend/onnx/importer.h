// ONNX ModelProto -> ir::Graph.
#pragma once
#include <filesystem>
#include <memory>
#include <string>

#include "ir/graph.h"

namespace kiln::onnx_fe {

struct ImportOptions {
  int max_subgraph_depth = 16;  // If/Loop nesting beyond this is refused
};

// Parses and imports a model file; external data is resolved inside the file's folder.
std::unique_ptr<ir::Graph> load_model(const std::filesystem::path& path, const ImportOptions& opts = {});
// Same from bytes already in memory; `model_dir` is where external data may be read from.
std::unique_ptr<ir::Graph> load_model_bytes(const std::string& bytes, const std::filesystem::path& model_dir,
                                            const ImportOptions& opts = {});

}  // namespace kiln::onnx_fe
