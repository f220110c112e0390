// What kiln's row-at-a-time convs (DepthwiseConv, StemConv: an output row at a time from
// whatever input rows are at hand, so they also run on a ConvChain's line buffers) share: the
// node forms they take and the kernel that runs one on whole images.
#pragma once
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "backends/backend.h"
#include "backends/cpu/activation_apply.h"
#include "backends/cpu/parallel.h"
#include "ir/graph.h"
#include "ops/core/activation.h"
#include "kernels/depthwise_rows.h"

namespace kiln::backends::cpu {

// The slot of input row r of a row-at-a-time kernel (kernels/depthwise_rows.h).
using kiln_kernels::row_slot;

struct RowConvGeometry {
  int64_t H = 0, W = 0, C = 0, OH = 0, OW = 0, OC = 0, KH = 0, KW = 0, SH = 1, SW = 1, PT = 0, PL = 0, G = 1;
  int64_t DH = 1, DW = 1;  // dilations (only with dilated_ok)
};

// The geometry of a channels-last kiln.FusedConv with plain NHWC ends, no residual Z or channel
// scale S, static float X, W and Y, constant W (OC first) and bias (OC floats), explicit
// non-negative pads that agree with Y's size, no dilation unless `dilated_ok` (a kernel that
// takes DH and DW); else nullopt. The caller checks what its kernel needs of the groups and the
// kernel size.
std::optional<RowConvGeometry> row_conv_geometry(const ir::Node& node, bool dilated_ok = false);

// A row conv on whole images, its output rows split across the threads (as the convs before
// and after split pixels). Conv has rows(x, x_row0, y, oy0, oy1).
template <class Conv>
class RowConvKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  RowConvKernel(Conv conv, const RowConvGeometry& g, int64_t images, int threads)
      : conv_(std::move(conv)), images_(images), rows_(g.OH), in_image_(g.H * g.W * g.C), out_row_(g.OW * g.OC),
        macs_per_output_(g.KH * g.KW * g.C / std::max<int64_t>(1, g.G)), threads_(threads) {}

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const float* x = inputs[0]->data<float>();
    float* y = outputs[0]->data<float>();
    const int threads = product_team(rows_ * out_row_, rows_ * out_row_ * macs_per_output_, threads_);
    for (int64_t i = 0; i < images_; ++i)
      parallel_for(rows_, threads, [&](int64_t r0, int64_t r1) {
        conv_.rows(x + i * in_image_, 0, y + (i * rows_ + r0) * out_row_, r0, r1);
      });
  }

 private:
  Conv conv_;
  int64_t images_, rows_, in_image_, out_row_, macs_per_output_;
  int threads_;
};

// The channel parts a ChannelSplitKernel's team splits (64 channels each), and that team for
// geometry g: the kernels that read its output by the same parts (the global pools) take the
// channels each thread wrote.
constexpr int64_t kChannelSplitPart = 64;
inline int channel_split_team(const RowConvGeometry& g, int threads) {
  const int64_t outputs = g.OH * g.OW * g.OC;
  return product_team(outputs, outputs * (g.KH * g.KW * g.C / std::max<int64_t>(1, g.G)), threads);
}

// The same conv on whole images, the team splitting the channels in parts of 64 (as
// kiln_pointwise splits its outputs): each thread computes every output row of its parts.
// Conv has channels(x, y, c0, c1), which applies the activation only where it is in registers;
// here the others are applied after, pixel by pixel.
template <class Conv>
class ChannelSplitKernel : public Kernel {
 public:
  static constexpr int64_t kPart = kChannelSplitPart;
  bool runs_in_team() const override { return true; }
  ChannelSplitKernel(Conv conv, const RowConvGeometry& g, ops::Activation act, bool act_in_registers, int64_t images,
                     int threads)
      : conv_(std::move(conv)), g_(g), act_(act), after_(!act_in_registers), images_(images), threads_(threads) {}

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const float* x = inputs[0]->data<float>();
    float* y = outputs[0]->data<float>();
    const int64_t parts = (g_.OC + kPart - 1) / kPart, pixels = g_.OH * g_.OW;
    const int threads = channel_split_team(g_, threads_);
    for (int64_t i = 0; i < images_; ++i)
      parallel_for(parts, threads, [&](int64_t p0, int64_t p1) {
        const int64_t c0 = p0 * kPart, c1 = std::min(g_.OC, p1 * kPart);
        float* yi = y + i * pixels * g_.OC;
        conv_.channels(x + i * g_.H * g_.W * g_.C, yi, c0, c1);
        if (after_)
          for (int64_t p = 0; p < pixels; ++p) apply_activation(act_, yi + p * g_.OC + c0, c1 - c0);
      });
  }

 private:
  Conv conv_;
  RowConvGeometry g_;
  ops::Activation act_;
  bool after_;
  int64_t images_;
  int threads_;
};

// How a team splits a row conv whose outputs and inputs are the same channels (a depthwise
// conv) on whole images: "rows" (each thread its output rows, as the convs around it
// split pixels), or "channels" where the conv reads a 1x1 conv whose team splits its output
// channels (as kiln_pointwise's rule splits it), so that each thread reads the channels its own
// core wrote instead of half of every pixel from the other core. `act_in_registers`: the
// conv's kernel applies its activation in registers (else it would be applied pixel by pixel).
std::string row_conv_split(const ir::Node& node, int threads, bool act_in_registers);

}  // namespace kiln::backends::cpu
