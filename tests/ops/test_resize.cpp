#include <kiln/error.h>

#include "op_test_util.h"

namespace kiln::testing {

namespace {
ir::Attributes A(std::initializer_list<std::pair<const std::string, ir::Attribute>> l) { return ir::Attributes(l); }
ir::Attribute Str(const char* s) { return ir::Attribute::of_string(s); }
Tensor F(std::vector<int64_t> dims, std::vector<float> v) { return Tensor::from_vector<float>(dims, v); }
Tensor Fv(std::vector<float> v) { return F({static_cast<int64_t>(v.size())}, v); }
Tensor I64(std::vector<int64_t> v) { return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v); }
const Tensor kX = Tensor::from_vector<float>({1, 1, 2, 2}, {1, 2, 3, 4});
}  // namespace

TEST(Resize, NearestUpsample) {
  auto out = run_op({.op = "Resize", .inputs = {kX, Tensor(), Fv({1, 1, 2, 3})}});
  expect_near(out[0], F({1, 1, 4, 6}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}));
}

TEST(Resize, NearestDownsample) {
  Tensor x = F({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto out = run_op({.op = "Resize", .inputs = {x, Tensor(), Fv({1, 1, 0.6f, 0.6f})}});
  expect_near(out[0], F({1, 1, 1, 2}, {1, 3}));
  // sizes, nearest_mode ceil + asymmetric: x_orig = x * 4/3 -> 0, 1.33, 2.67 -> 0, 2, 3
  out = run_op({.op = "Resize", .inputs = {x, Tensor(), Tensor(), I64({1, 1, 1, 3})},
                .attrs = A({{"coordinate_transformation_mode", Str("asymmetric")}, {"nearest_mode", Str("ceil")}})});
  expect_near(out[0], F({1, 1, 1, 3}, {1, 3, 4}));
}

TEST(Resize, LinearHalfPixel) {
  auto out = run_op({.op = "Resize", .inputs = {kX, Tensor(), Fv({1, 1, 2, 2})}, .attrs = A({{"mode", Str("linear")}})});
  expect_near(out[0], F({1, 1, 4, 4}, {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4}));
}

TEST(Resize, LinearAlignCorners) {
  auto out = run_op({.op = "Resize", .inputs = {kX, Tensor(), Fv({1, 1, 2, 2})},
                     .attrs = A({{"mode", Str("linear")}, {"coordinate_transformation_mode", Str("align_corners")}})});
  const float t = 1.f / 3, u = 2.f / 3;
  expect_near(out[0], F({1, 1, 4, 4}, {1, 1 + t, 1 + u, 2, 1 + u, 2, 2 + t, 2 + u, 2 + t, 2 + u, 3, 3 + t, 3, 3 + t, 3 + u, 4}));
}

TEST(Resize, CubicAsymmetric) {
  Tensor x = F({1, 4}, {1, 2, 3, 4});
  auto out = run_op({.op = "Resize", .inputs = {x, Tensor(), Fv({1, 2})},
                     .attrs = A({{"mode", Str("cubic")}, {"coordinate_transformation_mode", Str("asymmetric")}})});
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{1, 8}));
  EXPECT_NEAR(out[0].data<float>()[0], 1.0, 1e-6);
  EXPECT_NEAR(out[0].data<float>()[1], 1.40625, 1e-6);
  EXPECT_NEAR(out[0].data<float>()[2], 2.0, 1e-6);
  EXPECT_NEAR(out[0].data<float>()[3], 2.5, 1e-6);  // symmetric taps 1,2,3,4
}

TEST(Resize, TfCropAndResizeExtrapolation) {
  Tensor x = F({1, 4}, {1, 2, 3, 4});
  auto out = run_op({.op = "Resize", .inputs = {x, Fv({0, 0.25f, 1, 1.75f}), Tensor(), I64({1, 3})},
                     .attrs = A({{"mode", Str("linear")}, {"coordinate_transformation_mode", Str("tf_crop_and_resize")},
                                 {"extrapolation_value", ir::Attribute::of_float(10)}})});
  expect_near(out[0], F({1, 3}, {1.75f, 4, 10}));
}

