#include <cmath>
#include <limits>

#include <kiln/error.h>

#include "op_test_util.h"

namespace kiln::testing {

namespace {
using A = ir::Attribute;

Tensor iota_f(std::vector<int64_t> dims) {
  Tensor t(DType::Float, dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

// Straightforward 3-D reference over one axis, to check odd shapes.
Tensor sum_axis_3d(const Tensor& x, int axis) {
  std::vector<int64_t> d = x.dims();
  std::vector<int64_t> od = d;
  od[axis] = 1;
  Tensor y(DType::Float, od);
  for (int64_t i = 0; i < d[0]; ++i)
    for (int64_t j = 0; j < d[1]; ++j)
      for (int64_t k = 0; k < d[2]; ++k) {
        int64_t o[3] = {i, j, k};
        o[axis] = 0;
        y.data<float>()[(o[0] * od[1] + o[1]) * od[2] + o[2]] += x.data<float>()[(i * d[1] + j) * d[2] + k];
      }
  return y;
}
}  // namespace

TEST(ReduceSum, AxesInputOddShape) {
  Tensor x = random_float({3, 5, 7});
  for (int axis = 0; axis < 3; ++axis) {
    auto out = run_op({.op = "ReduceSum", .inputs = {x, Tensor::from_vector<int64_t>({1}, {axis})},
                       .constant = {false, true}});
    expect_near(out[0], sum_axis_3d(x, axis), 1e-5);
  }
}

TEST(ReduceSum, NegativeAxisNoKeepdims) {
  Tensor x = iota_f({2, 3});
  auto out = run_op({.op = "ReduceSum", .inputs = {x, Tensor::from_vector<int64_t>({1}, {-1})},
                     .attrs = {{"keepdims", A::of_int(0)}}});
  expect_near(out[0], Tensor::from_vector<float>({2}, {3, 12}));
}

TEST(ReduceSum, EmptyAxesReducesAllOrIsNoop) {
  Tensor x = iota_f({2, 3});
  auto all = run_op({.op = "ReduceSum", .inputs = {x}});
  expect_near(all[0], Tensor::from_vector<float>({1, 1}, {15}));
  auto noop = run_op({.op = "ReduceSum", .inputs = {x, Tensor::from_vector<int64_t>({0}, {})},
                      .attrs = {{"noop_with_empty_axes", A::of_int(1)}}});
  expect_near(noop[0], x);
}

TEST(ReduceSum, AttributeFormBeforeOpset13) {
  Tensor x = iota_f({2, 3});
  auto out = run_op({.op = "ReduceSum", .inputs = {x}, .attrs = {{"axes", A::of_ints({0})}}, .opset = 11});
  expect_near(out[0], Tensor::from_vector<float>({1, 3}, {3, 5, 7}));
  EXPECT_THROW(run_op({.op = "ReduceSum", .inputs = {x, Tensor::from_vector<int64_t>({1}, {0})}, .opset = 11}),
               kiln::Error);
}

TEST(ReduceSum, IntegerAndEmpty) {
  auto out = run_op({.op = "ReduceSum", .inputs = {Tensor::from_vector<int32_t>({2, 2}, {1, 2, 3, 4})},
                     .attrs = {{"keepdims", A::of_int(0)}}});
  expect_near(out[0], Tensor::scalar<int32_t>(10));
  auto empty = run_op({.op = "ReduceSum", .inputs = {Tensor(DType::Float, {2, 0}), Tensor::from_vector<int64_t>({1}, {1})}});
  expect_near(empty[0], Tensor::from_vector<float>({2, 1}, {0, 0}));
}

TEST(Reduce, AllKindsOverLastAxis) {
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, -1, 0.5f, 4});
  auto run = [&](const char* op) {
    return run_op({.op = op, .inputs = {x}, .attrs = {{"axes", A::of_ints({1})}, {"keepdims", A::of_int(0)}}})[0];
  };
  expect_near(run("ReduceMean"), Tensor::from_vector<float>({2}, {2, 3.5f / 3}));
  expect_near(run("ReduceMax"), Tensor::from_vector<float>({2}, {3, 4}));
  expect_near(run("ReduceMin"), Tensor::from_vector<float>({2}, {1, -1}));
  expect_near(run("ReduceProd"), Tensor::from_vector<float>({2}, {6, -2}));
  expect_near(run("ReduceL1"), Tensor::from_vector<float>({2}, {6, 5.5f}));
  expect_near(run("ReduceL2"), Tensor::from_vector<float>({2}, {std::sqrt(14.f), std::sqrt(17.25f)}));
  expect_near(run("ReduceSumSquare"), Tensor::from_vector<float>({2}, {14, 17.25f}));
  expect_near(run("ReduceLogSum"), Tensor::from_vector<float>({2}, {std::log(6.f), std::log(3.5f)}));
  expect_near(run("ReduceLogSumExp"),
              Tensor::from_vector<float>({2}, {std::log(std::exp(1.f) + std::exp(2.f) + std::exp(3.f)),
                                               std::log(std::exp(-1.f) + std::exp(0.5f) + std::exp(4.f))}));
}

TEST(Reduce, LogSumExpIsStableForLargeInputs) {
  Tensor x = Tensor::from_vector<float>({2}, {1000, 1000});
  auto out = run_op({.op = "ReduceLogSumExp", .inputs = {x}, .attrs = {{"keepdims", A::of_int(0)}}});
  expect_near(out[0], Tensor::scalar<float>(1000 + std::log(2.f)), 1e-3);
}

TEST(Reduce, MultipleAxesAndOpset18Input) {
  Tensor x = iota_f({2, 3, 4});
  auto out = run_op({.op = "ReduceMax", .inputs = {x, Tensor::from_vector<int64_t>({2}, {0, 2})}, .opset = 18});
  expect_near(out[0], Tensor::from_vector<float>({1, 3, 1}, {15, 19, 23}));
  auto mean = run_op({.op = "ReduceMean", .inputs = {x}, .attrs = {{"axes", A::of_ints({-1, 0})}}, .opset = 13});
  expect_near(mean[0], Tensor::from_vector<float>({1, 3, 1}, {7.5f, 11.5f, 15.5f}));
}

TEST(Reduce, EmptyReductionsFollowSpec) {
  Tensor x(DType::Float, {0, 3});
  auto run = [&](const char* op) {
    return run_op({.op = op, .inputs = {x}, .attrs = {{"axes", A::of_ints({0})}, {"keepdims", A::of_int(0)}}})[0];
  };
  const float inf = std::numeric_limits<float>::infinity();
  expect_near(run("ReduceProd"), Tensor::from_vector<float>({3}, {1, 1, 1}));
  expect_near(run("ReduceMax"), Tensor::from_vector<float>({3}, {-inf, -inf, -inf}));
  expect_near(run("ReduceMin"), Tensor::from_vector<float>({3}, {inf, inf, inf}));
  expect_near(run("ReduceLogSumExp"), Tensor::from_vector<float>({3}, {-inf, -inf, -inf}));
  expect_near(run("ReduceL2"), Tensor::from_vector<float>({3}, {0, 0, 0}));
}

TEST(Reduce, IntegerMean) {
  auto out = run_op({.op = "ReduceMean", .inputs = {Tensor::from_vector<int64_t>({2, 2}, {1, 2, 3, 6})},
                     .attrs = {{"axes", A::of_ints({1})}}});
  expect_near(out[0], Tensor::from_vector<int64_t>({2, 1}, {1, 4}));
}

TEST(Reduce, Float16) {
  Tensor x(DType::Float16, {3});
  for (int i = 0; i < 3; ++i) x.data<Float16>()[i] = Float16(static_cast<float>(i + 1));
  auto out = run_op({.op = "ReduceSum", .inputs = {x}, .attrs = {{"keepdims", A::of_int(0)}}});
  ASSERT_EQ(out[0].dtype(), DType::Float16);
  EXPECT_EQ(static_cast<float>(out[0].data<Float16>()[0]), 6.f);
}

TEST(Reduce, SymbolicShapeInference) {
  auto t = infer_op("ReduceMean", {T(DType::Float, {S("batch"), S("seq"), 256})}, {{"axes", A::of_ints({-1})}});
  EXPECT_EQ(t[0].str(), "float[batch,seq,1]");
  t = infer_op("ReduceMean", {T(DType::Float, {S("batch"), S("seq"), 256})},
               {{"axes", A::of_ints({1})}, {"keepdims", A::of_int(0)}});
  EXPECT_EQ(t[0].str(), "float[batch,256]");
  // Axes known through a constant input.
  t = infer_op("ReduceSum", {T(DType::Float, {S("b"), 4}), T(DType::Int64, {1})}, {}, 1, 13,
               {Tensor(), Tensor::from_vector<int64_t>({1}, {0})});
  EXPECT_EQ(t[0].str(), "float[1,4]");
}

TEST(Reduce, UnknownAxesInput) {
  auto t = infer_op("ReduceSum", {T(DType::Float, {S("b"), 1, 4}), T(DType::Int64, {1})});
  ASSERT_TRUE(t[0].rank_known);
  ASSERT_EQ(t[0].rank(), 3);
  EXPECT_TRUE(t[0].dims[0].is_symbolic());
  EXPECT_NE(t[0].dims[0].symbol, "b");
  EXPECT_EQ(t[0].dims[1].value, 1);
  EXPECT_TRUE(t[0].dims[2].is_symbolic());
  t = infer_op("ReduceSum", {T(DType::Float, {S("b"), 4}), T(DType::Int64, {1})}, {{"keepdims", A::of_int(0)}});
  EXPECT_FALSE(t[0].rank_known);
  t = infer_op("ReduceSum", {ir::TensorType::unranked(DType::Float)}, {{"keepdims", A::of_int(0)}});
  EXPECT_FALSE(t[0].rank_known);
}

TEST(Reduce, BadInputs) {
  Tensor x = iota_f({2, 3});
  EXPECT_THROW(run_op({.op = "ReduceMean", .inputs = {x}, .attrs = {{"axes", A::of_ints({2})}}}), kiln::Error);
  EXPECT_THROW(run_op({.op = "ReduceMean", .inputs = {x}, .attrs = {{"axes", A::of_ints({-3})}}}), kiln::Error);
  EXPECT_THROW(run_op({.op = "ReduceSum", .inputs = {x, Tensor::from_vector<float>({1}, {0})}}), kiln::Error);
  EXPECT_THROW(infer_op("ReduceSum", {T(DType::Float, {2})}, {{"axes", A::of_ints({0})}}, 1, 13), kiln::Error);
}

TEST(ArgMax, AxesKeepdimsAndLastIndex) {
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 5, 5, 7, 2, 7});
  auto out = run_op({.op = "ArgMax", .inputs = {x}, .attrs = {{"axis", A::of_int(1)}}});
  expect_near(out[0], Tensor::from_vector<int64_t>({2, 1}, {1, 0}));
  out = run_op({.op = "ArgMax", .inputs = {x},
                .attrs = {{"axis", A::of_int(-1)}, {"select_last_index", A::of_int(1)}, {"keepdims", A::of_int(0)}}});
  expect_near(out[0], Tensor::from_vector<int64_t>({2}, {2, 2}));
  out = run_op({.op = "ArgMin", .inputs = {x}});
  expect_near(out[0], Tensor::from_vector<int64_t>({1, 3}, {0, 1, 0}));
}

