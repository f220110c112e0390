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

// Inside a RecycleLargeBuffers, a freed large buffer serves the next request of 64 KiB or more,
// zeroed again, its front part (rounded to 4 KiB) where the request is smaller, the rest kept;
// at the scope's end what is left is unmapped.
TEST(ZeroedMemory, FreedLargeBuffersServeLaterOnesWhileRecycling) {
  ASSERT_EQ(recycled_bytes(), 0u);
  {
    RecycleLargeBuffers recycle;
    void* first = nullptr;
    {
      auto p = allocate_zeroed(4 * kHugePageBytes);
      first = p.get();
      std::memset(p.get(), 0xff, 4 * kHugePageBytes);
    }
    EXPECT_EQ(recycled_bytes(), 4 * kHugePageBytes);
    {
      auto q = allocate_zeroed(kHugePageBytes + 100);  // takes a huge page and 4 KiB
      EXPECT_EQ(q.get(), first);
      EXPECT_TRUE(all_zero(q.get(), kHugePageBytes + 100));
      EXPECT_EQ(recycled_bytes(), 3 * kHugePageBytes - 4096);
      auto r = allocate_zeroed(3 * kHugePageBytes - 4096);  // the rest, all of it
      EXPECT_EQ(static_cast<char*>(r.get()), static_cast<char*>(first) + kHugePageBytes + 4096);
      EXPECT_TRUE(all_zero(r.get(), 3 * kHugePageBytes - 4096));
      EXPECT_EQ(recycled_bytes(), 0u);
      auto small = allocate_zeroed(1000);  // under 64 KiB: never from kept memory
      EXPECT_EQ(reinterpret_cast<uintptr_t>(small.get()) % 64, 0u);
      auto fresh = allocate_zeroed(kHugePageBytes);  // nothing kept: a new mapping
      EXPECT_EQ(reinterpret_cast<uintptr_t>(fresh.get()) % kHugePageBytes, 0u);
      EXPECT_TRUE(all_zero(fresh.get(), kHugePageBytes));
    }
    EXPECT_EQ(recycled_bytes(), 5 * kHugePageBytes);
    auto mid = allocate_zeroed(64 << 10);  // from 64 KiB, kept memory serves too
    EXPECT_TRUE(all_zero(mid.get(), 64 << 10));
    EXPECT_EQ(recycled_bytes(), 5 * kHugePageBytes - (64 << 10));
  }
  EXPECT_EQ(recycled_bytes(), 0u);
  auto after = allocate_zeroed(kHugePageBytes);  // outside a scope: freed buffers are unmapped
  after.reset();
  EXPECT_EQ(recycled_bytes(), 0u);
}

}  // namespace kiln::testing
