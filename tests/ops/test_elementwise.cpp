#include <cmath>
#include <limits>

#include <kiln/error.h>

#include "op_test_util.h"

namespace kiln::testing {

namespace {
ir::Attributes attr_int(const char* name, int64_t v) { return {{name, ir::Attribute::of_int(v)}}; }

template <typename T>
Tensor V(std::vector<int64_t> dims, std::vector<T> v) { return Tensor::from_vector<T>(std::move(dims), v); }

template <typename T>
void expect_values(const Tensor& t, const std::vector<T>& want) {
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(t.data<T>()[i], want[i]) << "at " << i;
}
}  // namespace

TEST(Add, SameShape) {
  auto out = run_op({.op = "Add", .inputs = {V<float>({2, 2}, {1, 2, 3, 4}), V<float>({2, 2}, {10, 20, 30, 40})}});
  expect_near(out[0], V<float>({2, 2}, {11, 22, 33, 44}));
}

TEST(Add, ScalarEitherSide) {
  auto out = run_op({.op = "Add", .inputs = {V<int32_t>({3}, {1, 2, 3}), V<int32_t>({}, {5})}});
  expect_values<int32_t>(out[0], {6, 7, 8});
  out = run_op({.op = "Sub", .inputs = {V<int32_t>({}, {5}), V<int32_t>({3}, {1, 2, 3})}});
  expect_values<int32_t>(out[0], {4, 3, 2});
}

TEST(Add, BroadcastOddShapes) {
  // a: 3x1x7, b: 5x1 -> 3x5x7; out[i,j,k] = a[i,0,k] + b[j,0]
  Tensor a = random_float({3, 1, 7}, -1, 1, 3);
  Tensor b = random_float({5, 1}, -1, 1, 4);
  auto out = run_op({.op = "Add", .inputs = {a, b}});
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{3, 5, 7}));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j)
      for (int k = 0; k < 7; ++k)
        EXPECT_FLOAT_EQ(out[0].data<float>()[(i * 5 + j) * 7 + k], a.data<float>()[i * 7 + k] + b.data<float>()[j]);
}

TEST(Mul, BroadcastRowAgainstColumn) {
  auto out = run_op({.op = "Mul", .inputs = {V<int64_t>({3, 1}, {1, 2, 3}), V<int64_t>({1, 4}, {1, 10, 100, 1000})}});
  expect_values<int64_t>(out[0], {1, 10, 100, 1000, 2, 20, 200, 2000, 3, 30, 300, 3000});
}

TEST(Mul, Float16) {
  Tensor a = V<Float16>({2}, {Float16(1.5f), Float16(-2.f)});
  Tensor b = V<Float16>({2}, {Float16(2.f), Float16(0.25f)});
  auto out = run_op({.op = "Mul", .inputs = {a, b}});
  EXPECT_EQ(float(out[0].data<Float16>()[0]), 3.f);
  EXPECT_EQ(float(out[0].data<Float16>()[1]), -0.5f);
}

TEST(Add, SignedOverflowWraps) {
  auto out = run_op({.op = "Add", .inputs = {V<int32_t>({1}, {std::numeric_limits<int32_t>::max()}), V<int32_t>({1}, {1})}});
  expect_values<int32_t>(out[0], {std::numeric_limits<int32_t>::min()});
}

TEST(Div, IntegerTruncatesTowardZero) {
  auto out = run_op({.op = "Div", .inputs = {V<int32_t>({4}, {7, -7, 7, -7}), V<int32_t>({4}, {2, 2, -2, -2})}});
  expect_values<int32_t>(out[0], {3, -3, -3, 3});
  EXPECT_THROW(run_op({.op = "Div", .inputs = {V<int32_t>({1}, {1}), V<int32_t>({1}, {0})}}), kiln::Error);
}

TEST(Div, FloatAndUint8) {
  auto out = run_op({.op = "Div", .inputs = {V<float>({2}, {1, -3}), V<float>({2}, {4, 0})}});
  EXPECT_FLOAT_EQ(out[0].data<float>()[0], 0.25f);
  EXPECT_TRUE(std::isinf(out[0].data<float>()[1]));
  out = run_op({.op = "Div", .inputs = {V<uint8_t>({2}, {200, 7}), V<uint8_t>({2}, {3, 2})}});
  expect_values<uint8_t>(out[0], {66, 3});
}

