// The run arena: any size a plan names (a loaded plan's arena need not be a multiple of the
// alignment), 64-byte aligned.
#include <gtest/gtest.h>

#include <cstdint>

#include "runtime/program_executor.h"

namespace kiln::testing {

TEST(Arena, AnySizeIsAllocatedAligned) {
  for (int64_t bytes : {int64_t{1}, int64_t{5}, int64_t{63}, int64_t{64}, int64_t{65}, int64_t{4097}}) {
    runtime::Arena a(bytes);
    EXPECT_EQ(a.size(), bytes);
    ASSERT_NE(a.data(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % 64, 0u);
    a.data()[bytes - 1] = std::byte{1};  // the whole range is usable
    EXPECT_TRUE(a.contains(a.data() + bytes - 1));
    EXPECT_FALSE(a.contains(a.data() + bytes));
  }
  EXPECT_EQ(runtime::Arena(0).data(), nullptr);
}

}  // namespace kiln::testing
