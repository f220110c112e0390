// The row softmax shared by the Softmax and Attention kernels (defined in softmax.cpp).
#pragma once
#include <cstdint>

#include "backends/cpu/simd.h"

namespace kiln::backends::cpu {

// y[j] = softmax over j of (x[j] * scale + (add ? add[j] : 0) + add_const), j < n; y may be x.
KILN_SIMD void softmax_row(const float* x, float* y, int64_t n, float scale, const float* add, float add_const);

}  // namespace kiln::backends::cpu
