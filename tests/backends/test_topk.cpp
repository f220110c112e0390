// The cpu backend's TopK against the reference kernel: axes, largest and smallest, K of 0, 1 and
// the whole axis, ties (lower index first), NaN (the largest value) and a long row of many
// candidates (the heap path), on one and two threads.
#include <cmath>
#include <limits>

#include "one_node.h"

namespace kiln {
namespace {

using one_node::check;
using one_node::In;
using one_node::ints;
using one_node::OneNode;
using one_node::random;

OneNode topk(Tensor x, int64_t k, int64_t axis, bool largest) {
  return OneNode("TopK", {In{std::move(x)}, In{ints({k}), true}}, 2,
                 {{"axis", ir::Attribute::of_int(axis)}, {"largest", ir::Attribute::of_int(largest ? 1 : 0)}}, 13);
}

TEST(CpuTopK, AxesAndDirections) {
  for (bool largest : {true, false})
    for (int64_t axis : {0, 1, 2, -1}) {
      SCOPED_TRACE(std::to_string(axis) + (largest ? " largest" : " smallest"));
      const std::vector<int64_t> dims{4, 9, 7};
      const int64_t n = dims[axis < 0 ? axis + 3 : axis];
      for (int64_t k : {int64_t{0}, int64_t{1}, int64_t{3}, n}) check(topk(random(DType::Float, dims), k, axis, largest));
    }
}

TEST(CpuTopK, TiesAndNaN) {
  Tensor x(DType::Float, {3, 12});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>((i * 7) % 5);  // many ties
  x.data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
  x.data<float>()[17] = std::numeric_limits<float>::quiet_NaN();
  x.data<float>()[30] = -0.0f;
  for (bool largest : {true, false})
    for (int64_t k : {1, 4, 12}) check(topk(x, k, 1, largest));
}

TEST(CpuTopK, LongRowAndTwoThreads) {
  // A detection head's scores: one row of many, K small.
  check(topk(random(DType::Float, {1, 200000}), 100, 1, true));
  check(topk(random(DType::Float, {64, 3000}), 10, 1, true), true, 0.f, 2);
  check(topk(random(DType::Float, {3000, 64}), 5, 0, false), true, 0.f, 2);
}

}  // namespace
}  // namespace kiln
