#include <kiln/error.h>

#include "op_test_util.h"

namespace kiln::testing {

namespace {
ir::Attributes A(std::initializer_list<std::pair<const std::string, ir::Attribute>> l) { return ir::Attributes(l); }
Tensor I64(std::vector<int64_t> dims, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(dims, v); }
Tensor F(std::vector<int64_t> dims, std::vector<float> v) { return Tensor::from_vector<float>(dims, v); }
Tensor iota(std::vector<int64_t> dims) {
  Tensor t(DType::Float, dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}
}  // namespace

TEST(Gather, Axis0NegativeIndices) {
  Tensor x = iota({3, 2});
  auto out = run_op({.op = "Gather", .inputs = {x, I64({2, 2}, {0, -1, 1, 1})}});
  expect_near(out[0], F({2, 2, 2}, {0, 1, 4, 5, 2, 3, 2, 3}));
}

TEST(Gather, OddShapeAxis1) {
  Tensor x = iota({3, 5, 7});
  auto out = run_op({.op = "Gather", .inputs = {x, Tensor::from_vector<int32_t>({2}, {4, 0})},
                     .attrs = A({{"axis", ir::Attribute::of_int(-2)}})});
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{3, 2, 7}));
  // out[i][k][j] = x[i][idx[k]][j]
  EXPECT_EQ(out[0].data<float>()[2 * 14 + 0 * 7 + 6], 2 * 35 + 4 * 7 + 6);
  EXPECT_EQ(out[0].data<float>()[1 * 14 + 1 * 7 + 3], 1 * 35 + 0 * 7 + 3);
}

TEST(Gather, ScalarIndex) {
  auto out = run_op({.op = "Gather", .inputs = {iota({3, 4}), Tensor::scalar<int64_t>(2)}, .attrs = A({{"axis", ir::Attribute::of_int(1)}})});
  expect_near(out[0], F({3}, {2, 6, 10}));
}

TEST(Gather, OutOfRange) {
  EXPECT_THROW(run_op({.op = "Gather", .inputs = {iota({3, 2}), I64({1}, {3})}}), kiln::Error);
  EXPECT_THROW(run_op({.op = "Gather", .inputs = {iota({3, 2}), I64({1}, {-4})}}), kiln::Error);
  EXPECT_THROW(run_op({.op = "Gather", .inputs = {iota({3, 2}), I64({1}, {0})}, .attrs = A({{"axis", ir::Attribute::of_int(2)}})}),
               kiln::Error);
}

TEST(Gather, SymbolicInference) {
  auto t = infer_op("Gather", {T(DType::Float, {S("b"), 5, 7}), T(DType::Int64, {S("n"), 2})},
                    A({{"axis", ir::Attribute::of_int(1)}}));
  EXPECT_EQ(t[0].str(), "float[b,n,2,7]");
}

TEST(GatherElements, Basic) {
  Tensor x = F({2, 2}, {1, 2, 3, 4});
  auto out = run_op({.op = "GatherElements", .inputs = {x, I64({2, 2}, {0, 0, 1, 0})}, .attrs = A({{"axis", ir::Attribute::of_int(1)}})});
  expect_near(out[0], F({2, 2}, {1, 1, 4, 3}));
  out = run_op({.op = "GatherElements", .inputs = {iota({3, 3}), I64({2, 3}, {1, 2, 0, 2, 0, -1})}});
  expect_near(out[0], F({2, 3}, {3, 7, 2, 6, 1, 8}));
  EXPECT_THROW(run_op({.op = "GatherElements", .inputs = {x, I64({1, 1}, {2})}}), kiln::Error);
}

