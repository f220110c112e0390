// A per-thread scratch buffer: the activations a oneDNN primitive wants in its own layout, a conv
// chain's line buffers. One buffer per thread, grown to the largest request and reused, since
// the kernels that take it run one at a time on a thread and hold it only for their call.
// A kernel that runs others in between (kiln.ConvConcat's branches, whose steps pass their
// results along in scratch while each step may take slot 0 for itself) uses the other slots.
#pragma once
#include <cstddef>
#include <cstdlib>

namespace kiln_kernels {

constexpr int kThreadScratchSlots = 3;

// The calling thread's buffer `slot` (0 to kThreadScratchSlots - 1) of at least `bytes`, 64-byte
// aligned; null when it cannot be had.
inline void* thread_scratch(size_t bytes, int slot = 0) {
  struct Buf {
    void* p = nullptr;
    size_t n = 0;
    ~Buf() { std::free(p); }
  };
  thread_local Buf bufs[kThreadScratchSlots];
  Buf& buf = bufs[slot];
  if (buf.n < bytes) {
    std::free(buf.p);
    buf.n = (bytes + 4095) / 4096 * 4096;
    buf.p = std::aligned_alloc(64, buf.n);
    if (!buf.p) buf.n = 0;
  }
  return buf.p;
}

}  // namespace kiln_kernels
