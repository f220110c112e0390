#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

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

// While a ReuseFreedBuffers is alive (a session holds one), a freed mapping serves the next
// request of the same page-rounded size, zeroed, and only that; at most kMaxReusedBuffers are
// kept, the oldest unmapped first; the last holder's end unmaps them.
TEST(ZeroedMemory, FreedLargeBuffersServeTheSameSizeWhileASessionLives) {
  ASSERT_EQ(reused_bytes(), 0u);
  {
    ReuseFreedBuffers reuse;
    void* first = nullptr;
    {
      auto p = allocate_zeroed(3 * kHugePageBytes + 100);
      first = p.get();
      std::memset(p.get(), 0x5a, 3 * kHugePageBytes + 100);
    }
    const size_t len = 3 * kHugePageBytes + 4096;
    EXPECT_EQ(reused_bytes(), len);
    {
      auto other = allocate_zeroed(kHugePageBytes);  // another size: a fresh mapping
      EXPECT_NE(other.get(), first);
      EXPECT_EQ(reused_bytes(), len);
      auto same = allocate_zeroed(3 * kHugePageBytes + 4000);  // the same page count: the kept one
      EXPECT_EQ(same.get(), first);
      EXPECT_TRUE(all_zero(same.get(), 3 * kHugePageBytes + 4000));
      EXPECT_EQ(reused_bytes(), 0u);
    }
    EXPECT_EQ(reused_bytes(), len + kHugePageBytes);
    {
      std::vector<std::shared_ptr<void>> many;
      for (size_t i = 0; i < kMaxReusedBuffers + 3; ++i) many.push_back(allocate_zeroed(5 * kHugePageBytes));
    }
    EXPECT_EQ(reused_bytes(), kMaxReusedBuffers * 5 * kHugePageBytes);  // the two older ones went first
    auto small = allocate_zeroed(1 << 20);  // under 2 MiB: never kept nor served
    small.reset();
    EXPECT_EQ(reused_bytes(), kMaxReusedBuffers * 5 * kHugePageBytes);
  }
  EXPECT_EQ(reused_bytes(), 0u);
}

}  // namespace kiln::testing
