// kiln's graph optimizer on its own: an ONNX model in, the optimized model out as ONNX, what
// `kiln optimize` writes (docs/optimizer.md). By default the result uses only standard ONNX
// ops at the model's opsets, so any ONNX runtime loads it.
#pragma once
#include <string>

namespace kiln {

struct OptimizeOptions {
  // 0 none, 1 basic (standard ops only), 2 extended, 3 all. Levels 2 and 3 write kiln-domain
  // fused ops (kiln.FusedConv, kiln.Attention, ...), which only kiln runs.
  int level = 1;
  // Must be set for levels 2-3: a result other runtimes reject is asked for, not a surprise.
  bool kiln_ops = false;
};

// The model file at `path`, optimized, as serialized ONNX. kiln::Error on a bad model or a level
// out of range, or a level above 1 without kiln_ops.
std::string optimize_model(const std::string& path, const OptimizeOptions& options = {});
// The same for a model given as bytes (external data resolved against `model_dir`).
std::string optimize_model_bytes(const std::string& model_bytes, const OptimizeOptions& options = {},
                                 const std::string& model_dir = ".");

}  // namespace kiln