TEST(GatherND, Basic) {
  Tensor x = iota({2, 2});
  expect_near(run_op({.op = "GatherND", .inputs = {x, I64({2, 2}, {0, 0, 1, 1})}})[0], F({2}, {0, 3}));
  expect_near(run_op({.op = "GatherND", .inputs = {x, I64({2, 1}, {1, 0})}})[0], F({2, 2}, {2, 3, 0, 1}));
  // batch_dims = 1: data [2,2,2], indices [2,1] -> out [2,2]
  Tensor d = iota({2, 2, 2});
  auto out = run_op({.op = "GatherND", .inputs = {d, I64({2, 1}, {1, 0})}, .attrs = A({{"batch_dims", ir::Attribute::of_int(1)}})});
  expect_near(out[0], F({2, 2}, {2, 3, 4, 5}));
  EXPECT_THROW(run_op({.op = "GatherND", .inputs = {x, I64({1, 2}, {0, 2})}}), kiln::Error);
  auto t = infer_op("GatherND", {T(DType::Float, {S("b"), 5, 7}), T(DType::Int64, {S("n"), 1})});
  EXPECT_EQ(t[0].str(), "float[n,5,7]");
}

TEST(ScatterND, Reductions) {
  Tensor x = F({4}, {1, 2, 3, 4});
  Tensor ind = I64({2, 1}, {1, 1});
  Tensor upd = F({2}, {10, 20});
  expect_near(run_op({.op = "ScatterND", .inputs = {x, ind, upd}, .attrs = A({{"reduction", ir::Attribute::of_string("add")}})})[0],
              F({4}, {1, 32, 3, 4}));
  expect_near(run_op({.op = "ScatterND", .inputs = {x, ind, upd}, .attrs = A({{"reduction", ir::Attribute::of_string("mul")}})})[0],
              F({4}, {1, 400, 3, 4}));
  expect_near(run_op({.op = "ScatterND", .inputs = {x, I64({1, 1}, {-1}), F({1}, {9})}})[0], F({4}, {1, 2, 3, 9}));
  expect_near(x, F({4}, {1, 2, 3, 4}));  // input untouched
  EXPECT_THROW(run_op({.op = "ScatterND", .inputs = {x, I64({1, 1}, {4}), F({1}, {9})}}), kiln::Error);
  EXPECT_THROW(run_op({.op = "ScatterND", .inputs = {x, ind, upd}, .attrs = A({{"reduction", ir::Attribute::of_string("add")}}), .opset = 13}),
               kiln::Error);
}

TEST(ScatterElements, Axis1) {
  Tensor x = F({1, 5}, {1, 2, 3, 4, 5});
  auto out = run_op({.op = "ScatterElements", .inputs = {x, I64({1, 2}, {1, 3}), F({1, 2}, {1.1f, 2.1f})},
                     .attrs = A({{"axis", ir::Attribute::of_int(1)}})});
  expect_near(out[0], F({1, 5}, {1, 1.1f, 3, 2.1f, 5}));
  out = run_op({.op = "ScatterElements", .inputs = {x, I64({1, 2}, {1, 1}), F({1, 2}, {1, 2})},
                .attrs = A({{"axis", ir::Attribute::of_int(-1)}, {"reduction", ir::Attribute::of_string("add")}})});
  expect_near(out[0], F({1, 5}, {1, 5, 3, 4, 5}));
  out = run_op({.op = "Scatter", .inputs = {x, I64({1, 1}, {-1}), F({1, 1}, {7})}, .attrs = A({{"axis", ir::Attribute::of_int(1)}}), .opset = 9});
  expect_near(out[0], F({1, 5}, {1, 2, 3, 4, 7}));
  EXPECT_THROW(run_op({.op = "ScatterElements", .inputs = {x, I64({1, 1}, {5}), F({1, 1}, {7})}, .attrs = A({{"axis", ir::Attribute::of_int(1)}})}),
               kiln::Error);
}

TEST(OneHot, AxisAndNegative) {
  Tensor ind = I64({3}, {0, -1, 5});
  Tensor depth = Tensor::scalar<float>(3);
  Tensor vals = F({2}, {0, 1});
  auto out = run_op({.op = "OneHot", .inputs = {ind, depth, vals}});
  expect_near(out[0], F({3, 3}, {1, 0, 0, 0, 0, 1, 0, 0, 0}));
  out = run_op({.op = "OneHot", .inputs = {ind, depth, vals}, .attrs = A({{"axis", ir::Attribute::of_int(0)}})});
  expect_near(out[0], F({3, 3}, {1, 0, 0, 0, 0, 0, 0, 1, 0}));
  auto t = infer_op("OneHot", {T(DType::Int64, {S("b"), 2}), T(DType::Int64, {}), T(DType::Float, {2})}, A({{"axis", ir::Attribute::of_int(1)}}), 1,
                    17, {Tensor(), Tensor::scalar<int64_t>(10)});
  EXPECT_EQ(t[0].str(), "float[b,10,2]");
}

