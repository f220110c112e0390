// A plan's packed weights in a .kiln file (backends/packed_weights.h): recorded by building
// each kernel again from its spec, stored in the file's constants section (each distinct
// buffer once), and listed in the manifest per instruction:
//
//   "packed": [null | {"spec": "cpu:kiln_pointwise{...}@2", "buffers": [{"key", "offset", "bytes"}]}, ...]
//
// Loaded, each buffer is a view of the section's memory, which the kernels replay.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.h"
#include "backends/packed_weights.h"
#include "frontend/onnx/external_section.h"
#include "runtime/compiled_plan.h"

namespace kiln::runtime {

// What a kernel's packed buffers are recorded and replayed under: its spec and team size.
std::string packing_identity(const plan::KernelSpec& spec);

// Builds every kernel of `cp` again under a recording scope and stores the buffers in `section`.
nlohmann::json record_packed_weights(const CompiledPlan& cp, const backends::Backend& backend,
                                     onnx_fe::ExternalSectionWriter& section);

// The inverse, for a plan of `instructions` instructions: buffers are views of `section`
// (copies where `owner` is null). A kiln::Error saying what is malformed.
std::vector<backends::PackedWeights> packed_weights_from_json(const nlohmann::json& j, size_t instructions,
                                                              std::string_view section, const std::shared_ptr<void>& owner);

}  // namespace kiln::runtime
