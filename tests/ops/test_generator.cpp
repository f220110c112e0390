#include <kiln/error.h>

#include "op_test_util.h"

namespace kiln::testing {

namespace {
ir::Attributes A(std::initializer_list<std::pair<const std::string, ir::Attribute>> l) { return ir::Attributes(l); }
Tensor I64(std::vector<int64_t> v) { return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v); }
Tensor F(std::vector<int64_t> dims, std::vector<float> v) { return Tensor::from_vector<float>(dims, v); }
}  // namespace

TEST(Constant, AllForms) {
  Tensor v = F({2}, {1.5f, 2.5f});
  expect_near(run_op({.op = "Constant", .attrs = A({{"value", ir::Attribute::of_tensor(v)}})})[0], v);
  expect_near(run_op({.op = "Constant", .attrs = A({{"value_float", ir::Attribute::of_float(3)}})})[0], Tensor::scalar<float>(3));
  expect_near(run_op({.op = "Constant", .attrs = A({{"value_ints", ir::Attribute::of_ints({1, 2, 3})}})})[0], I64({1, 2, 3}));
  expect_near(run_op({.op = "Constant", .attrs = A({{"value_int", ir::Attribute::of_int(-4)}})})[0], Tensor::scalar<int64_t>(-4));
  expect_near(run_op({.op = "Constant", .attrs = A({{"value_string", ir::Attribute::of_string("hi")}})})[0],
              Tensor::scalar<std::string>("hi"));
  EXPECT_THROW(run_op({.op = "Constant"}), kiln::Error);
  ir::Attribute sparse = ir::Attribute::of_tensor(v);
  // Should be UnsupportedError, but ShapeInference::infer_node rethrows infer errors as plain Error.
  EXPECT_THROW(run_op({.op = "Constant", .attrs = A({{"sparse_value", sparse}})}), kiln::Error);
}

TEST(ConstantOfShape, DefaultAndValue) {
  auto out = run_op({.op = "ConstantOfShape", .inputs = {I64({2, 3})}});
  expect_near(out[0], Tensor(DType::Float, {2, 3}));
  out = run_op({.op = "ConstantOfShape", .inputs = {I64({3})},
                .attrs = A({{"value", ir::Attribute::of_tensor(Tensor::from_vector<int32_t>({1}, {7}))}}), .constant = {true}});
  expect_near(out[0], Tensor::from_vector<int32_t>({3}, {7, 7, 7}));
  out = run_op({.op = "ConstantOfShape", .inputs = {I64({})}});
  EXPECT_EQ(out[0].numel(), 1);
  EXPECT_THROW(run_op({.op = "ConstantOfShape", .inputs = {I64({-1})}}), kiln::Error);
  auto t = infer_op("ConstantOfShape", {T(DType::Int64, {3})});
  EXPECT_EQ(t[0].rank(), 3);
}

TEST(Range, Types) {
  expect_near(run_op({.op = "Range", .inputs = {Tensor::scalar<float>(1), Tensor::scalar<float>(2), Tensor::scalar<float>(0.3f)}})[0],
              F({4}, {1, 1.3f, 1.6f, 1.9f}));
  expect_near(run_op({.op = "Range", .inputs = {Tensor::scalar<int32_t>(10), Tensor::scalar<int32_t>(4), Tensor::scalar<int32_t>(-3)}})[0],
              Tensor::from_vector<int32_t>({2}, {10, 7}));
  expect_near(run_op({.op = "Range", .inputs = {Tensor::scalar<int64_t>(0), Tensor::scalar<int64_t>(-3), Tensor::scalar<int64_t>(1)}})[0],
              Tensor(DType::Int64, {0}));
  expect_near(run_op({.op = "Range", .inputs = {Tensor::scalar<int16_t>(0), Tensor::scalar<int16_t>(5), Tensor::scalar<int16_t>(2)}})[0],
              Tensor::from_vector<int16_t>({3}, {0, 2, 4}));
  EXPECT_THROW(run_op({.op = "Range", .inputs = {Tensor::scalar<int64_t>(0), Tensor::scalar<int64_t>(3), Tensor::scalar<int64_t>(0)}}),
               kiln::Error);
  auto t = infer_op("Range", {T(DType::Int64, {}), T(DType::Int64, {}), T(DType::Int64, {})});
  EXPECT_EQ(t[0].rank(), 1);
  EXPECT_TRUE(t[0].dims[0].is_symbolic());
}

TEST(Random, ShapesAndRanges) {
  auto out = run_op({.op = "RandomUniform", .attrs = A({{"shape", ir::Attribute::of_ints({3, 5})}, {"low", ir::Attribute::of_float(2)},
                                                          {"high", ir::Attribute::of_float(3)}, {"seed", ir::Attribute::of_float(1)}})});
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{3, 5}));
  for (int64_t i = 0; i < 15; ++i) {
    EXPECT_GE(out[0].data<float>()[i], 2.f);
    EXPECT_LT(out[0].data<float>()[i], 3.f);
  }
  out = run_op({.op = "RandomNormalLike", .inputs = {Tensor(DType::Double, {4})}});
  EXPECT_EQ(out[0].dtype(), DType::Double);
  out = run_op({.op = "RandomNormal", .attrs = A({{"shape", ir::Attribute::of_ints({2})}, {"dtype", ir::Attribute::of_int(10)}})});
  EXPECT_EQ(out[0].dtype(), DType::Float16);
  out = run_op({.op = "Multinomial", .inputs = {F({2, 3}, {0, -100, -100, -100, -100, 0})},
                .attrs = A({{"sample_size", ir::Attribute::of_int(4)}})});
  expect_near(out[0], Tensor::from_vector<int32_t>({2, 4}, {0, 0, 0, 0, 2, 2, 2, 2}));
  out = run_op({.op = "Bernoulli", .inputs = {F({4}, {0, 1, 0, 1})}, .opset = 15});
  expect_near(out[0], F({4}, {0, 1, 0, 1}));
  EXPECT_THROW(run_op({.op = "RandomUniform"}), kiln::Error);
}

}  // namespace kiln::testing
