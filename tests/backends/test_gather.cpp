// The cpu backend's Gather against the reference kernel.
#include <kiln/error.h>

#include "one_node.h"

namespace kiln {
namespace {

using one_node::check;
using one_node::OneNode;
using one_node::random;

ir::Attributes axis(int64_t a) { return {{"axis", ir::Attribute::of_int(a)}}; }

Tensor indices(DType t, const std::vector<int64_t>& dims, const std::vector<int64_t>& v) {
  if (t == DType::Int32) {
    std::vector<int32_t> w(v.begin(), v.end());
    return Tensor::from_vector<int32_t>(dims, w);
  }
  return Tensor::from_vector<int64_t>(dims, v);
}

TEST(CpuGather, EveryAxisConstantAndRuntimeIndices) {
  const std::vector<int64_t> d{3, 5, 7, 2};
  for (int64_t a = -4; a < 4; ++a)
    for (bool constant : {true, false})
      for (DType it : {DType::Int64, DType::Int32}) {
        SCOPED_TRACE(::testing::Message() << "axis " << a << " constant " << constant << " " << dtype_name(it));
        const int64_t e = d[a < 0 ? a + 4 : a];
        Tensor idx = indices(it, {2, 2}, {0, e - 1, -1, -e});
        check(OneNode("Gather", {{random(DType::Float, d)}, {idx, constant}}, 1, axis(a)));
      }
}

TEST(CpuGather, ScalarIndexDtypesAndThreads) {
  check(OneNode("Gather", {{random(DType::Float, {5, 4})}, {indices(DType::Int64, {}, {3}), true}}, 1, axis(0)));
  check(OneNode("Gather", {{random(DType::Int64, {6})}, {indices(DType::Int64, {3}, {5, 0, 2})}}, 1, axis(0)));
  check(OneNode("Gather", {{random(DType::UInt8, {4, 6})}, {indices(DType::Int32, {3}, {5, 0, 2})}}, 1, axis(1)));
  std::vector<int64_t> many;
  for (int64_t i = 0; i < 500; ++i) many.push_back((i * 37) % 1000 - 500);
  check(OneNode("Gather", {{random(DType::Float, {1000, 256})}, {indices(DType::Int64, {500}, many)}}, 1, axis(0)),
        true, 0.f, 2);
}

// A scalar index on the outermost axis of a large tensor makes one block: two threads copy it in
// pieces of whole cache lines (a block of 64-byte lines, and one of 70,001 floats that ends mid-line).
TEST(CpuGather, OneLargeBlockSplitBetweenThreads) {
  check(OneNode("Gather", {{random(DType::Float, {3, 4, 64, 300})}, {indices(DType::Int64, {}, {1}), true}}, 1, axis(0)),
        true, 0.f, 2);
  check(OneNode("Gather", {{random(DType::Float, {3, 1, 70001})}, {indices(DType::Int64, {}, {-1}), true}}, 1, axis(0)),
        true, 0.f, 2);
  check(OneNode("Gather", {{random(DType::Float, {2, 70001})}, {indices(DType::Int32, {1}, {0})}}, 1, axis(0)), true,
        0.f, 2);
}

TEST(CpuGather, OutOfRangeRuntimeIndexThrows) {
  for (int64_t bad : {int64_t{5}, int64_t{-6}, int64_t{1} << 40}) {
    OneNode n("Gather", {{random(DType::Float, {5, 3})}, {indices(DType::Int64, {2}, {0, bad})}}, 1, axis(0));
    auto k = n.kernel();
    ASSERT_NE(k, nullptr);
    EXPECT_THROW(n.run(*k), Error) << bad;
    EXPECT_THROW(n.reference(), Error) << bad;
  }
}

TEST(CpuGather, DeclinesOutOfRangeConstantIndex) {
  check(OneNode("Gather", {{random(DType::Float, {5, 3})}, {indices(DType::Int64, {1}, {5}), true}}, 1, axis(0)),
        false);
}

}  // namespace
}  // namespace kiln
