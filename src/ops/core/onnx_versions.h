// The ai.onnx operator versions from opset 18 on that change what an op means (a new
// attribute or input, an attribute moved to an input, a new mode or default), as ONNX's
// operator_sets.h and Changelog list them. Versions that only widen an op's type lists are not
// listed: a type kiln lacks is refused by name where a tensor of it appears.
//
// Every OpDef says up to which version it implements its op (OpDef::max_version, 17 unless
// raised), and the registry refuses a node whose opset selects a later listed version, naming
// the version and what changed. So kiln reads models of every opset up to kMaxOnnxOpset
// without running an op by rules older than the model's.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::ops {

// The newest ai.onnx opset kiln reads.
inline constexpr int64_t kMaxOnnxOpset = 25;

struct OnnxVersionChange {
  const char* op;
  int version;
  const char* what;  // "axes moved from an attribute to input 1"
};

const std::vector<OnnxVersionChange>& onnx_version_changes();

// The newest listed change of `op` at or below `opset`, or nullptr (none from opset 18 on).
const OnnxVersionChange* onnx_version_change(const std::string& op, int64_t opset);

}  // namespace kiln::ops
