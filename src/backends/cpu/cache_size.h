// The running machine's cache sizes, for the kernels' blocking and split rules (sysconf; a
// default where the system does not say).
#pragma once
#include <cstdint>

namespace kiln::backends::cpu {

// One core's L1 data cache, in bytes (48 KiB when unknown).
int64_t l1d_cache_bytes();
// One core's L2, in bytes (2 MiB when unknown).
int64_t l2_cache_bytes();

}  // namespace kiln::backends::cpu
