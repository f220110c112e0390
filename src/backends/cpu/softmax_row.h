// The row softmax shared by the Softmax and Attention kernels (defined in softmax.cpp).
#pragma once
#include <cstdint>

namespace kiln::backends::cpu {

// y[j] = softmax over j of (x[j] * scale + (add ? add[j] : 0) + add_const), j < n; y may be x.
// In AVX-512 intrinsics where the CPU has them, else through KILN_SIMD clones local to
// softmax.cpp (declared here with KILN_SIMD, each caller would emit a resolver of its own that
// names the clones, and a shared libkiln would be left with undefined symbols).
void softmax_row(const float* x, float* y, int64_t n, float scale, const float* add, float add_const);

}  // namespace kiln::backends::cpu
