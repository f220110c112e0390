#include <kiln/error.h>

#include "op_test_util.h"

namespace kiln::testing {

namespace {
using ir::Attribute;

template <typename T>
Tensor scalar_of(T v) { return Tensor::scalar<T>(v); }
}  // namespace

TEST(DynamicQuantizeLinear, MixedSignsAndPositiveOnly) {
  Tensor x = Tensor::from_vector<float>({6}, {0, 2, -3, -2.5f, 1.34f, 0.5f});
  auto out = run_op({.op = "DynamicQuantizeLinear", .inputs = {x}, .num_outputs = 3, .opset = 11});
  expect_near(out[0], Tensor::from_vector<uint8_t>({6}, {153, 255, 0, 26, 221, 179}));
  expect_near(out[1], Tensor::scalar<float>(5.f / 255.f));
  expect_near(out[2], Tensor::scalar<uint8_t>(153));
  // The range always includes 0, so an all-positive input has zero point 0.
  Tensor p = Tensor::from_vector<float>({1, 3}, {1, 2, 3});
  out = run_op({.op = "DynamicQuantizeLinear", .inputs = {p}, .num_outputs = 3});
  expect_near(out[0], Tensor::from_vector<uint8_t>({1, 3}, {85, 170, 255}));
  expect_near(out[2], Tensor::scalar<uint8_t>(0));
  // All zeros: no range at all; everything quantizes to 0 without dividing by 0.
  out = run_op({.op = "DynamicQuantizeLinear", .inputs = {Tensor(DType::Float, {3})}, .num_outputs = 3});
  expect_near(out[0], Tensor(DType::UInt8, {3}));
  auto t = infer_op("DynamicQuantizeLinear", {T(DType::Float, {S("n"), 5})}, {}, 3);
  EXPECT_EQ(t[0].str(), "uint8[n,5]");
  EXPECT_EQ(t[1].str(), "float[]");
  EXPECT_EQ(t[2].str(), "uint8[]");
  EXPECT_THROW(infer_op("DynamicQuantizeLinear", {T(DType::Double, {3})}, {}, 3), kiln::Error);
}

TEST(QLinearMatMul, OnnxExample2D) {
  Tensor a = Tensor::from_vector<uint8_t>({2, 4}, {208, 236, 0, 238, 3, 214, 255, 29});
  Tensor b = Tensor::from_vector<uint8_t>({4, 3}, {152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247});
  auto f1 = [](float v) { return Tensor::from_vector<float>({1}, {v}); };
  auto u1 = [](uint8_t v) { return Tensor::from_vector<uint8_t>({1}, {v}); };
  auto out = run_op({.op = "QLinearMatMul", .inputs = {a, f1(0.0066f), u1(113), b, f1(0.00705f), u1(114), f1(0.0107f), u1(118)}});
  expect_near(out[0], Tensor::from_vector<uint8_t>({2, 3}, {168, 115, 255, 1, 66, 151}));
}

TEST(QLinearMatMul, Int8BroadcastBatch) {
  // a [2,1,2] against b [2,2] (identity * 1): y = a * (1 * 1 / 0.5) = 2a, saturating at 127.
  Tensor a = Tensor::from_vector<int8_t>({2, 1, 2}, {1, -2, 60, 70});
  Tensor b = Tensor::from_vector<int8_t>({2, 2}, {1, 0, 0, 1});
  auto out = run_op({.op = "QLinearMatMul",
                     .inputs = {a, scalar_of(1.f), scalar_of<int8_t>(0), b, scalar_of(1.f), scalar_of<int8_t>(0),
                                scalar_of(0.5f), scalar_of<int8_t>(0)}});
  expect_near(out[0], Tensor::from_vector<int8_t>({2, 1, 2}, {2, -4, 120, 127}));
  auto t = infer_op("QLinearMatMul", {T(DType::UInt8, {S("b"), 5, 4}), T(DType::Float, {}), T(DType::UInt8, {}),
                                      T(DType::UInt8, {4, 3}), T(DType::Float, {}), T(DType::UInt8, {}),
                                      T(DType::Float, {}), T(DType::UInt8, {})});
  EXPECT_EQ(t[0].str(), "uint8[b,5,3]");
  EXPECT_THROW(infer_op("QLinearMatMul", {T(DType::UInt8, {5, 4}), T(DType::Float, {}), T(DType::UInt8, {}),
                                          T(DType::UInt8, {5, 3}), T(DType::Float, {}), T(DType::UInt8, {}),
                                          T(DType::Float, {}), T(DType::UInt8, {})}),
               kiln::Error);
  // Zero point dtype must match its operand.
  EXPECT_THROW(run_op({.op = "QLinearMatMul",
                       .inputs = {a, scalar_of(1.f), scalar_of<uint8_t>(0), b, scalar_of(1.f), scalar_of<int8_t>(0),
                                  scalar_of(0.5f), scalar_of<int8_t>(0)}}),
               kiln::Error);
}

TEST(QLinearConv, HandComputedWithBiasPadsStrides) {
  std::vector<uint8_t> xs;
  for (uint8_t i = 0; i < 9; ++i) xs.push_back(static_cast<uint8_t>(i + 10));
  Tensor x = Tensor::from_vector<uint8_t>({1, 1, 3, 3}, xs);
  Tensor w = Tensor::from_vector<uint8_t>({1, 1, 2, 2}, {1, 1, 1, 1});
  // (x - 10) conv ones = [8, 12, 20, 24]; / 2 + 5.
  std::vector<Tensor> in = {x, scalar_of(1.f), scalar_of<uint8_t>(10), w, scalar_of(1.f), scalar_of<uint8_t>(0),
                            scalar_of(2.f), scalar_of<uint8_t>(5)};
  expect_near(run_op({.op = "QLinearConv", .inputs = in})[0], Tensor::from_vector<uint8_t>({1, 1, 2, 2}, {9, 11, 15, 17}));
  in.push_back(Tensor::from_vector<int32_t>({1}, {2}));
  expect_near(run_op({.op = "QLinearConv", .inputs = in})[0], Tensor::from_vector<uint8_t>({1, 1, 2, 2}, {10, 12, 16, 18}));
  in.pop_back();
  in[6] = scalar_of(1.f);
  in[7] = scalar_of<uint8_t>(0);
  auto out = run_op({.op = "QLinearConv", .inputs = in,
                     .attrs = {{"pads", Attribute::of_ints({1, 1, 1, 1})}, {"strides", Attribute::of_ints({2, 2})}}});
  expect_near(out[0], Tensor::from_vector<uint8_t>({1, 1, 2, 2}, {0, 3, 9, 24}));
  // SAME_UPPER keeps 3x3 with stride 1 (extra pad at the end).
  out = run_op({.op = "QLinearConv", .inputs = in, .attrs = {{"auto_pad", Attribute::of_string("SAME_UPPER")}}});
  expect_near(out[0], Tensor::from_vector<uint8_t>({1, 1, 3, 3}, {8, 12, 7, 20, 24, 13, 13, 15, 8}));
}

TEST(QLinearConv, PerChannelWeightsInt8Conv1D) {
  // x int8 [1, 2, 3], w [2, 2, 1] (1x1 conv mixing channels), per-channel w scale.
  Tensor x = Tensor::from_vector<int8_t>({1, 2, 3}, {1, 2, 3, -1, -2, -3});
  Tensor w = Tensor::from_vector<int8_t>({2, 2, 1}, {2, 1, 1, -1});
  // Channel 0: 2*x0 + x1 = [1, 2, 3] * scale 1; channel 1: x0 - x1 = [2, 4, 6] * scale 0.5.
  auto out = run_op({.op = "QLinearConv",
                     .inputs = {x, scalar_of(1.f), scalar_of<int8_t>(0), w, Tensor::from_vector<float>({2}, {1.f, 0.5f}),
                                Tensor::from_vector<int8_t>({2}, {0, 0}), scalar_of(1.f), scalar_of<int8_t>(-3)}});
  expect_near(out[0], Tensor::from_vector<int8_t>({1, 2, 3}, {-2, -1, 0, -2, -1, 0}));
  auto t = infer_op("QLinearConv", {T(DType::UInt8, {S("n"), 3, 9, 9}), T(DType::Float, {}), T(DType::UInt8, {}),
                                    T(DType::UInt8, {8, 3, 3, 3}), T(DType::Float, {8}), T(DType::UInt8, {8}),
                                    T(DType::Float, {}), T(DType::UInt8, {})},
                    {{"strides", Attribute::of_ints({2, 2})}});
  EXPECT_EQ(t[0].str(), "uint8[n,8,4,4]");
  // Channel mismatch between x and w.
  Tensor w3 = Tensor::from_vector<int8_t>({2, 3, 1}, {1, 1, 1, 1, 1, 1});
  EXPECT_THROW(run_op({.op = "QLinearConv",
                       .inputs = {x, scalar_of(1.f), scalar_of<int8_t>(0), w3, scalar_of(1.f), scalar_of<int8_t>(0),
                                  scalar_of(1.f), scalar_of<int8_t>(0)}}),
               kiln::Error);
}

}  // namespace kiln::testing
