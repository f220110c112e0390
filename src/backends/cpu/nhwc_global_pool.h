// The channels-last global pools' building block, shared with the kernels that pool what they
// have just written (conv_chain.cpp).
#pragma once
#include <cstdint>

namespace kiln::backends::cpu {

// acc[c] += x[p * C + c] over pixels p in [0, n).
void sum_pixels(const float* x, int64_t n, int64_t C, float* acc);

}  // namespace kiln::backends::cpu
