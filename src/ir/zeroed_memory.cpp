#include "ir/zeroed_memory.h"

#include <kiln/error.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace kiln {

namespace {

// A mapping of `bytes` at a huge-page boundary, or null. The slack that aligns it is unmapped
// again, so the handle owns exactly [p, p + bytes).
void* map_huge_aligned(size_t bytes) {
  const size_t len = (bytes + 4095) / 4096 * 4096;
  void* m = ::mmap(nullptr, len + kHugePageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  const uintptr_t base = reinterpret_cast<uintptr_t>(m);
  const uintptr_t at = (base + kHugePageBytes - 1) & ~(uintptr_t{kHugePageBytes} - 1);
  if (at > base) ::munmap(m, at - base);
  if (const size_t tail = base + len + kHugePageBytes - (at + len)) ::munmap(reinterpret_cast<void*>(at + len), tail);
  // Advice only: where transparent huge pages are off this fails and 4 KiB pages serve.
  ::madvise(reinterpret_cast<void*>(at), len, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(at);
}

}  // namespace

std::shared_ptr<void> allocate_zeroed(size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (bytes >= kHugePageBytes) {
    if (void* p = map_huge_aligned(bytes)) {
      const size_t len = (bytes + 4095) / 4096 * 4096;
      return std::shared_ptr<void>(p, [len](void* q) { ::munmap(q, len); });
    }
  }
  const size_t alloc = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, alloc);
  if (!p) throw Error("out of memory allocating " + std::to_string(alloc) + " bytes");
  std::memset(p, 0, alloc);
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

}  // namespace kiln
