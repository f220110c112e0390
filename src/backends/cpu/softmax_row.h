// The row softmax shared by the Softmax and Attention kernels (defined in softmax.cpp).
#pragma once
#include <cstdint>

namespace kiln::backends::cpu {

// y[j] = softmax over j of (x[j] * scale + (add ? add[j] : 0) + add_const), j < n; y may be x.
// Only the definition carries KILN_SIMD: callers call the ifunc softmax.cpp exports. Declared
// with it, each caller would emit a resolver of its own that names the clones, which GCC keeps
// local to softmax.cpp, and a shared libkiln would be left with undefined symbols.
void softmax_row(const float* x, float* y, int64_t n, float scale, const float* add, float add_const);

}  // namespace kiln::backends::cpu
