#include <kiln/error.h>

#include <cmath>
#include <limits>

#include "op_test_util.h"

namespace kiln::testing {

namespace {
template <typename T>
Tensor V(std::vector<int64_t> dims, std::vector<T> v) { return Tensor::from_vector<T>(std::move(dims), v); }

ir::Attributes to(DType t) { return {{"to", ir::Attribute::of_int(static_cast<int64_t>(t))}}; }

std::vector<Tensor> cast(const Tensor& x, DType t, int opset = 17) {
  return run_op({.op = "Cast", .inputs = {x}, .attrs = to(t), .opset = opset});
}
}  // namespace

TEST(Cast, FloatToInts) {
  auto x = V<float>({2, 3}, {1.9f, -1.9f, 0.f, 300.f, -1.f, 2.5f});
  auto i32 = cast(x, DType::Int32)[0];
  ASSERT_EQ(i32.dims(), (std::vector<int64_t>{2, 3}));
  std::vector<int32_t> want = {1, -1, 0, 300, -1, 2};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(i32.data<int32_t>()[i], want[i]);
  // Out-of-range values wrap like numpy's astype on x86.
  auto u8 = cast(x, DType::UInt8)[0];
  EXPECT_EQ(u8.data<uint8_t>()[3], 44);
  EXPECT_EQ(u8.data<uint8_t>()[4], 255);
  // NaN and huge values do not crash.
  auto big = cast(V<float>({2}, {NAN, 1e30f}), DType::Int64)[0];
  EXPECT_EQ(big.data<int64_t>()[0], 0);
  EXPECT_EQ(big.data<int64_t>()[1], std::numeric_limits<int64_t>::max());
}

TEST(Cast, IntsBoolAndFloats) {
  auto b = cast(V<int32_t>({3}, {0, 5, -1}), DType::Bool)[0];
  EXPECT_FALSE(b.data<bool>()[0]);
  EXPECT_TRUE(b.data<bool>()[1]);
  EXPECT_TRUE(b.data<bool>()[2]);
  auto f = cast(V<bool>({2}, {true, false}), DType::Float)[0];
  expect_near(f, V<float>({2}, {1, 0}));
  auto i8 = cast(V<int32_t>({2}, {300, -129}), DType::Int8)[0];
  EXPECT_EQ(i8.data<int8_t>()[0], 44);
  EXPECT_EQ(i8.data<int8_t>()[1], 127);
  auto d = cast(V<int64_t>({1}, {(int64_t{1} << 53) + 1}), DType::Double)[0];
  EXPECT_EQ(d.data<double>()[0], 9007199254740992.0);
}

TEST(Cast, SixteenBitFloats) {
  auto x = V<float>({4}, {1.f, 0.1f, 65504.f, 1e6f});
  auto h = cast(x, DType::Float16)[0];
  EXPECT_EQ(h.data<Float16>()[0].bits, 0x3c00);
  EXPECT_NEAR(float(h.data<Float16>()[1]), 0.1f, 1e-4);
  EXPECT_EQ(float(h.data<Float16>()[2]), 65504.f);
  EXPECT_TRUE(std::isinf(float(h.data<Float16>()[3])));
  auto bf = cast(x, DType::BFloat16)[0];
  EXPECT_EQ(bf.data<BFloat16>()[0].bits, 0x3f80);
  auto back = cast(h, DType::Double)[0];
  EXPECT_EQ(back.data<double>()[0], 1.0);
  auto hb = cast(h, DType::BFloat16)[0];
  EXPECT_EQ(float(hb.data<BFloat16>()[0]), 1.f);
}

TEST(Cast, FloatToString) {
  auto s = cast(V<float>({7}, {0.5f, 0.9767611f, 0.039187793f, 100.f, 1e-5f, -INFINITY, NAN}), DType::String)[0];
  std::vector<std::string> want = {"0.5", "0.9767611", "0.039187793", "100.0", "1e-05", "-INF", "NaN"};
  for (int i = 0; i < 7; ++i) EXPECT_EQ(s.data<std::string>()[i], want[i]);
  auto h = cast(V<Float16>({1}, {Float16(0.1f)}), DType::String)[0];
  EXPECT_EQ(h.data<std::string>()[0], "0.1");
  auto i = cast(V<int64_t>({2}, {-42, 7}), DType::String)[0];
  EXPECT_EQ(i.data<std::string>()[0], "-42");
}

TEST(Cast, StringToNumbers) {
  auto x = V<std::string>({6}, {"0.47892547", "NaN", "INF", "+INF", "-inf", "1e3"});
  auto f = cast(x, DType::Float)[0];
  expect_near(f, V<float>({6}, {0.47892547f, NAN, INFINITY, INFINITY, -INFINITY, 1000.f}));
  auto i = cast(V<std::string>({3}, {"9007199254740993", "-5", "100.5"}), DType::Int64)[0];
  EXPECT_EQ(i.data<int64_t>()[0], 9007199254740993);
  EXPECT_EQ(i.data<int64_t>()[1], -5);
  EXPECT_EQ(i.data<int64_t>()[2], 100);
  EXPECT_THROW(cast(V<std::string>({1}, {"abc"}), DType::Float), kiln::Error);
}

TEST(Cast, LegacyStringAttribute) {
  auto out = run_op({.op = "Cast", .inputs = {V<float>({1}, {2.5f})}, .attrs = {{"to", ir::Attribute::of_string("INT32")}},
                     .opset = 1});
  EXPECT_EQ(out[0].data<int32_t>()[0], 2);
}

TEST(CastLike, TakesTargetType) {
  auto out = run_op({.op = "CastLike", .inputs = {V<float>({2}, {1.5f, -2.5f}), V<double>({}, {0.0})}});
  expect_near(out[0], V<double>({2}, {1.5, -2.5}));
  auto t = infer_op("CastLike", {T(DType::Float, {S("n"), 3}), T(DType::Int8, {1})});
  EXPECT_EQ(t[0].str(), "int8[n,3]");
}

TEST(Cast, InferAndBadAttributes) {
  auto t = infer_op("Cast", {T(DType::Float, {S("batch"), 7})}, to(DType::Int64));
  EXPECT_EQ(t[0].str(), "int64[batch,7]");
  t = infer_op("Cast", {ir::TensorType::unranked(DType::Float)}, to(DType::Bool));
  EXPECT_FALSE(t[0].rank_known);
  EXPECT_EQ(t[0].dtype, DType::Bool);
  EXPECT_THROW(infer_op("Cast", {T(DType::Float, {1})}), kiln::Error);
  EXPECT_THROW(infer_op("Cast", {T(DType::Float, {1})}, {{"to", ir::Attribute::of_int(99)}}), kiln::Error);
  EXPECT_THROW(infer_op("Cast", {T(DType::Float, {1})}, {{"to", ir::Attribute::of_int(17)}}), kiln::UnsupportedError);
  EXPECT_THROW(infer_op("Cast", {T(DType::Float, {1})}, to(DType::Complex64)), kiln::UnsupportedError);
}

}  // namespace kiln::testing