TEST(Pow, MixedTypes) {
  auto out = run_op({.op = "Pow", .inputs = {V<float>({3}, {2, 3, 4}), V<int64_t>({3}, {2, 0, -1})}});
  expect_near(out[0], V<float>({3}, {4, 1, 0.25f}));
  out = run_op({.op = "Pow", .inputs = {V<int32_t>({3}, {2, 3, -2}), V<float>({}, {2.f})}});
  expect_values<int32_t>(out[0], {4, 9, 4});
  out = run_op({.op = "Pow", .inputs = {V<int64_t>({4}, {3, -2, 1, -1}), V<int64_t>({4}, {3, 3, -5, -3})}});
  expect_values<int64_t>(out[0], {27, -8, 1, -1});
}

TEST(Mod, IntegerPythonSemantics) {
  auto x = V<int32_t>({4}, {7, -7, 7, -7});
  auto y = V<int32_t>({4}, {3, 3, -3, -3});
  auto out = run_op({.op = "Mod", .inputs = {x, y}});
  expect_values<int32_t>(out[0], {1, 2, -2, -1});
  out = run_op({.op = "Mod", .inputs = {x, y}, .attrs = attr_int("fmod", 1)});
  expect_values<int32_t>(out[0], {1, -1, 1, -1});
  EXPECT_THROW(run_op({.op = "Mod", .inputs = {V<int32_t>({1}, {1}), V<int32_t>({1}, {0})}}), kiln::Error);
}

TEST(Mod, FloatFmod) {
  auto out = run_op({.op = "Mod", .inputs = {V<float>({2}, {-4.5f, 5.f}), V<float>({2}, {2.f, -3.f})},
                     .attrs = attr_int("fmod", 1)});
  expect_near(out[0], V<float>({2}, {-0.5f, 2.f}));
}

TEST(Variadic, SumMeanMinMax) {
  auto a = V<float>({3}, {1, 5, 3});
  auto b = V<float>({1}, {2});
  auto c = V<float>({2, 1}, {0, 10});
  auto sum = run_op({.op = "Sum", .inputs = {a, b, c}});
  expect_near(sum[0], V<float>({2, 3}, {3, 7, 5, 13, 17, 15}));
  auto mean = run_op({.op = "Mean", .inputs = {a, b, c}});
  expect_near(mean[0], V<float>({2, 3}, {1, 7.f / 3, 5.f / 3, 13.f / 3, 17.f / 3, 5}));
  auto mn = run_op({.op = "Min", .inputs = {a, b}});
  expect_near(mn[0], V<float>({3}, {1, 2, 2}));
  auto mx = run_op({.op = "Max", .inputs = {V<uint8_t>({3}, {1, 200, 3}), V<uint8_t>({3}, {4, 5, 2})}});
  expect_values<uint8_t>(mx[0], {4, 200, 3});
  auto one = run_op({.op = "Max", .inputs = {a}});
  expect_near(one[0], a);
  auto nan = run_op({.op = "Max", .inputs = {V<float>({1}, {NAN}), V<float>({1}, {1})}});
  EXPECT_TRUE(std::isnan(nan[0].data<float>()[0]));
}

TEST(Compare, BoolOutputsWithBroadcast) {
  auto a = V<int32_t>({2, 2}, {1, 2, 3, 4});
  auto b = V<int32_t>({2}, {2, 3});
  expect_values<bool>(run_op({.op = "Equal", .inputs = {a, b}})[0], {false, false, false, false});
  expect_values<bool>(run_op({.op = "Less", .inputs = {a, b}})[0], {true, true, false, false});
  expect_values<bool>(run_op({.op = "Greater", .inputs = {a, b}})[0], {false, false, true, true});
  expect_values<bool>(run_op({.op = "LessOrEqual", .inputs = {a, b}})[0], {true, true, false, false});
  expect_values<bool>(run_op({.op = "GreaterOrEqual", .inputs = {a, b}})[0], {false, false, true, true});
  expect_values<bool>(run_op({.op = "Equal", .inputs = {V<int32_t>({2}, {2, 3}), b}})[0], {true, true});
}

TEST(Logic, AndOrXorNot) {
  auto a = V<bool>({4}, {false, false, true, true});
  auto b = V<bool>({4}, {false, true, false, true});
  expect_values<bool>(run_op({.op = "And", .inputs = {a, b}})[0], {false, false, false, true});
  expect_values<bool>(run_op({.op = "Or", .inputs = {a, b}})[0], {false, true, true, true});
  expect_values<bool>(run_op({.op = "Xor", .inputs = {a, b}})[0], {false, true, true, false});
  expect_values<bool>(run_op({.op = "Not", .inputs = {a}})[0], {true, true, false, false});
  EXPECT_THROW(run_op({.op = "And", .inputs = {V<float>({1}, {1}), V<float>({1}, {1})}}), kiln::Error);
}

