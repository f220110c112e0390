// Zeroed, 64-byte aligned memory for tensors and packed weights. From 2 MiB up a buffer is a
// mapping of its own, 2 MiB aligned and advised for transparent huge pages, because the first
// touch of fresh memory is paid per page: on virtual machines that shadow the guest's page
// tables a page fault costs microseconds, so filling weights in 4 KiB pages takes tens of times
// longer than in 2 MiB pages, and those first touches dominate a large model's session
// creation. Fresh mappings are zero already, so large buffers skip the memset too.
#pragma once
#include <cstddef>
#include <memory>

namespace kiln {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// At least `bytes` (at least 1), zeroed; the handle frees it. Throws kiln::Error when the
// memory cannot be had. Does not check the memory cap (kiln/limits.h): callers do.
std::shared_ptr<void> allocate_zeroed(size_t bytes);
// The same memory without the zeroing where it is not fresh: for a buffer whose every byte its
// writer sets (a kernel's output).
std::shared_ptr<void> allocate_uninitialized(size_t bytes);

// While one is alive (in any thread), freed buffers that are mappings of their own (2 MiB and
// more, or parts of kept ones) are kept, resident, to serve later requests of 64 KiB and more
// (zeroed with a memset, far cheaper than fresh pages' first touches) instead of
// being unmapped; the last one to end unmaps what is left. A session's creation holds one: the
// model file's bytes, freed once its weights are copied out, become the packed weights' memory
// (resnet18: 46 MB of page faults fewer).
class RecycleLargeBuffers {
 public:
  RecycleLargeBuffers();
  ~RecycleLargeBuffers();
  RecycleLargeBuffers(const RecycleLargeBuffers&) = delete;
  RecycleLargeBuffers& operator=(const RecycleLargeBuffers&) = delete;
};

// While one is alive (a session holds one for its lifetime), freed buffers that are mappings
// of their own (2 MiB and more) are kept, up to kMaxReusedBuffers of them, the oldest unmapped
// first, and serve later requests of the same page-rounded size after a memset: a run's large
// outputs (a segmentation map, say) are freed by the caller and asked for again by the next
// run, and a memset of resident memory costs a fraction of fresh pages' first touches. The last
// one to end unmaps what is kept.
class ReuseFreedBuffers {
 public:
  ReuseFreedBuffers();
  ~ReuseFreedBuffers();
  ReuseFreedBuffers(const ReuseFreedBuffers&) = delete;
  ReuseFreedBuffers& operator=(const ReuseFreedBuffers&) = delete;
};
inline constexpr size_t kMaxReusedBuffers = 8;

// Bytes kept for reuse now (for tests): by RecycleLargeBuffers scopes, and by ReuseFreedBuffers.
size_t recycled_bytes();
size_t reused_bytes();

}  // namespace kiln
