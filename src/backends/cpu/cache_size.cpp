#include "backends/cpu/cache_size.h"

#include <unistd.h>

namespace kiln::backends::cpu {

int64_t l1d_cache_bytes() {
  static const int64_t l1 = [] {
    const long bytes = sysconf(_SC_LEVEL1_DCACHE_SIZE);
    return bytes > 0 ? static_cast<int64_t>(bytes) : int64_t{48} << 10;
  }();
  return l1;
}

int64_t l2_cache_bytes() {
  static const int64_t l2 = [] {
    const long bytes = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return bytes > 0 ? static_cast<int64_t>(bytes) : int64_t{2} << 20;
  }();
  return l2;
}

}  // namespace kiln::backends::cpu
