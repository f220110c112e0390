// has_avx512() (src/backends/cpu/simd.h), the one AVX-512 test the intrinsics kernels use,
// against the kernel's own view of the CPU: the avx512f flag in /proc/cpuinfo, which Linux lists
// only when the CPU has it and the OS saves its registers.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "backends/cpu/simd.h"

namespace kiln {
namespace {

TEST(Simd, HasAvx512MatchesCpuinfo) {
  std::ifstream f("/proc/cpuinfo");
  if (!f) GTEST_SKIP() << "no /proc/cpuinfo";
  std::string line;
  bool found = false, avx512f = false;
  while (std::getline(f, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    found = true;
    std::istringstream words(line.substr(line.find(':') + 1));
    for (std::string w; words >> w;) avx512f = avx512f || w == "avx512f";
    break;
  }
  if (!found) GTEST_SKIP() << "no flags line in /proc/cpuinfo";
  EXPECT_EQ(backends::cpu::has_avx512(), avx512f);
  EXPECT_EQ(backends::cpu::has_avx512(), backends::cpu::has_avx512());
}

}  // namespace
}  // namespace kiln
