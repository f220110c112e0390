#include <kiln/error.h>

#include <cmath>

#include "op_test_util.h"

namespace kiln::testing {

namespace {
using ir::Attribute;

template <typename T>
Tensor scalar_of(T v) { return Tensor::scalar<T>(v); }
}  // namespace

TEST(QuantizeLinear, RoundHalfToEvenAndSaturate) {
  Tensor x = Tensor::from_vector<float>({7}, {0, 2, 3, 5, 1000, -254, -1000});
  auto out = run_op({.op = "QuantizeLinear", .inputs = {x, scalar_of(2.f), scalar_of<uint8_t>(128)}});
  expect_near(out[0], Tensor::from_vector<uint8_t>({7}, {128, 129, 130, 130, 255, 1, 0}));
  // int8 zero point selects int8 output; -1.5 -> -2, 0.5 -> 0, 2.5 -> 2.
  Tensor y = Tensor::from_vector<float>({5}, {1, -3, 5, 300, -300});
  out = run_op({.op = "QuantizeLinear", .inputs = {y, scalar_of(2.f), scalar_of<int8_t>(-1)}});
  expect_near(out[0], Tensor::from_vector<int8_t>({5}, {-1, -3, 1, 127, -128}));
  // No zero point: uint8 with zero point 0.
  out = run_op({.op = "QuantizeLinear", .inputs = {y, scalar_of(1.f)}, .opset = 10});
  expect_near(out[0], Tensor::from_vector<uint8_t>({5}, {1, 0, 5, 255, 0}));
}

TEST(QuantizeLinear, PerAxisAndNegativeAxis) {
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 4, -1, 5, 8});
  Tensor s = Tensor::from_vector<float>({3}, {1, 2, 4});
  Tensor z = Tensor::from_vector<uint8_t>({3}, {0, 10, 20});
  const Tensor want = Tensor::from_vector<uint8_t>({2, 3}, {1, 11, 21, 0, 12, 22});
  expect_near(run_op({.op = "QuantizeLinear", .inputs = {x, s, z}})[0], want);  // axis defaults to 1
  expect_near(run_op({.op = "QuantizeLinear", .inputs = {x, s, z}, .attrs = {{"axis", Attribute::of_int(-1)}}})[0], want);
  // Per-axis needs opset 13, and the scale must match the axis.
  EXPECT_THROW(run_op({.op = "QuantizeLinear", .inputs = {x, s, z}, .opset = 10}), kiln::Error);
  EXPECT_THROW(run_op({.op = "QuantizeLinear", .inputs = {x, s, z}, .attrs = {{"axis", Attribute::of_int(0)}}}), kiln::Error);
  EXPECT_THROW(run_op({.op = "QuantizeLinear", .inputs = {x, s, z}, .attrs = {{"axis", Attribute::of_int(2)}}}), kiln::Error);
  // Zero point shape must match the scale's.
  EXPECT_THROW(run_op({.op = "QuantizeLinear", .inputs = {x, s, scalar_of<uint8_t>(0)}}), kiln::Error);
}

TEST(QuantizeLinear, Inference) {
  auto t = infer_op("QuantizeLinear", {T(DType::Float, {S("n"), 3, 5}), T(DType::Float, {}), T(DType::Int8, {})});
  EXPECT_EQ(t[0].str(), "int8[n,3,5]");
  t = infer_op("QuantizeLinear", {T(DType::Float, {S("n"), 7}), T(DType::Float, {})});
  EXPECT_EQ(t[0].str(), "uint8[n,7]");
  EXPECT_THROW(infer_op("QuantizeLinear", {T(DType::Float, {3}), T(DType::Float, {}), T(DType::Int32, {})}), kiln::Error);
  EXPECT_THROW(infer_op("QuantizeLinear", {T(DType::Float, {3}), T(DType::Float, {3, 1})}), kiln::Error);
}

