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
  t = infer_op("Cast", {T(DType::Float, {2})}, to(DType::Float8E4M3FN));
  EXPECT_EQ(t[0].str(), "float8e4m3fn[2]");
  EXPECT_THROW(infer_op("Cast", {T(DType::Float, {1})}, to(DType::Complex64)), kiln::UnsupportedError);
}

// The stored bytes of a narrow-typed result.
std::vector<int> bytes_of(const Tensor& t) {
  std::vector<int> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.data<uint8_t>()[i]);
  return v;
}

std::vector<Tensor> cast_attrs(const Tensor& x, DType t, ir::Attributes extra) {
  ir::Attributes a = to(t);
  for (auto& kv : extra) a.insert(kv);
  return run_op({.op = "Cast", .inputs = {x}, .attrs = a, .opset = 25});
}

// Round to nearest even on each format's grid; saturation to the largest finite value or, with
// saturate = 0, infinity (e5m2) and NaN (the finite-only formats); no negative zero in *fnuz.
TEST(Cast, Float8RoundingAndSaturation) {
  const float inf = std::numeric_limits<float>::infinity();
  auto x = V<float>({9}, {0.f, -0.f, 1.f, 464.f, 470.f, 1e6f, -inf, NAN, 0.001f});
  EXPECT_EQ(bytes_of(cast_attrs(x, DType::Float8E4M3FN, {})[0]),
            (std::vector<int>{0x00, 0x80, 0x38, 0x7e, 0x7e, 0x7e, 0xfe, 0x7f, 0x01}));
  EXPECT_EQ(bytes_of(cast_attrs(x, DType::Float8E4M3FN, {{"saturate", ir::Attribute::of_int(0)}})[0]),
            (std::vector<int>{0x00, 0x80, 0x38, 0x7e, 0x7f, 0x7f, 0xff, 0x7f, 0x01}));
  EXPECT_EQ(bytes_of(cast_attrs(x, DType::Float8E4M3FNUZ, {})[0]),
            (std::vector<int>{0x00, 0x00, 0x40, 0x7f, 0x7f, 0x7f, 0xff, 0x80, 0x01}));
  EXPECT_EQ(bytes_of(cast_attrs(x, DType::Float8E5M2, {{"saturate", ir::Attribute::of_int(0)}})[0]),
            (std::vector<int>{0x00, 0x80, 0x3c, 0x5f, 0x5f, 0x7c, 0xfc, 0x7f, 0x14}));
  EXPECT_EQ(bytes_of(cast_attrs(x, DType::Float8E5M2FNUZ, {{"saturate", ir::Attribute::of_int(0)}})[0]),
            (std::vector<int>{0x00, 0x00, 0x40, 0x63, 0x63, 0x80, 0x80, 0x80, 0x18}));
  // Every byte of every float8 format goes to float and back unchanged (NaNs stay NaN).
  for (DType t : {DType::Float8E4M3FN, DType::Float8E4M3FNUZ, DType::Float8E5M2, DType::Float8E5M2FNUZ}) {
    Tensor all(t, {256});
    for (int b = 0; b < 256; ++b) all.data<uint8_t>()[b] = static_cast<uint8_t>(b);
    Tensor f = cast(all, DType::Float, 25)[0];
    Tensor back = cast_attrs(f, t, {{"saturate", ir::Attribute::of_int(0)}})[0];
    for (int b = 0; b < 256; ++b) {
      if (std::isnan(f.data<float>()[b])) EXPECT_TRUE(std::isnan(back.as_double(b))) << dtype_name(t) << " " << b;
      else EXPECT_EQ(back.data<uint8_t>()[b], b) << dtype_name(t) << " " << b;
    }
  }
}

TEST(Cast, Float4AndFloat8E8M0) {
  auto x = V<float>({8}, {0.25f, 0.3f, -3.5f, 2.5f, 9.f, -1e9f, 0.f, 1.75f});
  Tensor f4 = cast(x, DType::Float4E2M1, 25)[0];
  EXPECT_EQ(bytes_of(f4), (std::vector<int>{0x0, 0x1, 0xe, 0x4, 0x7, 0xf, 0x0, 0x4}));
  expect_near(cast(f4, DType::Float, 25)[0], V<float>({8}, {0, 0.5f, -4, 2, 6, -6, 0, 2}));
  auto p = V<float>({5}, {0.124f, 1.f, 1.1f, 1.6f, 3e38f});
  EXPECT_EQ(bytes_of(cast_attrs(p, DType::Float8E8M0, {})[0]), (std::vector<int>{0x7c, 0x7f, 0x80, 0x80, 0xfe}));
  EXPECT_EQ(bytes_of(cast_attrs(p, DType::Float8E8M0, {{"round_mode", ir::Attribute::of_string("down")}})[0]),
            (std::vector<int>{0x7b, 0x7f, 0x7f, 0x7f, 0xfe}));
  EXPECT_EQ(bytes_of(cast_attrs(p, DType::Float8E8M0, {{"round_mode", ir::Attribute::of_string("nearest")}})[0]),
            (std::vector<int>{0x7c, 0x7f, 0x7f, 0x80, 0xfe}));
  Tensor e(DType::Float8E8M0, {3});
  e.data<uint8_t>()[0] = 0x7f, e.data<uint8_t>()[1] = 0x85, e.data<uint8_t>()[2] = 0xff;
  Tensor back = cast(e, DType::Float, 25)[0];
  EXPECT_EQ(back.data<float>()[0], 1.f);
  EXPECT_EQ(back.data<float>()[1], 64.f);
  EXPECT_TRUE(std::isnan(back.data<float>()[2]));
  EXPECT_THROW(cast_attrs(p, DType::Float8E8M0, {{"round_mode", ir::Attribute::of_string("sideways")}}), kiln::Error);
}

// The sub-byte integers wrap like the other integer casts and come back sign- or zero-extended.
TEST(Cast, SubByteIntegers) {
  auto x = V<float>({6}, {-9.f, -8.f, 7.9f, 8.f, 15.f, 16.f});
  Tensor i4 = cast(x, DType::Int4, 25)[0];
  expect_near(cast(i4, DType::Int32, 25)[0], V<int32_t>({6}, {7, -8, 7, -8, -1, 0}));
  Tensor u4 = cast(x, DType::UInt4, 25)[0];
  expect_near(cast(u4, DType::Float, 25)[0], V<float>({6}, {7, 8, 7, 8, 15, 0}));
  Tensor i2 = cast(V<int64_t>({4}, {-3, -2, 1, 2}), DType::Int2, 25)[0];
  expect_near(cast(i2, DType::Int8, 25)[0], V<int8_t>({4}, {1, -2, 1, -2}));
  Tensor u2 = cast(V<int64_t>({4}, {-1, 0, 3, 4}), DType::UInt2, 25)[0];
  expect_near(cast(u2, DType::Float16, 25)[0], Tensor::from_vector<Float16>({4}, {Float16(3.f), Float16(0.f), Float16(3.f), Float16(0.f)}));
  // Between two narrow types, through the value.
  expect_near(cast(cast(i4, DType::Float8E4M3FN, 25)[0], DType::Float, 25)[0], V<float>({6}, {7, -8, 7, -8, -1, 0}));
}

}  // namespace kiln::testing
