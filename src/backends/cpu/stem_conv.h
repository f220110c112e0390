// kiln's channels-last direct convolution for few input channels: the stems of the image
// models (mobilenet_v2's and efficientnet_b0's 3x3/2 3 -> 32, resnet18's 7x7/2 3 -> 64,
// squeezenet1_1's 3x3/2 3 -> 64). An output row is computed in tiles of pixels whose outputs
// stay in registers, a tile's taps one contiguous run of KW * C floats per kernel row. Alone it
// runs at oneDNN 2.6's speed (Stem* in bench/kernels time both); its use is as a ConvChain's
// first layer, an output row at a time from whatever input rows are at hand, where oneDNN needs
// a primitive per band shape (`--pair-disable kiln_stem_conv` measures what it is worth).
#pragma once
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/aligned_floats.h"
#include "ir/graph.h"
#include "kernels/stem_rows.h"
#include "ops/core/activation.h"

namespace kiln::backends::cpu {

using StemShape = kiln_kernels::StemShape;

class StemConv {
 public:
  // weights: ONNX's [OC, C, KH, KW]; bias: OC floats or nullptr. Needs AVX-512 (stem_shape
  // checks). `planar`: the input is a whole NCHW image instead of NHWC rows (the model's input
  // as given, where a Transpose to NHWC would otherwise run first): each channel's row is then
  // a kernel row of its own, of KW taps.
  StemConv(const StemShape& s, const float* weights, const float* bias, ops::Activation act, bool planar = false);

  // Output rows [oy0, oy1) to y (row oy0 first, rows of OW * OC floats). Input row r (of the H
  // rows; the others are zero padding) is at x + (r - x_row0) * W * C, or with `ring` > 0 at
  // x + (r % ring) * W * C (row_slot); planar: channel c's row r at x + (c * H + r) * W.
  void rows(const float* x, int64_t x_row0, float* y, int64_t oy0, int64_t oy1, int64_t ring = 0) const;

  const StemShape& shape() const { return layout_.shape(); }

 private:
  kiln_kernels::StemLayout layout_;  // src/kernels/stem_rows.h: the kernel itself
  AlignedFloats w_;
  std::vector<float> bias_;  // [OC rounded up to 16]
  ops::Activation act_;
};

// The shape of a channels-last FusedConv that StemConv runs (group 1, at most 8 input channels
// and 160 taps, kernels at most 16 wide, strides up to 4 along rows, no residual or channel scale, no dilation, explicit pads), or nullptr; also
// without AVX-512.
std::unique_ptr<StemShape> stem_shape(const ir::Node& node);

}  // namespace kiln::backends::cpu
