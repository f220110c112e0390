// The cpu backend's Concat against the reference kernel.
#include "one_node.h"

namespace kiln {
namespace {

using one_node::check;
using one_node::OneNode;
using one_node::random;

ir::Attributes axis(int64_t a) { return {{"axis", ir::Attribute::of_int(a)}}; }

TEST(CpuConcat, ThreeInputsOnEveryAxis) {
  const std::vector<int64_t> base{3, 5, 7, 2};
  for (int64_t a = -4; a < 4; ++a) {
    SCOPED_TRACE(a);
    const int64_t k = a < 0 ? a + 4 : a;
    std::vector<one_node::In> ins;
    for (int64_t e : {1, 4, 2}) {
      std::vector<int64_t> d = base;
      d[k] = e;
      ins.push_back({random(DType::Float, d, static_cast<unsigned>(e))});
    }
    check(OneNode("Concat", ins, 1, axis(a)));
  }
}

TEST(CpuConcat, DtypesConstantsEmptyAndThreads) {
  check(OneNode("Concat", {{random(DType::Int64, {2, 3})}, {random(DType::Int64, {2, 5}), true}}, 1, axis(1)));
  check(OneNode("Concat", {{random(DType::UInt8, {3, 3})}, {random(DType::UInt8, {2, 3})}}, 1, axis(0)));
  check(OneNode("Concat", {{random(DType::Float, {2, 0, 4})}, {random(DType::Float, {2, 3, 4})}}, 1, axis(1)));
  check(OneNode("Concat", {{random(DType::Float, {2, 3})}}, 1, axis(0)));
  // Squeezenet's fire module, channels-last, big enough to use two threads.
  check(OneNode("Concat", {{random(DType::Float, {1, 55, 55, 64})}, {random(DType::Float, {1, 55, 55, 64})}}, 1,
                axis(3)),
        true, 0.f, 2);
}

// A copy big enough for a team splits the whole's bytes evenly, across block boundaries: a
// cyclic shift's two slices (one block each, 3 rows and 39), blocks of odd byte counts and an
// empty part in between, with 2 and 3 threads; Split the same way.
TEST(CpuConcat, ATeamSplitsTheBytesAcrossBlocks) {
  for (int threads : {2, 3}) {
    SCOPED_TRACE(threads);
    check(OneNode("Concat", {{random(DType::Float, {1, 3, 42, 96}, 1)}, {random(DType::Float, {1, 39, 42, 96}, 2)}}, 1,
                  axis(1)),
          true, 0.f, threads);
    check(OneNode("Concat",
                  {{random(DType::UInt8, {37, 3, 1001}, 3)},
                   {random(DType::UInt8, {37, 0, 1001}, 4)},
                   {random(DType::UInt8, {37, 5, 1001}, 5)}},
                  1, axis(1)),
          true, 0.f, threads);
    check(OneNode("Split", {{random(DType::Float, {1, 42, 42, 96}, 6)}, {Tensor::from_vector<int64_t>({2}, {39, 3}), true}},
                  2, axis(1)),
          true, 0.f, threads);
  }
}

TEST(CpuConcat, Declines) {
  Tensor s(DType::String, {2});
  check(OneNode("Concat", {{s}, {s}}, 1, axis(0)), false);
}

}  // namespace
}  // namespace kiln
