// The cpu backend's ArgMax and ArgMin against the reference kernel: every axis, keepdims,
// select_last_index on values with ties, planes longer than a work chunk, two threads.
#include "one_node.h"

namespace kiln {
namespace {

using one_node::check;
using one_node::In;
using one_node::OneNode;
using one_node::random;

OneNode arg(const std::string& op, Tensor x, int64_t axis, int64_t keepdims = 1, int64_t last = 0) {
  return OneNode(op, {In{std::move(x)}}, 1,
                 {{"axis", ir::Attribute::of_int(axis)}, {"keepdims", ir::Attribute::of_int(keepdims)},
                  {"select_last_index", ir::Attribute::of_int(last)}},
                 13);
}

// Values in {0, 1, 2, 3}: many ties.
Tensor few_values(const std::vector<int64_t>& dims) {
  Tensor t(DType::Float, dims);
  for (int64_t k = 0; k < t.numel(); ++k) t.data<float>()[k] = static_cast<float>((k * 7 + k / 5) % 4);
  return t;
}

TEST(CpuArgReduce, EveryAxisAndTies) {
  for (const char* op : {"ArgMax", "ArgMin"}) {
    SCOPED_TRACE(op);
    check(arg(op, random(DType::Float, {2, 5, 7, 3}), 1));
    check(arg(op, few_values({2, 5, 7, 3}), 1, 0, 1));
    check(arg(op, few_values({2, 5, 7, 3}), 1, 0, 0));
    check(arg(op, random(DType::Float, {4, 9}), -1));
    check(arg(op, random(DType::Float, {6, 3}), 0));
  }
}

TEST(CpuArgReduce, SegmentationHeadOnTwoThreads) {
  // 21 classes over a 48x50 image: planes longer than a work chunk.
  check(arg("ArgMax", random(DType::Float, {1, 21, 48, 50}), 1), true, 0.f, 2);
}

}  // namespace
}  // namespace kiln
