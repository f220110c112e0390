#include <gtest/gtest.h>
#include <kiln/dtype.h>
#include <kiln/error.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace kiln {
namespace {

float f16(uint16_t bits) {
  Float16 h;
  h.bits = bits;
  return static_cast<float>(h);
}
uint16_t to_f16(float f) { return Float16(f).bits; }
uint16_t to_bf16(float f) { return BFloat16(f).bits; }

TEST(DType, SizesAndNames) {
  EXPECT_EQ(dtype_size(DType::Float), 4u);
  EXPECT_EQ(dtype_size(DType::Double), 8u);
  EXPECT_EQ(dtype_size(DType::Float16), 2u);
  EXPECT_EQ(dtype_size(DType::BFloat16), 2u);
  EXPECT_EQ(dtype_size(DType::Int64), 8u);
  EXPECT_EQ(dtype_size(DType::UInt8), 1u);
  EXPECT_EQ(dtype_size(DType::Bool), 1u);
  EXPECT_EQ(dtype_size(DType::Complex128), 16u);
  EXPECT_EQ(dtype_size(DType::Undefined), 0u);
  EXPECT_EQ(dtype_name(DType::Float), "float");
  EXPECT_EQ(dtype_name(DType::Int64), "int64");
  EXPECT_EQ(dtype_name(DType::Float16), "float16");
  EXPECT_EQ(dtype_name(DType::BFloat16), "bfloat16");
  EXPECT_EQ(dtype_name(DType::Bool), "bool");
  EXPECT_EQ(dtype_name(DType::String), "string");
}

TEST(DType, Classification) {
  EXPECT_TRUE(dtype_is_float(DType::BFloat16));
  EXPECT_TRUE(dtype_is_float(DType::Double));
  EXPECT_FALSE(dtype_is_float(DType::Int32));
  EXPECT_TRUE(dtype_is_integer(DType::UInt64));
  EXPECT_FALSE(dtype_is_integer(DType::Bool));
  EXPECT_FALSE(dtype_is_integer(DType::Float));
  EXPECT_TRUE(dtype_is_signed(DType::Int8));
  EXPECT_FALSE(dtype_is_signed(DType::UInt8));
}

TEST(DType, FromOnnx) {
  EXPECT_EQ(dtype_from_onnx(1), DType::Float);
  EXPECT_EQ(dtype_from_onnx(16), DType::BFloat16);
  EXPECT_EQ(dtype_from_onnx(17), DType::Float8E4M3FN);
  EXPECT_EQ(dtype_from_onnx(22), DType::Int4);
  EXPECT_EQ(dtype_from_onnx(26), DType::Int2);
  EXPECT_THROW(dtype_from_onnx(27), Error);
  EXPECT_THROW(dtype_from_onnx(-1), Error);
}

TEST(Float16, NormalValues) {
  EXPECT_EQ(to_f16(1.0f), 0x3c00);
  EXPECT_EQ(to_f16(-2.0f), 0xc000);
  EXPECT_EQ(to_f16(0.5f), 0x3800);
  EXPECT_EQ(to_f16(65504.0f), 0x7bff);  // largest finite half
  EXPECT_EQ(to_f16(0.0f), 0x0000);
  EXPECT_EQ(to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f16(0x3555), 0.333251953125f);
  EXPECT_EQ(f16(0xc000), -2.0f);
  EXPECT_TRUE(std::signbit(f16(0x8000)));
}

TEST(Float16, RoundsToNearestEven) {
  const float ulp = std::ldexp(1.0f, -10);  // half ulp spacing at 1.0
  EXPECT_EQ(to_f16(1.0f + ulp / 2), 0x3c00);                          // tie, even stays
  EXPECT_EQ(to_f16(1.0f + 3 * ulp / 2), 0x3c02);                      // tie, odd rounds up
  EXPECT_EQ(to_f16(1.0f + ulp / 2 + std::ldexp(1.0f, -20)), 0x3c01);  // above tie
  EXPECT_EQ(to_f16(1.0f + ulp / 2 - std::ldexp(1.0f, -20)), 0x3c00);  // below tie
  // Mantissa carry into the exponent: just below 2 rounds to 2.
  EXPECT_EQ(to_f16(std::nextafter(2.0f, 0.0f)), 0x4000);
}

TEST(Float16, OverflowAndSpecials) {
  EXPECT_EQ(to_f16(65519.0f), 0x7bff);  // below the rounding boundary
  EXPECT_EQ(to_f16(65520.0f), 0x7c00);  // the boundary rounds (to even) to inf
  EXPECT_EQ(to_f16(1e10f), 0x7c00);
  EXPECT_EQ(to_f16(-1e10f), 0xfc00);
  EXPECT_EQ(to_f16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(to_f16(-std::numeric_limits<float>::infinity()), 0xfc00);
  uint16_t nan = to_f16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);
  EXPECT_TRUE(std::isnan(f16(nan)));
  EXPECT_TRUE(std::isinf(f16(0x7c00)));
  EXPECT_TRUE(std::isnan(f16(0x7c01)));  // signalling-style payload stays NaN
}

TEST(Float16, Subnormals) {
  const float unit = std::ldexp(1.0f, -24);  // smallest half subnormal
  EXPECT_EQ(to_f16(unit), 0x0001);
  EXPECT_EQ(to_f16(-unit), 0x8001);
  EXPECT_EQ(to_f16(unit / 2), 0x0000);                           // tie to even (0)
  EXPECT_EQ(to_f16(unit * 1.5f), 0x0002);                        // tie to even (2)
  EXPECT_EQ(to_f16(unit * 0.75f), 0x0001);                       // above tie
  EXPECT_EQ(to_f16(unit / 4), 0x0000);                           // underflow
  EXPECT_EQ(to_f16(1023 * unit), 0x03ff);                        // largest subnormal
  EXPECT_EQ(to_f16(1023.5f * unit), 0x0400);                     // rounds up to the smallest normal
  EXPECT_EQ(to_f16(std::ldexp(1.0f, -14)), 0x0400);              // smallest normal
  EXPECT_EQ(f16(0x0001), unit);
  EXPECT_EQ(f16(0x03ff), 1023 * unit);
  EXPECT_EQ(f16(0x8200), -512 * unit);
}

TEST(Float16, EveryPatternRoundTrips) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    float f = f16(static_cast<uint16_t>(b));
    if (std::isnan(f)) {
      EXPECT_TRUE((b & 0x7c00) == 0x7c00 && (b & 0x3ff)) << b;
      EXPECT_TRUE(std::isnan(f16(to_f16(f)))) << b;
      continue;
    }
    ASSERT_EQ(to_f16(f), b) << "bits 0x" << std::hex << b << " -> " << f;
  }
}