TEST(NonZero, Values) {
  Tensor x = F({2, 3}, {1, 0, 0, 0, 2, 3});
  auto out = run_op({.op = "NonZero", .inputs = {x}});
  expect_near(out[0], I64({2, 3}, {0, 1, 1, 0, 1, 2}));
  auto t = infer_op("NonZero", {T(DType::Float, {S("b"), 3})});
  EXPECT_EQ(t[0].rank(), 2);
  EXPECT_EQ(t[0].dims[0].value, 2);
  EXPECT_TRUE(t[0].dims[1].is_symbolic());
}

TEST(Compress, AxisAndFlat) {
  Tensor x = iota({3, 2});
  Tensor c = Tensor::from_vector<bool>({3}, {false, true, true});
  expect_near(run_op({.op = "Compress", .inputs = {x, c}, .attrs = A({{"axis", ir::Attribute::of_int(0)}})})[0], F({2, 2}, {2, 3, 4, 5}));
  expect_near(run_op({.op = "Compress", .inputs = {x, Tensor::from_vector<bool>({2}, {false, true})}, .attrs = A({{"axis", ir::Attribute::of_int(-1)}})})[0],
              F({3, 1}, {1, 3, 5}));
  expect_near(run_op({.op = "Compress", .inputs = {x, c}})[0], F({2}, {1, 2}));
  EXPECT_THROW(run_op({.op = "Compress", .inputs = {x, Tensor::from_vector<bool>({4}, {0, 0, 0, 1})}, .attrs = A({{"axis", ir::Attribute::of_int(0)}})}),
               kiln::Error);
}

}  // namespace kiln::testing

namespace kiln::testing {

// TensorScatter (opset 24): rows written into a cache at per-batch positions, linear or wrapping.
TEST(TensorScatter, LinearAndCircularWrites) {
  // Cache [2, 1, 4, 2] (batch, heads, seq, dim), update [2, 1, 2, 2].
  Tensor past(DType::Float, {2, 1, 4, 2});
  Tensor upd = Tensor::from_vector<float>({2, 1, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto out = run_op({.op = "TensorScatter", .inputs = {past, upd, Tensor::from_vector<int64_t>({2}, {1, 2})}, .opset = 24});
  expect_near(out[0], Tensor::from_vector<float>({2, 1, 4, 2}, {0, 0, 1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 5, 6, 7, 8}));
  out = run_op({.op = "TensorScatter", .inputs = {past, upd, Tensor::from_vector<int64_t>({2}, {3, 0})},
                .attrs = {{"mode", ir::Attribute::of_string("circular")}}, .opset = 24});
  expect_near(out[0], Tensor::from_vector<float>({2, 1, 4, 2}, {3, 4, 0, 0, 0, 0, 1, 2, 5, 6, 7, 8, 0, 0, 0, 0}));
  // No indices: from 0. Axis 1 of a 3-D cache.
  out = run_op({.op = "TensorScatter",
                .inputs = {Tensor(DType::Float, {1, 3, 1}), Tensor::from_vector<float>({1, 1, 1}, {9})},
                .attrs = {{"axis", ir::Attribute::of_int(1)}}, .opset = 24});
  expect_near(out[0], Tensor::from_vector<float>({1, 3, 1}, {9, 0, 0}));
  EXPECT_THROW(run_op({.op = "TensorScatter", .inputs = {past, upd, Tensor::from_vector<int64_t>({2}, {3, 0})}, .opset = 24}),
               kiln::Error);  // linear past the end
  EXPECT_THROW(run_op({.op = "TensorScatter", .inputs = {past, Tensor(DType::Float, {2, 1, 2, 3})}, .opset = 24}),
               kiln::Error);  // dims disagree
}

}  // namespace kiln::testing