TEST(DequantizeLinear, PerTensorPerAxisInt32) {
  Tensor x = Tensor::from_vector<uint8_t>({4}, {0, 3, 128, 255});
  auto out = run_op({.op = "DequantizeLinear", .inputs = {x, scalar_of(2.f), scalar_of<uint8_t>(128)}});
  expect_near(out[0], Tensor::from_vector<float>({4}, {-256, -250, 0, 254}));
  Tensor q = Tensor::from_vector<int8_t>({2, 2}, {-128, 127, 0, 5});
  out = run_op({.op = "DequantizeLinear",
                .inputs = {q, Tensor::from_vector<float>({2}, {0.5f, 2.f}), Tensor::from_vector<int8_t>({2}, {0, 1})},
                .attrs = {{"axis", Attribute::of_int(0)}}});
  expect_near(out[0], Tensor::from_vector<float>({2, 2}, {-64, 63.5f, -2, 8}));
  Tensor i32 = Tensor::from_vector<int32_t>({2}, {1000, -5});
  out = run_op({.op = "DequantizeLinear", .inputs = {i32, scalar_of(0.1f)}});
  expect_near(out[0], Tensor::from_vector<float>({2}, {100.f, -0.5f}));
  // Zero point dtype must match x's.
  EXPECT_THROW(run_op({.op = "DequantizeLinear", .inputs = {x, scalar_of(2.f), scalar_of<int8_t>(0)}}), kiln::Error);
  auto t = infer_op("DequantizeLinear", {T(DType::Int8, {S("b"), 4}), T(DType::Float, {4}), T(DType::Int8, {4})});
  EXPECT_EQ(t[0].str(), "float[b,4]");
  EXPECT_THROW(infer_op("DequantizeLinear", {T(DType::Float, {4}), T(DType::Float, {})}), kiln::Error);
}




// Opset 21: output_dtype names the type when there is no zero point.
TEST(QuantizeLinear, Opset21OutputDtype) {
  Tensor y = Tensor::from_vector<float>({3}, {1, -3, 300});
  auto out = run_op({.op = "QuantizeLinear", .inputs = {y, scalar_of(1.f)},
                     .attrs = {{"output_dtype", ir::Attribute::of_int(static_cast<int64_t>(DType::Int8))}}, .opset = 21});
  expect_near(out[0], Tensor::from_vector<int8_t>({3}, {1, -3, 127}));
  EXPECT_THROW(run_op({.op = "QuantizeLinear", .inputs = {y, scalar_of(1.f), scalar_of<uint8_t>(0)},
                       .attrs = {{"output_dtype", ir::Attribute::of_int(static_cast<int64_t>(DType::Int8))}}, .opset = 21}),
               kiln::Error);  // disagrees with the zero point
  out = run_op({.op = "QuantizeLinear", .inputs = {Tensor::from_vector<float>({3}, {1, -70000, 70000}), scalar_of(1.f)},
                .attrs = {{"output_dtype", ir::Attribute::of_int(static_cast<int64_t>(DType::Int16))}}, .opset = 21});
  expect_near(out[0], Tensor::from_vector<int16_t>({3}, {1, -32768, 32767}));
  EXPECT_THROW(run_op({.op = "QuantizeLinear", .inputs = {y, scalar_of(1.f)},
                       .attrs = {{"output_dtype", ir::Attribute::of_int(static_cast<int64_t>(DType::Int32))}}, .opset = 21}),
               kiln::UnsupportedError);
}

// Block quantization: scale [2, 2] for x [2, 3] with block_size 2 along axis 1 (the last block
// is short); round trip through DequantizeLinear with odd zero points.
TEST(QuantizeLinear, BlocksAlongAnAxis) {
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, -4, -6, 9});
  Tensor s = Tensor::from_vector<float>({2, 2}, {1, 0.5f, 2, 3});
  Tensor z = Tensor::from_vector<int8_t>({2, 2}, {0, 1, -1, 2});
  ir::Attributes a = {{"axis", ir::Attribute::of_int(1)}, {"block_size", ir::Attribute::of_int(2)}};
  auto q = run_op({.op = "QuantizeLinear", .inputs = {x, s, z}, .attrs = a, .opset = 21});
  expect_near(q[0], Tensor::from_vector<int8_t>({2, 3}, {1, 2, 7, -3, -4, 5}));
  auto d = run_op({.op = "DequantizeLinear", .inputs = {q[0], s, z}, .attrs = a, .opset = 21});
  expect_near(d[0], Tensor::from_vector<float>({2, 3}, {1, 2, 3, -4, -6, 9}));
  // The scale's shape must be x's with ceil(extent / block_size) along the axis.
  EXPECT_THROW(run_op({.op = "QuantizeLinear", .inputs = {x, Tensor::from_vector<float>({2, 3}, {1, 1, 1, 1, 1, 1})},
                       .attrs = a, .opset = 21}),
               kiln::Error);
  EXPECT_THROW(run_op({.op = "QuantizeLinear", .inputs = {x, s}, .attrs = {{"block_size", ir::Attribute::of_int(-1)}},
                       .opset = 21}),
               kiln::Error);
}