TEST(Bits, ShiftAndBitwise) {
  ir::Attributes left = {{"direction", ir::Attribute::of_string("LEFT")}};
  ir::Attributes right = {{"direction", ir::Attribute::of_string("RIGHT")}};
  auto x = V<uint8_t>({3}, {16, 4, 1});
  auto y = V<uint8_t>({3}, {1, 2, 9});
  expect_values<uint8_t>(run_op({.op = "BitShift", .inputs = {x, y}, .attrs = left})[0], {32, 16, 0});
  expect_values<uint8_t>(run_op({.op = "BitShift", .inputs = {x, y}, .attrs = right})[0], {8, 1, 0});
  EXPECT_THROW(run_op({.op = "BitShift", .inputs = {x, y}}), kiln::Error);
  auto a = V<int32_t>({2}, {12, -1});
  auto b = V<int32_t>({2}, {10, 5});
  expect_values<int32_t>(run_op({.op = "BitwiseAnd", .inputs = {a, b}, .opset = 18})[0], {8, 5});
  expect_values<int32_t>(run_op({.op = "BitwiseOr", .inputs = {a, b}, .opset = 18})[0], {14, -1});
  expect_values<int32_t>(run_op({.op = "BitwiseXor", .inputs = {a, b}, .opset = 18})[0], {6, -6});
  expect_values<int32_t>(run_op({.op = "BitwiseNot", .inputs = {a}, .opset = 18})[0], {-13, 0});
}

TEST(Where, ThreeWayBroadcast) {
  auto c = V<bool>({2, 1}, {true, false});
  auto x = V<float>({3}, {1, 2, 3});
  auto y = V<float>({}, {-1});
  auto out = run_op({.op = "Where", .inputs = {c, x, y}});
  expect_near(out[0], V<float>({2, 3}, {1, 2, 3, -1, -1, -1}));
  auto s = run_op({.op = "Where", .inputs = {V<bool>({2}, {false, true}), V<std::string>({2}, {"a", "b"}),
                                             V<std::string>({2}, {"c", "d"})}});
  expect_values<std::string>(s[0], {"c", "b"});
  EXPECT_THROW(run_op({.op = "Where", .inputs = {V<int32_t>({1}, {1}), x, x}}), kiln::Error);
}

TEST(Unary, MathFunctions) {
  auto x = V<float>({4}, {-1.5f, 0.f, 0.25f, 2.f});
  expect_near(run_op({.op = "Abs", .inputs = {x}})[0], V<float>({4}, {1.5f, 0, 0.25f, 2}));
  expect_near(run_op({.op = "Neg", .inputs = {x}})[0], V<float>({4}, {1.5f, 0, -0.25f, -2}));
  expect_near(run_op({.op = "Sign", .inputs = {x}})[0], V<float>({4}, {-1, 0, 1, 1}));
  expect_near(run_op({.op = "Floor", .inputs = {x}})[0], V<float>({4}, {-2, 0, 0, 2}));
  expect_near(run_op({.op = "Ceil", .inputs = {x}})[0], V<float>({4}, {-1, 0, 1, 2}));
  expect_near(run_op({.op = "Exp", .inputs = {x}})[0],
              V<float>({4}, {std::exp(-1.5f), 1, std::exp(0.25f), std::exp(2.f)}));
  expect_near(run_op({.op = "Sqrt", .inputs = {V<float>({2}, {4, 2.25f})}})[0], V<float>({2}, {2, 1.5f}));
  expect_near(run_op({.op = "Reciprocal", .inputs = {V<float>({2}, {4, -0.5f})}})[0], V<float>({2}, {0.25f, -2}));
  expect_near(run_op({.op = "Erf", .inputs = {V<double>({2}, {0, 1})}})[0], V<double>({2}, {0, std::erf(1.0)}));
  expect_near(run_op({.op = "Atanh", .inputs = {V<float>({1}, {0.5f})}})[0], V<float>({1}, {std::atanh(0.5f)}));
  expect_values<int32_t>(run_op({.op = "Abs", .inputs = {V<int32_t>({2}, {-3, 4})}})[0], {3, 4});
  expect_values<int8_t>(run_op({.op = "Sign", .inputs = {V<int8_t>({3}, {-3, 0, 4})}})[0], {-1, 0, 1});
  EXPECT_THROW(run_op({.op = "Neg", .inputs = {V<uint8_t>({1}, {1})}}), kiln::Error);
  EXPECT_THROW(run_op({.op = "Exp", .inputs = {V<int32_t>({1}, {1})}}), kiln::Error);
}

