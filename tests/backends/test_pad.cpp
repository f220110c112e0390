// The cpu backend's Pad against the reference kernel: constant mode on every axis, fill values,
// integer and 16-bit element types, large tensors on two threads; reflect, edge and wrap (pads
// longer than the axis too); the forms it declines.
#include "one_node.h"

namespace kiln {
namespace {

using one_node::check;
using one_node::In;
using one_node::ints;
using one_node::OneNode;
using one_node::random;

OneNode pad(DType t, const std::vector<int64_t>& dims, const std::vector<int64_t>& pads, Tensor value = Tensor(),
            ir::Attributes attrs = {}, int64_t opset = 13) {
  std::vector<In> ins{{random(t, dims)}, {ints(pads), true}};
  if (value.defined()) ins.push_back({value, true});
  return OneNode("Pad", ins, 1, std::move(attrs), opset);
}

TEST(CpuPad, ZerosOnEveryAxis) {
  check(pad(DType::Float, {2, 3, 5, 4}, {0, 1, 2, 3, 1, 0, 1, 2}));
  check(pad(DType::Float, {7}, {3, 0}));
  check(pad(DType::Int64, {3, 4}, {1, 2, 0, 1}));
  check(pad(DType::Float16, {2, 5, 3}, {0, 0, 1, 1, 1, 0}));
}

TEST(CpuPad, FillValueAndTwoThreads) {
  check(pad(DType::Float, {1, 64, 65, 33}, {0, 1, 1, 0, 0, 0, 1, 0}, Tensor::scalar<float>(-3.5f)), true, 0.f, 2);
  check(pad(DType::Int32, {4, 6}, {1, 1, 1, 1}, Tensor::scalar<int32_t>(7)));
}

TEST(CpuPad, ReflectEdgeAndWrap) {
  for (const char* mode : {"reflect", "edge"}) {
    SCOPED_TRACE(mode);
    const ir::Attributes m = {{"mode", ir::Attribute::of_string(mode)}};
    check(pad(DType::Float, {2, 5, 4}, {0, 1, 1, 0, 1, 2}, Tensor(), m));
    check(pad(DType::Float, {1, 3, 6, 5}, {0, 0, 3, 2, 0, 0, 3, 2}, Tensor(), m));  // a style net's reflection pad
    check(pad(DType::Int64, {3, 2}, {2, 3, 4, 1}, Tensor(), m));                     // pads beyond the axis
    check(pad(DType::Float, {1, 32, 80, 80}, {0, 0, 2, 2, 0, 0, 2, 2}, Tensor(), m), true, 0.f, 2);
  }
  check(pad(DType::Float, {2, 5, 4}, {0, 2, 1, 0, 3, 5}, Tensor(), {{"mode", ir::Attribute::of_string("wrap")}}, 19));
}

TEST(CpuPad, CroppingAndEmptyAxesStayOnTheReference) {
  check(pad(DType::Float, {2, 5, 4}, {0, -1, 0, 0, 0, 1}), false);
  check(pad(DType::Float, {2, 0, 4}, {0, 1, 0, 0, 1, 0}, Tensor(), {{"mode", ir::Attribute::of_string("edge")}}), false);
}

}  // namespace
}  // namespace kiln