// Narrow outputs: int4 and uint2 saturate to their ranges; float8 rounds to nearest even and
// saturates unless saturate = 0; float4e2m1 always saturates.
TEST(QuantizeLinear, NarrowTypes) {
  Tensor x = Tensor::from_vector<float>({5}, {0, 3, -20, 20, 2.5f});
  Tensor z4(DType::Int4, {});
  z4.data<uint8_t>()[0] = 1;
  auto q = run_op({.op = "QuantizeLinear", .inputs = {x, scalar_of(1.f), z4}, .opset = 21});
  ASSERT_EQ(q[0].dtype(), DType::Int4);
  expect_near(run_op({.op = "DequantizeLinear", .inputs = {q[0], scalar_of(1.f), z4}, .opset = 21})[0],
              Tensor::from_vector<float>({5}, {0, 3, -9, 6, 2}));
  auto u2 = run_op({.op = "QuantizeLinear", .inputs = {x, scalar_of(1.f)},
                    .attrs = {{"output_dtype", ir::Attribute::of_int(static_cast<int64_t>(DType::UInt2))}}, .opset = 25});
  expect_near(run_op({.op = "DequantizeLinear", .inputs = {u2[0], scalar_of(2.f)}, .opset = 25})[0],
              Tensor::from_vector<float>({5}, {0, 6, 0, 6, 4}));
  Tensor z8(DType::Float8E4M3FN, {});
  auto f8 = run_op({.op = "QuantizeLinear", .inputs = {Tensor::from_vector<float>({3}, {1, 1000, 0.3f}), scalar_of(2.f), z8},
                    .opset = 21});
  expect_near(run_op({.op = "DequantizeLinear", .inputs = {f8[0], scalar_of(2.f), z8}, .opset = 21})[0],
              Tensor::from_vector<float>({3}, {1, 896, 0.3125f}));
  auto nosat = run_op({.op = "QuantizeLinear", .inputs = {Tensor::from_vector<float>({1}, {1000}), scalar_of(1.f), z8},
                       .attrs = {{"saturate", ir::Attribute::of_int(0)}}, .opset = 21});
  EXPECT_TRUE(std::isnan(nosat[0].as_double(0)));
  Tensor zf4(DType::Float4E2M1, {});
  auto f4 = run_op({.op = "QuantizeLinear", .inputs = {Tensor::from_vector<float>({3}, {1, 100, -2.6f}), scalar_of(1.f), zf4},
                    .attrs = {{"saturate", ir::Attribute::of_int(0)}}, .opset = 23});
  expect_near(run_op({.op = "DequantizeLinear", .inputs = {f4[0], scalar_of(1.f), zf4}, .opset = 23})[0],
              Tensor::from_vector<float>({3}, {1, 6, -3}));
}

// Opset 23: DequantizeLinear's output_dtype; QuantizeLinear's precision (kiln's is float32).
TEST(DequantizeLinear, Opset23OutputDtypeAndPrecision) {
  auto out = run_op({.op = "DequantizeLinear", .inputs = {Tensor::from_vector<uint8_t>({3}, {0, 2, 255}), scalar_of(0.5f)},
                     .attrs = {{"output_dtype", ir::Attribute::of_int(static_cast<int64_t>(DType::Float16))}},
                     .opset = 23});
  ASSERT_EQ(out[0].dtype(), DType::Float16);
  EXPECT_EQ(out[0].as_double(2), 127.5);
  Tensor y = Tensor::from_vector<float>({2}, {1, 3});
  EXPECT_NO_THROW(run_op({.op = "QuantizeLinear", .inputs = {y, scalar_of(1.f)},
                          .attrs = {{"precision", ir::Attribute::of_int(static_cast<int64_t>(DType::Float))}}, .opset = 23}));
  EXPECT_THROW(run_op({.op = "QuantizeLinear", .inputs = {y, scalar_of(1.f)},
                       .attrs = {{"precision", ir::Attribute::of_int(static_cast<int64_t>(DType::Float16))}}, .opset = 23}),
               kiln::UnsupportedError);
}

}  // namespace kiln::testing