TEST(Unary, RoundHalfToEven) {
  auto out = run_op({.op = "Round", .inputs = {V<float>({6}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.7f})}});
  expect_near(out[0], V<float>({6}, {0, 2, 2, -0, -2, 3}));
}

TEST(Unary, IsNaNIsInf) {
  auto x = V<float>({4}, {NAN, INFINITY, -INFINITY, 1});
  expect_values<bool>(run_op({.op = "IsNaN", .inputs = {x}})[0], {true, false, false, false});
  expect_values<bool>(run_op({.op = "IsInf", .inputs = {x}})[0], {false, true, true, false});
  expect_values<bool>(run_op({.op = "IsInf", .inputs = {x}, .attrs = attr_int("detect_negative", 0)})[0],
                      {false, true, false, false});
  expect_values<bool>(run_op({.op = "IsInf", .inputs = {x}, .attrs = attr_int("detect_positive", 0)})[0],
                      {false, false, true, false});
}

TEST(Infer, SymbolicBroadcast) {
  auto t = infer_op("Add", {T(DType::Float, {S("batch"), 1, 7}), T(DType::Float, {5, 1})});
  EXPECT_EQ(t[0].str(), "float[batch,5,7]");
  t = infer_op("Less", {T(DType::Int64, {S("n")}), T(DType::Int64, {1})});
  EXPECT_EQ(t[0].str(), "bool[n]");
  t = infer_op("Where", {T(DType::Bool, {S("n"), 1}), T(DType::Float, {3}), T(DType::Float, {})});
  EXPECT_EQ(t[0].str(), "float[n,3]");
  t = infer_op("Pow", {T(DType::Int32, {2}), T(DType::Float, {})});
  EXPECT_EQ(t[0].str(), "int32[2]");
  t = infer_op("Exp", {ir::TensorType::unranked(DType::Float)});
  EXPECT_FALSE(t[0].rank_known);
  t = infer_op("Sum", {T(DType::Float, {S("a"), 3}), T(DType::Float, {3}), T(DType::Float, {S("a"), 1})});
  EXPECT_EQ(t[0].str(), "float[a,3]");
}

TEST(Infer, BadInputs) {
  EXPECT_THROW(infer_op("Add", {T(DType::Float, {3}), T(DType::Float, {4})}), kiln::Error);
  EXPECT_THROW(infer_op("Add", {T(DType::Float, {3}), T(DType::Int32, {3})}), kiln::Error);
  EXPECT_THROW(infer_op("Where", {T(DType::Float, {3}), T(DType::Float, {3}), T(DType::Float, {3})}), kiln::Error);
  EXPECT_THROW(infer_op("Sin", {T(DType::Int32, {3})}), kiln::Error);
  EXPECT_THROW(infer_op("Add", {T(DType::Float, {3})}), kiln::Error);
  EXPECT_THROW(run_op({.op = "Mul", .inputs = {V<float>({3}, {1, 2, 3}), V<float>({2}, {1, 2})}}), kiln::Error);
}

}  // namespace kiln::testing

namespace kiln::testing {

// Opset < 7 broadcasting with an axis: B lines up with A's dims from `axis` on.
TEST(Add, LegacyAxisBroadcast) {
  Tensor a(DType::Float, {2, 3, 2});
  Tensor b = Tensor::from_vector<float>({3}, {10, 20, 30});
  auto out = run_op({.op = "Add", .inputs = {a, b},
                     .attrs = {{"broadcast", ir::Attribute::of_int(1)}, {"axis", ir::Attribute::of_int(1)}}, .opset = 6});
  expect_near(out[0], Tensor::from_vector<float>({2, 3, 2}, {10, 10, 20, 20, 30, 30, 10, 10, 20, 20, 30, 30}));
  // The same B from opset 7 broadcasts along the last axis, which does not fit.
  EXPECT_THROW(run_op({.op = "Add", .inputs = {a, b}, .opset = 7}), kiln::Error);
  EXPECT_THROW(run_op({.op = "Add", .inputs = {a, b},
                       .attrs = {{"broadcast", ir::Attribute::of_int(1)}, {"axis", ir::Attribute::of_int(2)}}, .opset = 6}),
               kiln::Error);  // B would run past A's last axis
}

}  // namespace kiln::testing
