// The channels-last global pools' building block, shared with the kernels that pool what they
// have just written (conv_chain.cpp).
#pragma once
#include <cstdint>
#include <optional>

#include "ir/graph.h"

namespace kiln::backends::cpu {

// acc[c] += x[p * C + c] over pixels p in [0, n).
void sum_pixels(const float* x, int64_t n, int64_t C, float* acc);

// How a kiln.NhwcGlobal*Pool's team splits its input, as the team of the kernel that wrote it
// did, so that each thread reads what its own core wrote: the channels in parts of 64 after a
// kiln_depthwise that split its channels or a kiln_pointwise that split its outputs, the pixels
// after a producer big enough to have run on a team (kParallelMinElements outputs), one thread
// after a smaller one. Without a producer (a graph input), an image beyond one core's L2 is split
// by pixels.
struct GlobalPoolSplit {
  int team = 1;
  bool channels = false;  // else the pixels
};
GlobalPoolSplit global_pool_split(const ir::Node& pool, int threads);

}  // namespace kiln::backends::cpu
