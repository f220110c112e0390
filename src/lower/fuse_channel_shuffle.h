// ShuffleNet's unit tail, Concat -> Reshape (split the channel axis into [g, C/g]) -> Transpose
// (swap them) -> Reshape back -> Slices of the channel axis, becomes one kiln.ChannelShuffle
// (src/ops/kiln_shuffle.cpp) that writes each slice straight from the concatenated inputs: one
// pass over the activation instead of five. Runs after layout assignment, which turns the NCHW
// shuffle into the same pattern on NHWC's last axis; any axis matches.
#pragma once
#include "ir/graph.h"

namespace kiln::lower {

// Returns the number of shuffles fused.
int fuse_channel_shuffle(ir::Graph& g);

}  // namespace kiln::lower
