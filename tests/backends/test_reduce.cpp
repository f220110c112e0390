// The cpu backend's ReduceSum/Mean/Max/Min against the reference kernel.
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

constexpr float kTol = 2e-5f;

// Axes as an input (ReduceSum from 13, the others from 18) or as an attribute (before).
OneNode reduce(const std::string& op, const Tensor& x, const std::vector<int64_t>& axes, int64_t keep, int64_t opset,
               bool noop = false) {
  ir::Attributes a{{"keepdims", ir::Attribute::of_int(keep)}};
  if (noop) a["noop_with_empty_axes"] = ir::Attribute::of_int(1);
  const bool as_input = opset >= (op == "ReduceSum" ? 13 : 18);
  std::vector<In> ins{{x}};
  if (as_input && !axes.empty()) ins.push_back({ints(axes), true});
  if (!as_input && !axes.empty()) a["axes"] = ir::Attribute::of_ints(axes);
  return OneNode(op, ins, 1, a, opset);
}

TEST(CpuReduce, FirstMiddleLastAllAxes) {
  const Tensor x = random(DType::Float, {3, 5, 7, 2});
  const std::vector<std::vector<int64_t>> sets{{0}, {1}, {2}, {3}, {-1}, {1, 2}, {2, 3}, {0, 1}, {0, 1, 2, 3}, {}};
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"})
    for (const auto& axes : sets)
      for (int64_t keep : {0, 1})
        for (int64_t opset : {13, 18}) {
          SCOPED_TRACE(::testing::Message() << op << " axes " << ::testing::PrintToString(axes) << " keepdims "
                                            << keep << " opset " << opset);
          check(reduce(op, x, axes, keep, opset), true, kTol);
        }
}

TEST(CpuReduce, LongRowsAndColumnsWithThreads) {
  // Global average pooling in both layouts, and long accumulations.
  check(reduce("ReduceMean", random(DType::Float, {1, 1024, 7, 7}), {2, 3}, 1, 13), true, kTol, 2);
  check(reduce("ReduceMean", random(DType::Float, {1, 7, 7, 1024}), {1, 2}, 0, 13), true, kTol, 2);
  check(reduce("ReduceSum", random(DType::Float, {3, 20000}), {1}, 1, 13), true, kTol);
  check(reduce("ReduceSum", random(DType::Float, {5000, 3}), {0}, 1, 13), true, kTol);
  check(reduce("ReduceMax", random(DType::Float, {2, 300, 700}), {1}, 1, 18), true, kTol, 2);
  check(reduce("ReduceSum", random(DType::Float, {512, 1000}), {1}, 0, 13), true, kTol, 2);
}

TEST(CpuReduce, NaNPropagatesThroughMax) {
  Tensor x = random(DType::Float, {4, 40});
  x.data<float>()[17] = std::numeric_limits<float>::quiet_NaN();
  x.data<float>()[3 * 40 + 39] = std::numeric_limits<float>::quiet_NaN();
  for (const char* op : {"ReduceMax", "ReduceMin"}) {
    check(reduce(op, x, {1}, 1, 13), true, kTol);
    check(reduce(op, x, {0}, 1, 13), true, kTol);
  }
}

TEST(CpuReduce, NoopWithEmptyAxesAndUnitAxes) {
  check(reduce("ReduceSum", random(DType::Float, {3, 4}), {}, 1, 13, true), true, kTol);
  check(reduce("ReduceMean", random(DType::Float, {3, 1, 4}), {1}, 0, 13), true, kTol);
}

TEST(CpuReduce, Declines) {
  check(reduce("ReduceSum", random(DType::Float, {3, 4, 5}), {0, 2}, 1, 13), false);  // two reduced groups
  check(reduce("ReduceSum", random(DType::Int64, {3, 4}), {1}, 1, 13), false);
  check(OneNode("ReduceSum", {{random(DType::Float, {3, 4})}, {ints({1})}}, 1, {}, 13), false);  // runtime axes
}

}  // namespace
}  // namespace kiln
