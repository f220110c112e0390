#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "ir/zeroed_memory.h"

namespace kiln::testing {

namespace {
bool all_zero(const void* p, size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i)
    if (b[i]) return false;
  return true;
}
}  // namespace

TEST(ZeroedMemory, SmallBuffersAreZeroedAndCacheLineAligned) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{63}, size_t{4096}, kHugePageBytes - 1}) {
    auto p = allocate_zeroed(n);
    ASSERT_NE(p.get(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p.get()) % 64, 0u) << n;
    EXPECT_TRUE(all_zero(p.get(), n)) << n;
  }
}

TEST(ZeroedMemory, LargeBuffersStartOnAHugePageAndAreWritableToTheirEnd) {
  for (size_t n : {kHugePageBytes, kHugePageBytes + 12345, 3 * kHugePageBytes}) {
    auto p = allocate_zeroed(n);
    ASSERT_NE(p.get(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p.get()) % kHugePageBytes, 0u) << n;
    EXPECT_TRUE(all_zero(p.get(), n)) << n;
    std::memset(p.get(), 0xab, n);  // the whole range is mapped (ASan and a fault would catch less)
    EXPECT_EQ(static_cast<unsigned char*>(p.get())[n - 1], 0xab);
  }
}

TEST(ZeroedMemory, FreedLargeBuffersComeBackZeroed) {
  for (int i = 0; i < 3; ++i) {
    auto p = allocate_zeroed(2 * kHugePageBytes);
    EXPECT_TRUE(all_zero(p.get(), 2 * kHugePageBytes));
    std::memset(p.get(), 0xff, 2 * kHugePageBytes);
  }
}

}  // namespace kiln::testing
