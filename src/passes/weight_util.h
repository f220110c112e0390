// Per-output-channel arithmetic on the constant weights of Conv, ConvTranspose, Gemm and
// 2-D MatMul, shared by the folding passes (BatchNorm, Mul/Add by constants).
#pragma once
#include <kiln/tensor.h>

#include <optional>
#include <vector>

#include "ir/graph.h"

namespace kiln::passes {

// The number of output channels of n (dim 1 of its output) when its weight is a float
// constant it can scale per channel; nullopt otherwise.
std::optional<int64_t> foldable_channels(const ir::Node& n);
// n's weight with output channel c multiplied by s[c].
Tensor scale_weight(const ir::Node& n, const std::vector<float>& s);
// n's bias as one float per output channel (zeros when absent; Gemm: beta*C when C is a
// per-column vector or scalar); nullopt when the bias has another shape or is not constant.
std::optional<std::vector<float>> channel_bias(const ir::Node& n, int64_t channels);
// A per-channel vector from a constant broadcast against n's output [N, C, ...]: scalar,
// [C], or [1, C, 1, ...] / [C, 1, ...] shapes; nullopt for anything else.
std::optional<std::vector<float>> per_channel(const Tensor& t, int64_t channels, int out_rank);
// An inference BatchNormalization as the per-channel affine map y = scale * x + shift
// (scale = gamma / sqrt(var + eps), shift = beta - mean * scale), when `bn` is one: inference
// mode, per-channel parameters (not opset 8's spatial = 0), `channels` constant floats each,
// its statistics outputs unread. nullopt otherwise.
struct ChannelAffine {
  std::vector<float> scale, shift;
};
std::optional<ChannelAffine> inference_batchnorm(const ir::Graph& g, const ir::Node& bn, int64_t channels);
// A copy of n (same op, inputs, attributes) with the weight and bias replaced, producing a
// new value typed like `like`; returns that value. MatMul gets an Add for the bias.
ir::Value* rebuild_with(ir::Graph& g, const ir::Node& n, Tensor weight, const std::vector<float>& bias,
                        const ir::Value* like);

}  // namespace kiln::passes
