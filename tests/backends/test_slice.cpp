// The cpu backend's Slice against the reference kernel.
#include <limits>

#include "one_node.h"

namespace kiln {
namespace {

using one_node::check;
using one_node::In;
using one_node::ints;
using one_node::OneNode;
using one_node::random;

constexpr int64_t kBig = std::numeric_limits<int64_t>::max();

OneNode slice(DType t, const std::vector<int64_t>& dims, const std::vector<int64_t>& starts,
              const std::vector<int64_t>& ends, const std::vector<int64_t>& axes = {},
              const std::vector<int64_t>& steps = {}) {
  std::vector<In> ins{{random(t, dims)}, {ints(starts), true}, {ints(ends), true}};
  if (!axes.empty() || !steps.empty()) ins.push_back({axes.empty() ? Tensor() : ints(axes), true});
  if (!steps.empty()) ins.push_back({ints(steps), true});
  return OneNode("Slice", ins, 1, {}, 13);
}

TEST(CpuSlice, EachAxisStep1) {
  for (int64_t a = 0; a < 4; ++a) {
    SCOPED_TRACE(a);
    check(slice(DType::Float, {3, 5, 7, 2}, {1}, {2}, {a}));
    check(slice(DType::Float, {3, 5, 7, 2}, {0}, {kBig}, {a}));
  }
}

TEST(CpuSlice, NegativeAndClampedBounds) {
  check(slice(DType::Float, {3, 5, 7, 2}, {-2, -100}, {kBig, -1}, {1, 2}));
  check(slice(DType::Float, {3, 5, 7, 2}, {-1}, {-100}, {-3}, {-1}));
  check(slice(DType::Float, {3, 5, 7, 2}, {4}, {2}, {2}));  // empty
  check(slice(DType::Float, {3, 5, 7, 2}, {100}, {-kBig}, {2}, {-1}));
}

TEST(CpuSlice, Steps) {
  check(slice(DType::Float, {3, 5, 7, 2}, {0, 1}, {kBig, kBig}, {1, 2}, {2, 2}));
  check(slice(DType::Float, {3, 5, 7, 2}, {-1}, {-kBig}, {3}, {-1}));
  check(slice(DType::Float, {3, 5, 7, 2}, {kBig, 6}, {-kBig, 0}, {0, 2}, {-1, -2}));
  check(slice(DType::Float, {3, 5, 7, 2}, {0}, {kBig}, {2}, {1000}));
  check(slice(DType::Int64, {9, 11}, {1, 1}, {9, 11}, {0, 1}, {3, 2}));
  check(slice(DType::UInt8, {9, 11}, {8}, {0}, {1}, {-3}));
}

TEST(CpuSlice, AttributesBeforeOpset10) {
  ir::Attributes a{{"starts", ir::Attribute::of_ints({1, -3})},
                   {"ends", ir::Attribute::of_ints({kBig, -1})},
                   {"axes", ir::Attribute::of_ints({0, 2})}};
  check(OneNode("Slice", {{random(DType::Float, {3, 5, 7})}}, 1, a, 9));
}

TEST(CpuSlice, LargeWithThreads) {
  OneNode n("Slice", {{random(DType::Float, {1, 64, 112, 112})}, {ints({1, 1}), true}, {ints({111, 111}), true},
                      {ints({2, 3}), true}},
            1, {}, 13);
  check(n, true, 0.f, 2);
}

// Few long contiguous runs split by elements across a team: a swin window shift's Slice of an
// image's outer rows (one run), two images (two runs, 3 threads), and runs of 8-byte elements
// whose length is not a multiple of the split's unit.
TEST(CpuSlice, FewLongRunsSplitByElements) {
  for (int threads : {2, 3}) {
    SCOPED_TRACE(threads);
    check(slice(DType::Float, {1, 42, 42, 96}, {3}, {kBig}, {1}), true, 0.f, threads);
    check(slice(DType::Float, {2, 42, 42, 96}, {0}, {39}, {1}), true, 0.f, threads);
    check(slice(DType::Int64, {3, 41, 333}, {1}, {40}, {1}), true, 0.f, threads);
  }
}

TEST(CpuSlice, DeclinesRuntimeStarts) {
  check(OneNode("Slice", {{random(DType::Float, {4, 6})}, {ints({1})}, {ints({3}), true}}, 1, {}, 13), false);
}

}  // namespace
}  // namespace kiln
