// The .kiln file: a compiled model that runs without its source. Sections, each 64-byte
// aligned, after a fixed header:
//
//   "KILNFILE" | u32 format | u32 sections | (u64 offset, u64 bytes) x sections | u64 checksum
//   section 0  manifest (JSON): producer, session options, and per precompiled input-shape
//              signature its dims and its ExecutablePlan (plan/executable_plan.h)
//   section 1  constants: every graph's weights, each distinct tensor once at a 64-byte
//              aligned offset (frontend/onnx/external_section.h); the graphs' initializers
//              name it as their external data, and a loaded file's tensors are views of it
//   section 2  the optimized graph (ONNX ModelProto bytes), from which other shapes compile;
//              empty when every input is static
//   section 3+ per signature, the lowered graph its plan runs (ONNX ModelProto bytes)
//
// The checksum (over everything after it) makes any damage a clear error before parsing.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::runtime {

constexpr uint32_t kKilnFileFormat = 2;

struct KilnFile {
  nlohmann::json manifest;
  std::string_view constants;
  std::string_view graph;                     // empty when every input is static
  std::vector<std::string_view> plan_graphs;  // one per manifest["plans"] entry
  // What the views point into when the file was read (read_kiln_file); parse_kiln_file's views
  // point into the caller's bytes. The constants loaded from it are views that keep it alive.
  std::shared_ptr<void> storage;
};

// Whether the file at `path` starts like a .kiln file (its first eight bytes).
bool is_kiln_file(const std::string& path);
// Whether bytes start like a .kiln file.
bool looks_like_kiln_file(std::string_view bytes);
void write_kiln_file(const std::string& path, const KilnFile& f);
KilnFile read_kiln_file(const std::string& path);
// The same from the file's bytes; a kiln::Error naming what is wrong with a damaged file.
KilnFile parse_kiln_file(std::string_view bytes);
std::string serialize_kiln_file(const KilnFile& f);
// The checksum the header holds, over bytes [from, end) (tests and fuzzers re-seal edited files).
uint64_t kiln_checksum(std::string_view bytes, size_t from);
// Recomputes and stores the checksum of a serialized file whose sections were edited.
void reseal_kiln_file(std::string& bytes);

}  // namespace kiln::runtime
