// What every kernel of an emitted project shares: the activation epilogues (activation.h), the
// restrict qualifier and the 16-float vector. The kernels under src/kernels/ are self-contained
// C++17: kiln copies the ones a model uses into the emitted project's kernels/ folder, where
// they build with nothing but a C++ compiler. They include no kiln header and no library header
// beyond the standard.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "activation.h"
#include "parallel.h"
#include "vector_math.h"

#define KILN_RESTRICT __restrict__

// GCC notes that passing these vectors by value would change the ABI in a file built without
// the wider registers (-Wpsabi); every function here is inline in the one file that uses it, so
// no call crosses files built with other flags. Popped at the end of the header that pushed.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace kiln_kernels {

// 16 floats as one GCC/Clang vector (a zmm register under -mavx512f, two ymm under -mavx2): for
// loops whose accumulators must stay in registers, written without intrinsics.
typedef float v16f __attribute__((vector_size(64)));
inline v16f load16(const float* p) {
  v16f v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
inline void store16(float* p, v16f v) { __builtin_memcpy(p, &v, sizeof v); }
inline v16f max16(v16f a, v16f b) { return a > b ? a : b; }
inline v16f splat16(float s) { return s - v16f{}; }  // a broadcast (s - 0 is s, -0 included)

}  // namespace kiln_kernels

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
