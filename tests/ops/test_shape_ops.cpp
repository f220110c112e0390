#include <kiln/error.h>

#include "op_test_util.h"

namespace kiln::testing {

namespace {
ir::Attributes A(std::initializer_list<std::pair<const std::string, ir::Attribute>> l) { return ir::Attributes(l); }
Tensor I64(std::vector<int64_t> v) { return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v); }
Tensor iota(std::vector<int64_t> dims) {
  Tensor t(DType::Float, dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}
}  // namespace

TEST(Shape, Values) {
  auto out = run_op({.op = "Shape", .inputs = {iota({3, 5, 7})}});
  expect_near(out[0], I64({3, 5, 7}));
  out = run_op({.op = "Shape", .inputs = {iota({3, 5, 7})}, .attrs = A({{"start", ir::Attribute::of_int(-2)}}), .opset = 15});
  expect_near(out[0], I64({5, 7}));
  out = run_op({.op = "Shape", .inputs = {iota({3, 5, 7})},
                .attrs = A({{"start", ir::Attribute::of_int(1)}, {"end", ir::Attribute::of_int(-1)}}), .opset = 15});
  expect_near(out[0], I64({5}));
  out = run_op({.op = "Shape", .inputs = {iota({3, 5, 7})},
                .attrs = A({{"start", ir::Attribute::of_int(5)}, {"end", ir::Attribute::of_int(100)}}), .opset = 15});
  expect_near(out[0], Tensor(DType::Int64, {0}));
}

TEST(Shape, SymbolicInference) {
  auto t = infer_op("Shape", {T(DType::Float, {S("b"), 3, 4})});
  EXPECT_EQ(t[0].str(), "int64[3]");
  t = infer_op("Shape", {ir::TensorType::unranked(DType::Float)});
  EXPECT_EQ(t[0].rank(), 1);
  EXPECT_FALSE(t[0].dims[0].is_static());
}

TEST(Size, Value) {
  auto out = run_op({.op = "Size", .inputs = {iota({3, 5, 7})}});
  expect_near(out[0], Tensor::scalar<int64_t>(105));
  EXPECT_EQ(infer_op("Size", {T(DType::Float, {S("b"), 3})})[0].str(), "int64[]");
}

TEST(Reshape, ZeroAndMinusOne) {
  Tensor x = iota({3, 5, 7});
  auto out = run_op({.op = "Reshape", .inputs = {x, I64({0, -1})}});
  expect_near(out[0], iota({3, 35}));
  EXPECT_EQ(out[0].raw(), x.raw());  // shares the buffer
  out = run_op({.op = "Reshape", .inputs = {x, I64({-1, 7})}, .constant = {false, true}});
  expect_near(out[0], iota({15, 7}));
}

TEST(Reshape, AllowZero) {
  Tensor x(DType::Float, {0, 3});
  auto out = run_op({.op = "Reshape", .inputs = {x, I64({3, 0})}, .attrs = A({{"allowzero", ir::Attribute::of_int(1)}}),
                     .opset = 14});
  EXPECT_EQ(out[0].dims(), (std::vector<int64_t>{3, 0}));
}

TEST(Reshape, Errors) {
  EXPECT_THROW(run_op({.op = "Reshape", .inputs = {iota({3, 5}), I64({4, -1})}}), kiln::Error);
  EXPECT_THROW(run_op({.op = "Reshape", .inputs = {iota({3, 5}), I64({-1, -1})}}), kiln::Error);
  EXPECT_THROW(run_op({.op = "Reshape", .inputs = {iota({3, 5}), I64({2, 2})}}), kiln::Error);
}

TEST(Reshape, SymbolicInference) {
  auto t = infer_op("Reshape", {T(DType::Float, {S("b"), 3, 4}), T(DType::Int64, {2})}, {}, 1, 17,
                    {Tensor(), I64({0, -1})});
  EXPECT_EQ(t[0].str(), "float[b,12]");
  t = infer_op("Reshape", {T(DType::Float, {S("b"), 3, 4}), T(DType::Int64, {3})}, {}, 1, 17,
               {Tensor(), I64({-1, 4, 3})});
  EXPECT_EQ(t[0].str(), "float[b,4,3]");
  t = infer_op("Reshape", {T(DType::Float, {S("b"), 3, 4}), T(DType::Int64, {3})});
  EXPECT_EQ(t[0].rank(), 3);
  t = infer_op("Reshape", {T(DType::Float, {S("b"), 3, 4}), T(DType::Int64, {S("n")})});
  EXPECT_FALSE(t[0].rank_known);
}

TEST(Flatten, Axes) {
  Tensor x = iota({3, 5, 7});
  expect_near(run_op({.op = "Flatten", .inputs = {x}})[0], iota({3, 35}));
  expect_near(run_op({.op = "Flatten", .inputs = {x}, .attrs = A({{"axis", ir::Attribute::of_int(0)}})})[0], iota({1, 105}));
  expect_near(run_op({.op = "Flatten", .inputs = {x}, .attrs = A({{"axis", ir::Attribute::of_int(-1)}})})[0], iota({15, 7}));
  expect_near(run_op({.op = "Flatten", .inputs = {x}, .attrs = A({{"axis", ir::Attribute::of_int(3)}})})[0], iota({105, 1}));
  EXPECT_THROW(run_op({.op = "Flatten", .inputs = {x}, .attrs = A({{"axis", ir::Attribute::of_int(4)}})}), kiln::Error);
  auto t = infer_op("Flatten", {T(DType::Float, {S("b"), 3, 4})});
  EXPECT_EQ(t[0].str(), "float[b,12]");
}

TEST(Squeeze, AttrAndInput) {
  Tensor x = iota({1, 3, 1, 5});
  expect_near(run_op({.op = "Squeeze", .inputs = {x}})[0], iota({3, 5}));
  expect_near(run_op({.op = "Squeeze", .inputs = {x}, .attrs = A({{"axes", ir::Attribute::of_ints({-2})}}), .opset = 11})[0],
              iota({1, 3, 5}));
  expect_near(run_op({.op = "Squeeze", .inputs = {x, I64({0})}, .constant = {false, true}})[0], iota({3, 1, 5}));
  EXPECT_THROW(run_op({.op = "Squeeze", .inputs = {x, I64({1})}}), kiln::Error);
  auto t = infer_op("Squeeze", {T(DType::Float, {S("b"), 1, 4}), T(DType::Int64, {1})}, {}, 1, 17, {Tensor(), I64({1})});
  EXPECT_EQ(t[0].str(), "float[b,4]");
}

TEST(Unsqueeze, AttrAndInput) {
  Tensor x = iota({3, 5});
  expect_near(run_op({.op = "Unsqueeze", .inputs = {x, I64({0, -1})}})[0], iota({1, 3, 5, 1}));
  expect_near(run_op({.op = "Unsqueeze", .inputs = {x}, .attrs = A({{"axes", ir::Attribute::of_ints({1})}}), .opset = 11})[0],
              iota({3, 1, 5}));
  EXPECT_THROW(run_op({.op = "Unsqueeze", .inputs = {x, I64({0, 0})}}), kiln::Error);
  EXPECT_THROW(run_op({.op = "Unsqueeze", .inputs = {x, I64({5})}}), kiln::Error);
  auto t = infer_op("Unsqueeze", {T(DType::Float, {S("b"), 4}), T(DType::Int64, {1})}, {}, 1, 17, {Tensor(), I64({1})});
  EXPECT_EQ(t[0].str(), "float[b,1,4]");
}

TEST(Transpose, DefaultAndPerm) {
  Tensor x = iota({2, 3, 4});
  auto out = run_op({.op = "Transpose", .inputs = {x}});
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{4, 3, 2}));
  // out[k][j][i] = x[i][j][k] = i*12 + j*4 + k
  EXPECT_EQ(out[0].data<float>()[1 * 6 + 2 * 2 + 1], 1 * 12 + 2 * 4 + 1);
  out = run_op({.op = "Transpose", .inputs = {x}, .attrs = A({{"perm", ir::Attribute::of_ints({1, 0, 2})}})});
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{3, 2, 4}));
  EXPECT_EQ(out[0].data<float>()[2 * 8 + 1 * 4 + 3], 1 * 12 + 2 * 4 + 3);
  EXPECT_THROW(run_op({.op = "Transpose", .inputs = {x}, .attrs = A({{"perm", ir::Attribute::of_ints({0, 0, 1})}})}),
               kiln::Error);
  auto t = infer_op("Transpose", {T(DType::Float, {S("b"), 3, 4})}, A({{"perm", ir::Attribute::of_ints({2, 0, 1})}}));
  EXPECT_EQ(t[0].str(), "float[4,b,3]");
}

TEST(Transpose, Strings) {
  Tensor x = Tensor::from_vector<std::string>({2, 2}, {"a", "b", "c", "d"});
  auto out = run_op({.op = "Transpose", .inputs = {x}});
  expect_near(out[0], Tensor::from_vector<std::string>({2, 2}, {"a", "c", "b", "d"}));
}

TEST(Expand, Broadcast) {
  Tensor x = Tensor::from_vector<float>({3, 1}, {1, 2, 3});
  auto out = run_op({.op = "Expand", .inputs = {x, I64({2, 1, 4})}});
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(out[0].data<float>()[12 + 2 * 4 + 3], 3);
  out = run_op({.op = "Expand", .inputs = {x, I64({1})}});  // shape smaller than input
  expect_near(out[0], x);
  EXPECT_THROW(run_op({.op = "Expand", .inputs = {x, I64({2, 2})}}), kiln::Error);
  auto t = infer_op("Expand", {T(DType::Float, {S("b"), 1}), T(DType::Int64, {2})}, {}, 1, 17, {Tensor(), I64({1, 5})});
  EXPECT_EQ(t[0].str(), "float[b,5]");
}

}  // namespace kiln::testing
