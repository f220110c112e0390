// kiln's channels-last grouped convolution for narrow groups: 3x3, stride 1 or 2, every group 2,
// 4, 8 or 16 channels wide in and out (ResNeXt's 4-16 channel groups, RegNet's 8 and 16). A
// 16-lane vector of output channels holds whole groups, and so does the vector of input channels
// at the same offset: each input channel i of a group reaches its outputs by spreading lane i of
// every group across the group's lanes (an in-lane permute up to 4 channels, a cross-lane one
// for 8, a broadcast load for 16), one FMA per tap and channel for 16 outputs. oneDNN 2.6's
// direct conv reaches a fifth of the FMA peak on groups of 4.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/row_conv.h"
#include "ops/core/activation.h"

namespace kiln::backends::cpu {

class GroupedConv {
 public:
  // weights: [OC, C / G, 3, 3] as in ONNX; bias: OC floats or nullptr. Needs AVX-512 and a
  // geometry grouped_conv_takes() accepts.
  GroupedConv(const RowConvGeometry& g, const float* weights, const float* bias, ops::Activation act);

  // Output rows [oy0, oy1) of one image to y (row oy0 first, rows of OW * C floats); x is the
  // whole image (x_row0 must be 0).
  void rows(const float* x, int64_t x_row0, float* y, int64_t oy0, int64_t oy1) const;

 private:
  RowConvGeometry g_;
  int64_t group_channels_;
  ops::Activation act_;
  std::vector<float> w_;     // [C / 16 rounded up][3][3][group channels][16]: lane l of vector v is output v * 16 + l
  std::vector<float> bias_;  // [C rounded up to 16], zeros past C
};

// Whether GroupedConv takes a geometry: 3x3, stride 1 or 2 across, as many outputs as inputs,
// groups of 2, 4, 8 or 16 channels (any number of groups).
bool grouped_conv_takes(const RowConvGeometry& g);

}  // namespace kiln::backends::cpu
