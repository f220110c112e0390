// The cpu backend's float comparisons against the reference kernel: each op, same-shape and
// scalar operands on either side, equal values and NaN, two threads; other broadcasts decline.
#include <limits>

#include "one_node.h"

namespace kiln {
namespace {

using one_node::check;
using one_node::In;
using one_node::OneNode;
using one_node::random;

TEST(CpuCompare, EachOpSameShapeAndScalars) {
  Tensor a = random(DType::Float, {3, 17, 5}, 1);
  Tensor b = random(DType::Float, {3, 17, 5}, 2);
  for (int64_t i = 0; i < a.numel(); i += 4) b.data<float>()[i] = a.data<float>()[i];  // equal values
  a.data<float>()[7] = std::numeric_limits<float>::quiet_NaN();
  for (const char* op : {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"}) {
    SCOPED_TRACE(op);
    check(OneNode(op, {In{a}, In{b}}, 1, {}, 16));
    check(OneNode(op, {In{a}, In{Tensor::scalar<float>(0.25f), true}}, 1, {}, 16));
    check(OneNode(op, {In{Tensor::scalar<float>(-0.5f), true}, In{b}}, 1, {}, 16));
  }
  check(OneNode("Equal", {In{random(DType::Float, {1, 128, 128, 20}, 3)}, In{random(DType::Float, {1, 128, 128, 20}, 3)}},
                1, {}, 16),
        true, 0.f, 2);
}

TEST(CpuCompare, RowBroadcastStaysOnTheReference) {
  check(OneNode("Less", {In{random(DType::Float, {4, 6})}, In{random(DType::Float, {6})}}, 1, {}, 16), false);
}

}  // namespace
}  // namespace kiln
