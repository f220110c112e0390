// The cpu backend's Transpose against the reference kernel.
#include <algorithm>

#include "one_node.h"

namespace kiln {
namespace {

using one_node::check;
using one_node::OneNode;

ir::Attributes perm(const std::vector<int64_t>& p) { return {{"perm", ir::Attribute::of_ints(p)}}; }

void check_perm(DType t, const std::vector<int64_t>& dims, const std::vector<int64_t>& p, int threads = 1) {
  SCOPED_TRACE(::testing::PrintToString(dims) + " perm " + ::testing::PrintToString(p));
  check(OneNode("Transpose", {{one_node::random(t, dims)}}, 1, perm(p)), true, 0.f, threads);
}

TEST(CpuTranspose, EveryPermOfRank3) {
  std::vector<int64_t> p{0, 1, 2};
  do check_perm(DType::Float, {3, 5, 7}, p);
  while (std::next_permutation(p.begin(), p.end()));
}

TEST(CpuTranspose, EveryPermOfRank4OddShape) {
  std::vector<int64_t> p{0, 1, 2, 3};
  do check_perm(DType::Float, {3, 5, 7, 2}, p);
  while (std::next_permutation(p.begin(), p.end()));
}

TEST(CpuTranspose, LayoutChangesAndChannelShuffle) {
  check_perm(DType::Float, {1, 3, 224, 224}, {0, 2, 3, 1});
  check_perm(DType::Float, {1, 224, 224, 3}, {0, 3, 1, 2});
  check_perm(DType::Float, {1, 1024, 7, 7}, {0, 2, 3, 1});
  check_perm(DType::Float, {1, 7, 7, 1024}, {0, 3, 1, 2});
  check_perm(DType::Float, {1, 2, 58, 28, 28}, {0, 2, 1, 3, 4});
  check_perm(DType::Float, {1, 28, 28, 2, 58}, {0, 1, 2, 4, 3});  // the shuffle in NHWC: interleaves
  check_perm(DType::Float, {2, 33, 65}, {0, 2, 1}, 2);  // blocks with tails, two threads
  check_perm(DType::Float, {1, 3, 224, 224}, {0, 2, 3, 1}, 2);
  check_perm(DType::Float, {1, 224, 224, 3}, {0, 3, 1, 2}, 2);
  check_perm(DType::Float, {1, 256, 32, 32}, {0, 2, 3, 1}, 2);
}

TEST(CpuTranspose, DefaultPermNegativeAxesAndUnitDims) {
  check(OneNode("Transpose", {{one_node::random(DType::Float, {3, 5, 7})}}, 1));  // reverses the axes
  check_perm(DType::Float, {3, 1, 7, 1}, {3, 2, 1, 0});
  check_perm(DType::Float, {4, 6}, {-1, 0});
  check_perm(DType::Float, {1, 1, 1}, {2, 0, 1});
  check_perm(DType::Float, {}, {});
}

TEST(CpuTranspose, OtherDtypesByElementSize) {
  for (DType t : {DType::UInt8, DType::Float16, DType::Int32, DType::Int64, DType::Double}) {
    SCOPED_TRACE(dtype_name(t));
    check_perm(t, {3, 5, 7, 2}, {0, 3, 1, 2});
    check_perm(t, {3, 17, 19}, {2, 1, 0});
    for (int64_t k : {2, 3, 4, 5}) {  // interleaves and deinterleaves of k streams
      check_perm(t, {2, k, 1001}, {0, 2, 1});
      check_perm(t, {2, 1001, k}, {0, 2, 1});
    }
  }
}

TEST(CpuTranspose, EmptyTensor) { check_perm(DType::Float, {3, 0, 7}, {2, 1, 0}); }

TEST(CpuTranspose, Declines) {
  Tensor s(DType::String, {2, 3});
  check(OneNode("Transpose", {{s}}, 1, perm({1, 0})), false);
}

}  // namespace
}  // namespace kiln
