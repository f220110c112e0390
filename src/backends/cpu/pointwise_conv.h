// kiln's channels-last 1x1 convolution (pointwise_conv.cpp): written for few pixels and wide
// weights streaming from L3; inside kiln.ConvConcat also for squeezenet's expand 1x1 convs,
// writing their channel slice in place.
#pragma once
#include <cstdint>
#include <memory>

#include "backends/backend.h"

namespace kiln::backends::cpu {

// As the default kernel: up to this many pixels per image. Beyond, the weights are reused
// enough that oneDNN's blocking wins.
constexpr int64_t kMaxPixels = 256;

// The kernel for a channels-last 1x1 stride-1 FusedConv (group 1, no channel scale) of at most
// `max_pixels` pixels per image, or nullptr (also without AVX-512); `out_channels_total` > 0
// makes its output a channel slice of a tensor with that many channels.
std::unique_ptr<Kernel> make_kiln_pointwise(const ir::Node& node, int threads, int64_t out_channels_total = 0,
                                            int64_t max_pixels = kMaxPixels);

}  // namespace kiln::backends::cpu
