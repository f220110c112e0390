#include <kiln/error.h>

#include "op_test_util.h"

namespace kiln::testing {

TEST(Det, TwoByTwoAndBatched) {
  auto d = run_op({.op = "Det", .inputs = {Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4})}, .opset = 11});
  expect_near(d[0], Tensor::scalar<float>(-2));
  // A batch of [2, 3] 3x3 matrices: identity, a row swap, singular, scaled, triangular, pivot-needing.
  std::vector<float> v = {1, 0, 0, 0, 1, 0, 0, 0, 1,   // 1
                          0, 1, 0, 1, 0, 0, 0, 0, 1,   // -1
                          1, 2, 3, 4, 5, 6, 7, 8, 9,   // 0
                          2, 0, 0, 0, 3, 0, 0, 0, 4,   // 24
                          1, 5, 7, 0, 2, 9, 0, 0, 3,   // 6
                          0, 2, 1, 3, 0, 4, 1, 1, 0};  // 0*(0-4) - 2*(0-4) + 1*(3-0) = 11
  auto b = run_op({.op = "Det", .inputs = {Tensor::from_vector<float>({2, 3, 3, 3}, v)}});
  expect_near(b[0], Tensor::from_vector<float>({2, 3}, {1, -1, 0, 24, 6, 11}), 1e-5, 1e-5);
}

TEST(Det, DoubleAndEmptyMatrix) {
  auto d = run_op({.op = "Det", .inputs = {Tensor::from_vector<double>({1, 1}, {-7.5})}});
  expect_near(d[0], Tensor::scalar<double>(-7.5));
  // The determinant of a 0x0 matrix is 1.
  auto e = run_op({.op = "Det", .inputs = {Tensor(DType::Float, {3, 0, 0})}});
  expect_near(e[0], Tensor::from_vector<float>({3}, {1, 1, 1}));
  auto h = run_op({.op = "Det", .inputs = {Tensor::from_vector<Float16>({2, 2}, {Float16(2.f), Float16(1.f), Float16(1.f), Float16(3.f)})}});
  EXPECT_FLOAT_EQ(static_cast<float>(h[0].data<Float16>()[0]), 5.f);
}

TEST(Det, SymbolicInference) {
  EXPECT_EQ(infer_op("Det", {T(DType::Float, {S("b"), 7, S("m"), S("m")})})[0].str(), "float[b,7]");
  EXPECT_EQ(infer_op("Det", {T(DType::Float, {4, 4})})[0].str(), "float[]");
  EXPECT_FALSE(infer_op("Det", {ir::TensorType::unranked(DType::Float)})[0].rank_known);
}

TEST(Det, BadInputs) {
  EXPECT_THROW(infer_op("Det", {T(DType::Float, {3})}), kiln::Error);
  EXPECT_THROW(infer_op("Det", {T(DType::Float, {2, 3})}), kiln::Error);
  EXPECT_THROW(infer_op("Det", {T(DType::Int32, {2, 2})}), kiln::Error);
  EXPECT_THROW(run_op({.op = "Det", .inputs = {random_float({3, 4})}}), kiln::Error);
}

}  // namespace kiln::testing
