// ir::Graph -> ONNX ModelProto: the inverse of the importer, so an optimized graph can be
// saved and loaded again (by kiln, or by any ONNX runtime when it uses only standard ops).
// Constants become initializers, types of graph inputs/outputs and of intermediate values
// with a known rank are written (value_info), subgraphs are written as graph attributes, and
// every op domain in use (including "kiln") is listed in opset_import.
#pragma once
#include <filesystem>
#include <string>

#include "frontend/onnx/external_section.h"
#include "ir/graph.h"

namespace kiln::onnx_fe {

struct ExportOptions {
  std::string producer_name = "kiln";
  bool value_info = true;  // write inferred types of intermediate values
  // When given, initializers it takes are written as external data in it (external_section.h).
  ExternalSectionWriter* section = nullptr;
};

// Serialized ModelProto bytes. Throws kiln::Error when a value cannot be expressed in ONNX.
std::string export_model_bytes(const ir::Graph& g, const ExportOptions& opts = {});
void save_model(const ir::Graph& g, const std::filesystem::path& path, const ExportOptions& opts = {});

}  // namespace kiln::onnx_fe