TEST(Resize, Uint8Linear) {
  Tensor x = Tensor::from_vector<uint8_t>({1, 2}, {0, 255});
  auto out = run_op({.op = "Resize", .inputs = {x, Tensor(), Fv({1, 2})},
                     .attrs = A({{"mode", Str("linear")}, {"coordinate_transformation_mode", Str("align_corners")}})});
  expect_near(out[0], Tensor::from_vector<uint8_t>({1, 4}, {0, 85, 170, 255}));
}

TEST(Resize, Opset10AndUpsample) {
  auto out = run_op({.op = "Resize", .inputs = {kX, Fv({1, 1, 2, 2})}, .opset = 10});
  expect_near(out[0], F({1, 1, 4, 4}, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
  out = run_op({.op = "Upsample", .inputs = {kX, Fv({1, 1, 2, 2})}, .attrs = A({{"mode", Str("linear")}}), .opset = 9});
  expect_near(out[0], F({1, 1, 4, 4}, {1, 1.5, 2, 2, 2, 2.5, 3, 3, 3, 3.5, 4, 4, 3, 3.5, 4, 4}));
  out = run_op({.op = "Upsample", .inputs = {kX}, .attrs = A({{"scales", ir::Attribute::of_floats({1, 1, 1, 3})}}), .opset = 7});
  expect_near(out[0], F({1, 1, 2, 6}, {1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4}));
}

TEST(Resize, KeepAspectRatioAndAxes) {
  Tensor x = F({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto out = run_op({.op = "Resize", .inputs = {x, Tensor(), Tensor(), I64({4, 4})},
                     .attrs = A({{"axes", ir::Attribute::of_ints({2, 3})}, {"keep_aspect_ratio_policy", Str("not_larger")}}),
                     .opset = 18});
  EXPECT_EQ(out[0].dims(), (std::vector<int64_t>{1, 1, 2, 4}));
  out = run_op({.op = "Resize", .inputs = {x, Tensor(), Fv({2})}, .attrs = A({{"axes", ir::Attribute::of_ints({-1})}}), .opset = 18});
  EXPECT_EQ(out[0].dims(), (std::vector<int64_t>{1, 1, 2, 8}));
}

TEST(Resize, SymbolicInference) {
  auto t = infer_op("Resize", {T(DType::Float, {S("n"), 3, S("h"), 8}), T(DType::Float, {0}), T(DType::Float, {4})}, {}, 1, 17,
                    {Tensor(), Tensor(), Fv({1, 1, 2, 0.5f})});
  EXPECT_EQ(t[0].dims[0].symbol, "n");
  EXPECT_EQ(t[0].dims[1].value, 3);
  EXPECT_TRUE(t[0].dims[2].is_symbolic());
  EXPECT_NE(t[0].dims[2].symbol, "h");
  EXPECT_EQ(t[0].dims[3].value, 4);
  t = infer_op("Resize", {T(DType::Float, {S("n"), 3, S("h"), 8}), T(DType::Float, {0}), T(DType::Float, {0}), T(DType::Int64, {4})},
               {}, 1, 17, {Tensor(), Tensor(), Tensor(), I64({1, 3, 10, 10})});
  EXPECT_EQ(t[0].str(), "float[1,3,10,10]");
  t = infer_op("Resize", {T(DType::Float, {S("n"), 3, 5, 5}), T(DType::Float, {0}), T(DType::Float, {4})});
  EXPECT_EQ(t[0].rank(), 4);
}

TEST(Resize, Errors) {
  EXPECT_THROW(run_op({.op = "Resize", .inputs = {kX}}), kiln::Error);
  EXPECT_THROW(run_op({.op = "Resize", .inputs = {kX, Tensor(), Fv({1, 1, 2, 2}), I64({1, 1, 4, 4})}}), kiln::Error);
  EXPECT_THROW(run_op({.op = "Resize", .inputs = {kX, Tensor(), Fv({1, 2})}}), kiln::Error);
  EXPECT_THROW(run_op({.op = "Resize", .inputs = {kX, Tensor(), Fv({1, 1, 2, 2})}, .attrs = A({{"mode", Str("area")}})}), kiln::Error);
}

}  // namespace kiln::testing
