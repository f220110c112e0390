// 64-byte aligned float buffers for packed weights that kernels read with aligned vector loads
// (with a std::vector's 16-byte alignment, vector loads split across cache lines).
#pragma once
#include "backends/packed_weights.h"
#include "ir/zeroed_memory.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <memory>

namespace kiln::backends::cpu {

// Packed weights: floats that kernels only read after building them, so copies share them.
class AlignedFloats {
 public:
  AlignedFloats() = default;
  explicit AlignedFloats(std::shared_ptr<void> mem) : mem_(std::move(mem)) {}
  float* get() const { return static_cast<float*>(mem_.get()); }

 private:
  std::shared_ptr<void> mem_;
};

// n floats, zeroed, from allocate_zeroed (ir/zeroed_memory.h: from 2 MiB up in huge pages, which
// a session's creation fills in a fraction of the time 4 KiB pages take where page faults are
// dear); throws when the allocation fails.
inline AlignedFloats aligned_floats(size_t n) {
  return AlignedFloats(allocate_zeroed(std::max<size_t>(n, 1) * sizeof(float)));
}

// n packed floats that fill() writes once, or, while a plan's stored weights are replayed, the
// stored buffer of that format (backends/packed_weights.h). `key` names the packed format.
inline AlignedFloats packed_floats(size_t n, const std::string& key, const std::function<void(float*)>& fill) {
  return AlignedFloats(packed_buffer(std::max<size_t>(n, 1) * sizeof(float), key,
                                     [&fill](void* p) { fill(static_cast<float*>(p)); }));
}

// n rounded up to whole 16-float vectors.
constexpr int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }

}  // namespace kiln::backends::cpu
