#include <kiln/error.h>

#include <cmath>

#include "op_test_util.h"

namespace kiln::testing {

namespace {
using A = ir::Attribute;

// Softmax of a [outer, n, inner] view along n, computed the obvious way in double.
Tensor reference(const Tensor& x, int64_t outer, int64_t n, int64_t inner, bool log) {
  Tensor y(DType::Float, x.dims());
  const float* xp = x.data<float>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double s = 0;
      for (int64_t j = 0; j < n; ++j) s += std::exp(static_cast<double>(xp[(o * n + j) * inner + i]));
      for (int64_t j = 0; j < n; ++j) {
        double v = xp[(o * n + j) * inner + i];
        y.data<float>()[(o * n + j) * inner + i] = static_cast<float>(log ? v - std::log(s) : std::exp(v) / s);
      }
    }
  return y;
}
}  // namespace

TEST(Softmax, HandComputed) {
  Tensor x = Tensor::from_vector<float>({2, 2}, {0, 0, 0, std::log(3.f)});
  auto out = run_op({.op = "Softmax", .inputs = {x}});
  expect_near(out[0], Tensor::from_vector<float>({2, 2}, {0.5f, 0.5f, 0.25f, 0.75f}));
}

TEST(Softmax, Opset13SingleAxisOddShape) {
  Tensor x = random_float({3, 5, 7}, -3, 3);
  for (int axis : {0, 1, 2, -2}) {
    int a = axis < 0 ? axis + 3 : axis;
    int64_t outer = a == 0 ? 1 : (a == 1 ? 3 : 15), n = x.dim(a), inner = a == 0 ? 35 : (a == 1 ? 7 : 1);
    auto out = run_op({.op = "Softmax", .inputs = {x}, .attrs = {{"axis", A::of_int(axis)}}, .opset = 13});
    expect_near(out[0], reference(x, outer, n, inner, false));
    auto lout = run_op({.op = "LogSoftmax", .inputs = {x}, .attrs = {{"axis", A::of_int(axis)}}, .opset = 13});
    expect_near(lout[0], reference(x, outer, n, inner, true), 1e-5, 1e-5);
  }
}

TEST(Softmax, LegacyFlattensTrailingDims) {
  Tensor x = random_float({3, 5, 7}, -3, 3);
  // Default axis 1 before opset 13: normalize over 5*7 elements per batch entry.
  auto out = run_op({.op = "Softmax", .inputs = {x}, .opset = 11});
  expect_near(out[0], reference(x, 3, 35, 1, false));
  auto lout = run_op({.op = "LogSoftmax", .inputs = {x}, .attrs = {{"axis", A::of_int(-1)}}, .opset = 11});
  expect_near(lout[0], reference(x, 15, 7, 1, true));
  auto whole = run_op({.op = "Softmax", .inputs = {x}, .attrs = {{"axis", A::of_int(0)}}, .opset = 9});
  expect_near(whole[0], reference(x, 1, 105, 1, false));
}

TEST(Softmax, LargeNumbersAreStable) {
  Tensor x = Tensor::from_vector<float>({1, 3}, {10000, 10001, 10002});
  auto out = run_op({.op = "Softmax", .inputs = {x}});
  double e0 = std::exp(-2.0), e1 = std::exp(-1.0), s = e0 + e1 + 1;
  expect_near(out[0], Tensor::from_vector<float>({1, 3}, {float(e0 / s), float(e1 / s), float(1 / s)}));
  auto lout = run_op({.op = "LogSoftmax", .inputs = {x}});
  expect_near(lout[0], Tensor::from_vector<float>({1, 3}, {float(-2 - std::log(s)), float(-1 - std::log(s)),
                                                           float(-std::log(s))}));
}

TEST(Hardmax, FirstMaxWinsPerAxis) {
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 3, 3, 5, 0, -1});
  auto out = run_op({.op = "Hardmax", .inputs = {x}});
  expect_near(out[0], Tensor::from_vector<float>({2, 3}, {0, 1, 0, 1, 0, 0}));
  auto col = run_op({.op = "Hardmax", .inputs = {x}, .attrs = {{"axis", A::of_int(0)}}});
  expect_near(col[0], Tensor::from_vector<float>({2, 3}, {0, 1, 1, 1, 0, 0}));
  // Legacy axis 0 flattens everything: a single one for the whole tensor.
  auto flat = run_op({.op = "Hardmax", .inputs = {x}, .attrs = {{"axis", A::of_int(0)}}, .opset = 11});
  expect_near(flat[0], Tensor::from_vector<float>({2, 3}, {0, 0, 0, 1, 0, 0}));
}

TEST(Softmax, Double) {
  Tensor x = Tensor::from_vector<double>({2}, {0, 0});
  auto out = run_op({.op = "Softmax", .inputs = {x}});
  expect_near(out[0], Tensor::from_vector<double>({2}, {0.5, 0.5}));
}

TEST(Softmax, ShapeInference) {
  auto t = infer_op("Softmax", {T(DType::Float, {S("batch"), S("seq"), 256})});
  EXPECT_EQ(t[0].str(), "float[batch,seq,256]");
  t = infer_op("LogSoftmax", {ir::TensorType::unranked(DType::Float)});
  EXPECT_FALSE(t[0].rank_known);
}

TEST(Softmax, BadInputs) {
  EXPECT_THROW(infer_op("Softmax", {T(DType::Float, {2, 3})}, {{"axis", A::of_int(2)}}), kiln::Error);
  EXPECT_THROW(infer_op("Softmax", {T(DType::Float, {2, 3})}, {{"axis", A::of_int(-3)}}), kiln::Error);
  EXPECT_THROW(infer_op("Softmax", {T(DType::Int32, {2, 3})}), kiln::Error);
  EXPECT_THROW(infer_op("Softmax", {T(DType::Float, {2, 3})}, {{"axis", A::of_int(3)}}, 1, 11), kiln::Error);
}

}  // namespace kiln::testing
