#include "ir/zeroed_memory.h"

#include <kiln/error.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

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

// Freed large buffers kept while a RecycleLargeBuffers is alive: [start, start + len) each, both
// multiples of 4 KiB (what a buffer takes from a kept range is its size rounded to a page, so
// the memory under the rest, resident already in huge pages, is not left idle).
struct Recycled {
  std::mutex mu;
  int scopes = 0;
  std::vector<std::pair<char*, size_t>> ranges;
};

Recycled& recycled() {
  static Recycled r;
  return r;
}

// Freed mappings kept whole while a ReuseFreedBuffers is alive, oldest first.
struct Reused {
  std::mutex mu;
  int holders = 0;
  std::deque<std::pair<char*, size_t>> buffers;
};

Reused& reused() {
  static Reused r;
  return r;
}

void release(char* p, size_t len) {
  {
    Recycled& r = recycled();
    std::lock_guard<std::mutex> lock(r.mu);
    if (r.scopes > 0) {
      r.ranges.emplace_back(p, len);
      return;
    }
  }
  std::pair<char*, size_t> evicted{nullptr, 0};
  {
    Reused& r = reused();
    std::lock_guard<std::mutex> lock(r.mu);
    if (r.holders > 0 && len >= kHugePageBytes) {
      r.buffers.emplace_back(p, len);
      if (r.buffers.size() <= kMaxReusedBuffers) return;
      evicted = r.buffers.front();
      r.buffers.pop_front();
    }
  }
  if (evicted.first) {
    ::munmap(evicted.first, evicted.second);
    return;
  }
  ::munmap(p, len);
}

std::shared_ptr<void> owned(char* p, size_t len) {
  return std::shared_ptr<void>(p, [len](void* q) { release(static_cast<char*>(q), len); });
}

// `len` bytes (a multiple of 4 KiB) from the front of the smallest kept range that holds them,
// zeroed; the rest of the range stays kept. Null when none holds them.
std::shared_ptr<void> reuse(size_t len, bool zero) {
  Recycled& r = recycled();
  char* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    auto best = r.ranges.end();
    for (auto it = r.ranges.begin(); it != r.ranges.end(); ++it)
      if (it->second >= len && (best == r.ranges.end() || it->second < best->second)) best = it;
    if (best == r.ranges.end()) return nullptr;
    p = best->first;
    // The rest stays kept (its pages are resident already: no holes).
    if (best->second > len) *best = {p + len, best->second - len};
    else r.ranges.erase(best);
  }
  if (zero) std::memset(p, 0, len);
  return owned(p, len);
}

// A kept mapping of exactly `len` bytes, zeroed, the most recently freed first; null when none.
std::shared_ptr<void> reuse_whole(size_t len, bool zero) {
  Reused& r = reused();
  char* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    for (auto it = r.buffers.rbegin(); it != r.buffers.rend(); ++it)
      if (it->second == len) {
        p = it->first;
        r.buffers.erase(std::next(it).base());
        break;
      }
  }
  if (!p) return nullptr;
  if (zero) std::memset(p, 0, len);
  return owned(p, len);
}

std::shared_ptr<void> allocate(size_t bytes, bool zero) {
  if (bytes == 0) bytes = 1;
  // Kept memory serves requests from 64 KiB (less would waste much of their last page): where
  // the weights are mostly smaller than 2 MiB (mobilenet_v2, bert), the model file's bytes
  // would otherwise stay kept beside fresh copies, raising peak RSS.
  const size_t len = (bytes + 4095) / 4096 * 4096;
  if (bytes >= (size_t{64} << 10))
    if (std::shared_ptr<void> p = reuse(len, zero)) return p;
  if (bytes >= kHugePageBytes) {
    if (std::shared_ptr<void> p = reuse_whole(len, zero)) return p;
    if (void* p = map_huge_aligned(bytes)) return owned(static_cast<char*>(p), len);
  }
  const size_t alloc = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, alloc);
  if (!p) throw Error("out of memory allocating " + std::to_string(alloc) + " bytes");
  if (zero) std::memset(p, 0, alloc);
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

}  // namespace

ReuseFreedBuffers::ReuseFreedBuffers() {
  std::lock_guard<std::mutex> lock(reused().mu);
  ++reused().holders;
}

ReuseFreedBuffers::~ReuseFreedBuffers() {
  std::deque<std::pair<char*, size_t>> left;
  {
    std::lock_guard<std::mutex> lock(reused().mu);
    if (--reused().holders == 0) left.swap(reused().buffers);
  }
  for (const auto& [p, len] : left) ::munmap(p, len);
}

size_t reused_bytes() {
  std::lock_guard<std::mutex> lock(reused().mu);
  size_t n = 0;
  for (const auto& b : reused().buffers) n += b.second;
  return n;
}

RecycleLargeBuffers::RecycleLargeBuffers() {
  std::lock_guard<std::mutex> lock(recycled().mu);
  ++recycled().scopes;
}

RecycleLargeBuffers::~RecycleLargeBuffers() {
  std::vector<std::pair<char*, size_t>> left;
  {
    std::lock_guard<std::mutex> lock(recycled().mu);
    if (--recycled().scopes == 0) left.swap(recycled().ranges);
  }
  for (const auto& [p, len] : left) ::munmap(p, len);
}

size_t recycled_bytes() {
  std::lock_guard<std::mutex> lock(recycled().mu);
  size_t n = 0;
  for (const auto& range : recycled().ranges) n += range.second;
  return n;
}

std::shared_ptr<void> allocate_zeroed(size_t bytes) { return allocate(bytes, true); }

std::shared_ptr<void> allocate_uninitialized(size_t bytes) { return allocate(bytes, false); }

}  // namespace kiln