TEST(BFloat16, ValuesAndRounding) {
  EXPECT_EQ(to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(to_bf16(-2.0f), 0xc000);
  EXPECT_EQ(to_bf16(0.0f), 0x0000);
  EXPECT_EQ(to_bf16(-0.0f), 0x8000);
  const float ulp = std::ldexp(1.0f, -7);
  EXPECT_EQ(to_bf16(1.0f + ulp / 2), 0x3f80);                           // tie, even stays
  EXPECT_EQ(to_bf16(1.0f + 3 * ulp / 2), 0x3f82);                       // tie, odd rounds up
  EXPECT_EQ(to_bf16(1.0f + ulp / 2 + std::ldexp(1.0f, -20)), 0x3f81);   // above tie
  EXPECT_EQ(to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(to_bf16(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_EQ(to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // rounds to inf
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(std::numeric_limits<float>::quiet_NaN()))));
  // A NaN whose payload sits only in the dropped bits must not become inf.
  float low_nan = std::bit_cast<float>(uint32_t{0x7f800001});
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(low_nan))));
  // Float subnormals keep their top bits.
  float sub = std::bit_cast<float>(uint32_t{0x00010000});
  EXPECT_EQ(to_bf16(sub), 0x0001);
  EXPECT_EQ(static_cast<float>(BFloat16(sub)), sub);
}

TEST(BFloat16, EveryPatternRoundTrips) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    BFloat16 h;
    h.bits = static_cast<uint16_t>(b);
    float f = static_cast<float>(h);
    EXPECT_EQ(std::bit_cast<uint32_t>(f), b << 16);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(f)))) << b;
      continue;
    }
    ASSERT_EQ(to_bf16(f), b) << "bits 0x" << std::hex << b;
  }
}

}  // namespace
}  // namespace kiln
