// ir::strided_copy (src/ir/strided_copy.h) on hand-worked views: transposes, slices with steps
// and negative strides, broadcasts, empty and rank-0 copies, row ranges, raw element sizes.
#include "ir/strided_copy.h"

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace kiln::ir {
namespace {

std::vector<int> iota(int n) {
  std::vector<int> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

TEST(StridedCopy, Transpose) {
  // in [2, 3] = 0 1 2 / 3 4 5; out [3, 2] reads it through strides (1, 3).
  const std::vector<int> in = iota(6);
  std::vector<int> out(6, -1);
  strided_copy(in.data(), out.data(), {3, 2}, {1, 3});
  EXPECT_EQ(out, (std::vector<int>{0, 3, 1, 4, 2, 5}));
  // A rank-3 permutation: in [2, 3, 4], perm (2, 0, 1) -> out [4, 2, 3], strides (1, 12, 4).
  const std::vector<int> in3 = iota(24);
  std::vector<int> out3(24, -1);
  strided_copy(in3.data(), out3.data(), {4, 2, 3}, {1, 12, 4});
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 3; ++c) EXPECT_EQ(out3[(a * 2 + b) * 3 + c], b * 12 + c * 4 + a);
}

TEST(StridedCopy, SliceWithStepsAndNegativeStrides) {
  // in [4, 5]; rows 1..3 step 2, columns 4 down to 0 step -2: base 1*5 + 4 = 9, strides (10, -2).
  const std::vector<int> in = iota(20);
  std::vector<int> out(6, -1);
  strided_copy(in.data(), out.data(), {2, 3}, {10, -2}, 9);
  EXPECT_EQ(out, (std::vector<int>{9, 7, 5, 19, 17, 15}));
  // A contiguous inner run (one memcpy per row) from an offset: columns 1..3 of rows 0..3.
  std::vector<int> runs(12, -1);
  strided_copy(in.data(), runs.data(), {4, 3}, {5, 1}, 1);
  EXPECT_EQ(runs, (std::vector<int>{1, 2, 3, 6, 7, 8, 11, 12, 13, 16, 17, 18}));
}

TEST(StridedCopy, BroadcastAndTile) {
  // Expand [3] to [2, 3]: stride 0 on the new axis.
  const std::vector<int> in = {7, 8, 9};
  std::vector<int> out(6, -1);
  strided_copy(in.data(), out.data(), {2, 3}, {0, 1});
  EXPECT_EQ(out, (std::vector<int>{7, 8, 9, 7, 8, 9}));
  // Each element repeated twice along the inner axis: [3, 2] with strides (1, 0).
  std::vector<int> rep(6, -1);
  strided_copy(in.data(), rep.data(), {3, 2}, {1, 0});
  EXPECT_EQ(rep, (std::vector<int>{7, 7, 8, 8, 9, 9}));
}

TEST(StridedCopy, EmptyAndRankZero) {
  const std::vector<int> in = {4, 5, 6};
  std::vector<int> out = {-1};
  strided_copy(in.data(), out.data(), {}, {}, 2);
  EXPECT_EQ(out[0], 6);
  out[0] = -1;
  strided_copy(in.data(), out.data(), {0, 3}, {3, 1});
  strided_copy(in.data(), out.data(), {3, 0}, {1, 1});
  EXPECT_EQ(out[0], -1);
}

TEST(StridedCopy, RowRangesMakeTheWholeCopy) {
  // in [3, 4, 5] seen as [5, 3, 4] (strides 1, 20, 5): 15 rows of 4, copied in uneven pieces
  // as threads would, each starting its odometer mid-way.
  const std::vector<int> in = iota(60);
  const std::vector<int64_t> dims = {5, 3, 4}, strides = {1, 20, 5};
  std::vector<int> whole(60, -1), pieces(60, -1);
  strided_copy(in.data(), whole.data(), dims, strides);
  for (int a = 0; a < 5; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 4; ++c) EXPECT_EQ(whole[(a * 3 + b) * 4 + c], a + 20 * b + 5 * c);
  for (auto [b, e] : {std::pair{0, 1}, {1, 7}, {7, 8}, {8, 14}, {14, 15}})
    strided_copy_rows(in.data(), pieces.data(), dims.data(), strides.data(), 3, 0, b, e);
  EXPECT_EQ(pieces, whole);
}

TEST(StridedCopy, StringsCopyByElement) {
  const std::vector<std::string> in = {"a", "bb", "ccc", "dddd"};
  std::vector<std::string> out(4);
  strided_copy(in.data(), out.data(), {2, 2}, {1, 2});
  EXPECT_EQ(out, (std::vector<std::string>{"a", "ccc", "bb", "dddd"}));
}

TEST(StridedCopy, RawElementSizes) {
  // Two 16-byte elements (complex128) swapped, and 2-byte ones transposed.
  const uint64_t in16[4] = {1, 2, 3, 4};
  uint64_t out16[4] = {};
  ASSERT_TRUE(strided_copy_bytes(in16, out16, {2}, {-1}, 16, 1));
  EXPECT_EQ(std::vector<uint64_t>(out16, out16 + 4), (std::vector<uint64_t>{3, 4, 1, 2}));
  const uint16_t in2[6] = {0, 1, 2, 3, 4, 5};
  uint16_t out2[6] = {};
  ASSERT_TRUE(strided_copy_bytes(in2, out2, {3, 2}, {1, 3}, 2));
  EXPECT_EQ(std::vector<uint16_t>(out2, out2 + 6), (std::vector<uint16_t>{0, 3, 1, 4, 2, 5}));
  uint8_t out3[6] = {};
  EXPECT_FALSE(strided_copy_bytes(in2, out3, {2}, {1}, 3));
  for (size_t size : {1, 2, 4, 8, 16}) {
    size_t seen = 0;
    EXPECT_TRUE(visit_elem_size(size, [&](auto tag) { seen = sizeof(tag); }));
    EXPECT_EQ(seen, size);
  }
  EXPECT_FALSE(visit_elem_size(12, [](auto) {}));
}

}  // namespace
}  // namespace kiln::ir
