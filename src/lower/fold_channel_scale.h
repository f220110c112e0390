// Squeeze-excitation scales folded into the next conv: efficientnet's blocks multiply the
// depthwise conv's output X [N, H, W, C] by a per-channel scale S [1, 1, 1, C] computed in the
// same run, and only the 1x1 project conv reads the product. conv(X * S, W) = conv(X, W * S) with
// S on W's input channels, so the Mul (a pass over the whole activation, read and written) is
// replaced by scaling the conv's weights inside the run: FusedConv's fifth input S (src/ops/
// kiln_fused.cpp). Done where the activation has at least twice the weights' elements (the
// early blocks; efficientnet_b0: 8 of 16), and for 1x1 convs of at most `free_pixels` pixels,
// whose kernel multiplies each weight vector by its scale as it loads it (the cpu backend's
// kiln_pointwise_scaled): the deep blocks (14x14 and 7x7 images, wide weights) then drop their
// Mul as well.
#pragma once
#include <cstdint>

#include <memory>

#include "ir/graph.h"
#include "passes/pass.h"

namespace kiln::lower {

// 1x1 convs of at most this many pixels take a scale at no cost: the cpu backend's kiln_pointwise
// runs them and scales each weight vector as it loads it. Folding into the 28x28 and 56x56
// blocks is unmeasured.
constexpr int64_t kScaleFreePixels = 256;

// Rewrites a channels-last graph with static types; returns how many Muls were folded.
int fold_channel_scales(ir::Graph& g, int64_t free_pixels = kScaleFreePixels);
// As a lowering pass: "channel_scale"; *folded = how many Muls it folded.
std::unique_ptr<passes::Pass> make_channel_scale_pass(int* folded);

}  // namespace kiln::lower
