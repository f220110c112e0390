// ShuffleNet's unit tail, Concat -> Reshape (split the channel axis into [g, C/g]) -> Transpose
// (swap them) -> Reshape back -> Slices of the channel axis, becomes one kiln.ChannelShuffle
// (src/ops/kiln_shuffle.cpp) that writes each slice straight from the concatenated inputs: one
// pass over the activation instead of five. Runs after layout assignment, which turns the NCHW
// shuffle into the same pattern on NHWC's last axis; any axis matches.
#pragma once
#include <memory>

#include "ir/graph.h"
#include "lower/layout_assignment.h"
#include "passes/pass.h"

namespace kiln::lower {

// Returns the number of shuffles fused.
int fuse_channel_shuffle(ir::Graph& g);
// As a lowering pass: "channel_shuffle"; recounts stats->transposes when it fused any.
std::unique_ptr<passes::Pass> make_channel_shuffle_pass(LayoutStats* stats);

}  // namespace kiln::lower
