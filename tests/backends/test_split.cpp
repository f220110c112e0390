// The cpu backend's Split against the reference kernel.
#include "one_node.h"

namespace kiln {
namespace {

using one_node::check;
using one_node::ints;
using one_node::OneNode;
using one_node::random;

ir::Attributes attrs(int64_t axis, std::vector<int64_t> split = {}) {
  ir::Attributes a{{"axis", ir::Attribute::of_int(axis)}};
  if (!split.empty()) a["split"] = ir::Attribute::of_ints(split);
  return a;
}

TEST(CpuSplit, EvenOnEveryAxis) {
  for (int64_t a = -3; a < 3; ++a) {
    SCOPED_TRACE(a);
    check(OneNode("Split", {{random(DType::Float, {4, 6, 2})}}, 2, attrs(a)));
  }
}

TEST(CpuSplit, SizesFromConstantInput) {
  for (int64_t a = 0; a < 4; ++a) {
    SCOPED_TRACE(a);
    std::vector<int64_t> d{3, 5, 7, 2}, s;
    const int64_t e = d[a];
    s = {1, e - 1 - (e > 2 ? 1 : 0), e > 2 ? 1 : 0};
    check(OneNode("Split", {{random(DType::Float, d)}, {ints(s), true}}, 3, attrs(a), 13));
  }
  check(OneNode("Split", {{random(DType::Int64, {2, 9})}, {ints({0, 4, 5}), true}}, 3, attrs(1), 13));
}

TEST(CpuSplit, SizesFromAttributeBeforeOpset13) {
  check(OneNode("Split", {{random(DType::Float, {3, 5, 7})}}, 3, attrs(-1, {2, 3, 2}), 11));
  check(OneNode("Split", {{random(DType::Float, {3, 6, 7})}}, 3, attrs(1), 11));
}

TEST(CpuSplit, UnevenAtOpset18AndThreads) {
  ir::Attributes a = attrs(1);
  a["num_outputs"] = ir::Attribute::of_int(3);
  check(OneNode("Split", {{random(DType::Float, {2, 7})}}, 3, a, 18));
  check(OneNode("Split", {{random(DType::Float, {1, 232, 28, 28})}}, 2, attrs(1)), true, 0.f, 2);
}

TEST(CpuSplit, DeclinesRuntimeSizes) {
  check(OneNode("Split", {{random(DType::Float, {4, 6})}, {ints({2, 4})}}, 2, attrs(1), 13), false);
}

}  // namespace
}  // namespace kiln
