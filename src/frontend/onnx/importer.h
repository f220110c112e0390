// ONNX ModelProto -> ir::Graph.
#pragma once
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "frontend/onnx/external_section.h"
#include "ir/graph.h"

namespace kiln::onnx_fe {

struct ImportOptions {
  int max_subgraph_depth = 16;  // If/Loop nesting beyond this is refused
  // Where tensors whose external data location is kSectionLocation lie (a .kiln file's
  // constants); the caller keeps it alive during the import.
  const ExternalSection* section = nullptr;
};

// Parses and imports a model file; external data is resolved inside the file's folder. Gradient
// nodes (ai.onnx.preview.training) come back expanded into backward ops (expand_gradient.h).
std::unique_ptr<ir::Graph> load_model(const std::filesystem::path& path, const ImportOptions& opts = {});
// Same from bytes already in memory; `model_dir` is where external data may be read from.
std::unique_ptr<ir::Graph> load_model_bytes(std::string_view bytes, const std::filesystem::path& model_dir,
                                            const ImportOptions& opts = {});

// A file's bytes in memory of kiln's own (ir/zeroed_memory.h: huge pages from 2 MiB, and
// recycled for the packed weights once freed while a session is being created). A kiln::Error
// for a file that cannot be read or is not a regular file.
struct FileBytes {
  std::shared_ptr<void> buffer;
  size_t size = 0;
  std::string_view view() const { return {static_cast<const char*>(buffer.get()), size}; }
};
FileBytes read_model_file(const std::filesystem::path& path);

}  // namespace kiln::onnx_fe
