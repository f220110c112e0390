// kiln's channels-last depthwise convolution (one filter per channel, NHWC), written for the
// chains of mobilenet/efficientnet blocks: an output row at a time from whatever rows of the
// input are at hand, so it runs on the line buffers of a ConvChain (conv_chain.cpp) as well as
// on a whole tensor. Bias and the activation (Relu, Clip, SiLU in registers; others after each
// row) are its epilogue.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "ir/graph.h"
#include "kernels/depthwise_rows.h"
#include "ops/core/activation.h"

namespace kiln::backends::cpu {

// Kernel heights DepthwiseConv takes (depthwise_shape declines taller ones).
constexpr int64_t kMaxKernelRows = kiln_kernels::kDepthwiseMaxKernelRows;

using DepthwiseShape = kiln_kernels::DepthwiseShape;

class DepthwiseConv {
 public:
  // weights: [C, 1, KH, KW] as in ONNX; bias: C floats or nullptr.
  DepthwiseConv(const DepthwiseShape& s, const float* weights, const float* bias, ops::Activation act);

  // Output rows [oy0, oy1) to y (row oy0 first, rows of OW * C floats). Input row r (of the
  // H rows; the others are zero padding) is at x + (r - x_row0) * W * C: `x` may hold only the
  // rows these outputs read; with `ring` > 0, row r is at x + (r % ring) * W * C (row_slot).
  void rows(const float* x, int64_t x_row0, float* y, int64_t oy0, int64_t oy1, int64_t ring = 0) const;
  // Every output row of a whole image, channels [c0, c1) only (multiples of 16; c1 may pass C).
  void channels(const float* x, float* y, int64_t c0, int64_t c1) const;

  const DepthwiseShape& shape() const { return s_; }

 private:
  DepthwiseShape s_;
  std::vector<float> w_;     // [C16 / 16][KH * KW][16], channels zero-padded to C16 (pack_depthwise)
  std::vector<float> bias_;  // [C16]
  ops::Activation act_;
};

// The shape of a channels-last depthwise FusedConv/Conv that DepthwiseConv runs (one group per
// channel, no residual or channel scale, explicit pads, at most kMaxKernelRows kernel rows; no
// dilation unless `dilated_ok`: a ConvChain's layers are undilated), or nullptr.
std::unique_ptr<DepthwiseShape> depthwise_shape(const ir::Node& node, bool dilated_ok = false);

// How a team splits a depthwise conv on whole images: row_conv_split's rule (row_conv.h) for
// its activation ("rows", or "channels" after a 1x1 conv whose team splits its outputs).
std::string depthwise_split(const ir::Node& node, int threads);
// Where kiln_depthwise takes `node` and its rule splits the channels: the team that splits them
// (row_conv.h, channel_split_team), for a reader of its output to split the same way; else
// nullopt.
std::optional<int> depthwise_channel_team(const ir::Node& node, int threads);
// kiln_depthwise for `node` with that split, or nullptr where it declines the node.
std::unique_ptr<Kernel> make_kiln_depthwise(const ir::Node& node, int threads, const std::string& split);

}  // namespace kiln::backends::cpu