TEST(ArgMax, OddShapeMatchesLoop) {
  Tensor x = random_float({3, 5, 7});
  auto out = run_op({.op = "ArgMin", .inputs = {x}, .attrs = {{"axis", A::of_int(1)}, {"keepdims", A::of_int(0)}}});
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{3, 7}));
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 7; ++k) {
      int best = 0;
      for (int j = 1; j < 5; ++j)
        if (x.data<float>()[(i * 5 + j) * 7 + k] < x.data<float>()[(i * 5 + best) * 7 + k]) best = j;
      EXPECT_EQ(out[0].data<int64_t>()[i * 7 + k], best);
    }
}

TEST(ArgMax, ShapesAndErrors) {
  auto t = infer_op("ArgMax", {T(DType::Float, {S("b"), S("s"), 10})}, {{"axis", A::of_int(-1)}});
  EXPECT_EQ(t[0].str(), "int64[b,s,1]");
  EXPECT_THROW(infer_op("ArgMax", {T(DType::Float, {2, 3})}, {{"axis", A::of_int(2)}}), kiln::Error);
  EXPECT_THROW(run_op({.op = "ArgMax", .inputs = {Tensor(DType::Float, {2, 0})}, .attrs = {{"axis", A::of_int(1)}}}),
               kiln::Error);
}

}  // namespace kiln::testing

namespace kiln::testing {

// ReduceMax / ReduceMin of booleans (opset 20): any / all.
TEST(ReduceMaxMin, BooleansFromOpset20) {
  Tensor x(DType::Bool, {2, 2});
  x.data<bool>()[0] = true;
  auto mx = run_op({.op = "ReduceMax", .inputs = {x, Tensor::from_vector<int64_t>({1}, {1})},
                    .attrs = {{"keepdims", ir::Attribute::of_int(0)}}, .opset = 20, .constant = {false, true}});
  auto mn = run_op({.op = "ReduceMin", .inputs = {x, Tensor::from_vector<int64_t>({1}, {1})},
                    .attrs = {{"keepdims", ir::Attribute::of_int(0)}}, .opset = 20, .constant = {false, true}});
  ASSERT_EQ(mx[0].dtype(), DType::Bool);
  EXPECT_TRUE(mx[0].data<bool>()[0]);
  EXPECT_FALSE(mx[0].data<bool>()[1]);
  EXPECT_FALSE(mn[0].data<bool>()[0]);
  EXPECT_FALSE(mn[0].data<bool>()[1]);
}

}  // namespace kiln::testing
