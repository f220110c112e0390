#include "ops/core/onnx_versions.h"

namespace kiln::ops {

const std::vector<OnnxVersionChange>& onnx_version_changes() {
  static const std::vector<OnnxVersionChange> changes = [] {
    std::vector<OnnxVersionChange> c = {
        {"Pad", 18, "the axes input"},
        {"Resize", 18, "the antialias, axes and keep_aspect_ratio_policy attributes"},
        {"OptionalGetElement", 18, "tensor inputs as well as optionals"},
        {"OptionalHasElement", 18, "tensor inputs as well as optionals"},
        {"Split", 18, "the num_outputs attribute"},
        {"ScatterND", 18, "reductions 'max' and 'min'"},
        {"ScatterElements", 18, "reductions 'max' and 'min'"},
        {"LpPool", 18, "the ceil_mode and dilations attributes"},
        {"AveragePool", 19, "the dilations attribute"},
        {"Cast", 19, "the saturate attribute"},
        {"CastLike", 19, "the saturate attribute"},
        {"QuantizeLinear", 19, "float8 outputs and the saturate attribute"},
        {"DequantizeLinear", 19, "float8 inputs"},
        {"Pad", 19, "mode 'wrap'"},
        {"Resize", 19, "coordinate_transformation_mode 'half_pixel_symmetric'"},
        {"DFT", 20, "axis moved from an attribute to input 2 (default -2)"},
        {"GridSample", 20, "N-D inputs and the modes renamed 'linear' and 'cubic'"},
        {"QuantizeLinear", 21, "block quantization (block_size) and the output_dtype attribute"},
        {"DequantizeLinear", 21, "block quantization (block_size)"},
        {"GroupNormalization", 21, "scale and bias per channel, and the stash_type attribute"},
        {"QuantizeLinear", 23, "the precision attribute"},
        {"DequantizeLinear", 23, "the output_dtype attribute"},
        {"Cast", 24, "the round_mode attribute (float8e8m0 outputs)"},
        {"CastLike", 24, "the round_mode attribute (float8e8m0 outputs)"},
        {"Attention", 24, "the nonpad_kv_seqlen input"},
    };
    // ReduceSum moved its axes to an input at opset 13, the others at 18.
    for (const char* op : {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
                           "ReduceMin", "ReduceProd", "ReduceSumSquare"})
      c.push_back({op, 18, "axes moved from an attribute to input 1"});
    return c;
  }();
  return changes;
}

const OnnxVersionChange* onnx_version_change(const std::string& op, int64_t opset) {
  const OnnxVersionChange* best = nullptr;
  for (const OnnxVersionChange& c : onnx_version_changes())
    if (op == c.op && c.version <= opset && (!best || c.version > best->version)) best = &c;
  return best;
}

}  // namespace kiln::ops
