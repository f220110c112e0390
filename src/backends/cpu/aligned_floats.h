// 64-byte aligned float buffers for packed weights that kernels read with aligned vector loads
// (a std::vector's 16-byte alignment split cache lines: kiln_winograd ran 4% slower with it).
#pragma once
#include <kiln/error.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

namespace kiln::backends::cpu {

struct FreeFloats {
  void operator()(float* p) const { std::free(p); }
};
using AlignedFloats = std::unique_ptr<float[], FreeFloats>;

// n floats, zeroed; throws when the allocation fails.
inline AlignedFloats aligned_floats(size_t n) {
  const size_t bytes = (std::max<size_t>(n, 1) * sizeof(float) + 63) / 64 * 64;
  AlignedFloats p(static_cast<float*>(std::aligned_alloc(64, bytes)));
  if (!p) throw Error("out of memory for " + std::to_string(bytes) + " bytes of packed weights");
  std::fill(p.get(), p.get() + n, 0.f);
  return p;
}

// n rounded up to whole 16-float vectors.
constexpr int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }

}  // namespace kiln::backends::cpu
