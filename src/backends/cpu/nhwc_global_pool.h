// The channels-last global pools' building block, shared with the kernels that pool what they
// have just written (conv_chain.cpp).
#pragma once
#include <cstdint>
#include <optional>

#include "ir/graph.h"

namespace kiln::backends::cpu {

// acc[c] += x[p * C + c] over pixels p in [0, n).
void sum_pixels(const float* x, int64_t n, int64_t C, float* acc);

// The team that splits a kiln.NhwcGlobal*Pool's channels as its producer's team did (a
// kiln_depthwise that split its channels, depthwise_channel_team), or nullopt: then the pool
// splits its pixels, or runs on one thread.
std::optional<int> global_pool_channel_team(const ir::Node& pool, int threads);

}  // namespace kiln::backends::cpu
