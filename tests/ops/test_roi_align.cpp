#include <kiln/error.h>

#include "op_test_util.h"

namespace kiln::testing {

namespace {
using A = ir::Attribute;

// X[n][c][y][x] = 100 n + 10 y + x (+ 1000 c): bilinear sampling of it is exact, so a bin's
// average is the value at the mean sample position.
Tensor ramp(int64_t n, int64_t c, int64_t h, int64_t w) {
  std::vector<float> v;
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = 0; b < c; ++b)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x) v.push_back(static_cast<float>(100 * a + 1000 * b + 10 * y + x));
  return Tensor::from_vector<float>({n, c, h, w}, v);
}

ir::Attributes attrs(int64_t oh, int64_t ow, int64_t ratio, const char* mode = "avg") {
  return {{"output_height", A::of_int(oh)}, {"output_width", A::of_int(ow)}, {"sampling_ratio", A::of_int(ratio)},
          {"mode", A::of_string(mode)}};
}
}  // namespace

TEST(RoiAlign, Opset10OutputHalfPixel) {
  Tensor rois = Tensor::from_vector<float>({1, 4}, {0, 0, 2, 2});
  Tensor bi = Tensor::from_vector<int64_t>({1}, {0});
  auto y = run_op({.op = "RoiAlign", .inputs = {ramp(1, 1, 4, 4), rois, bi}, .attrs = attrs(2, 2, 2), .opset = 10});
  // Bins of 1 pixel centred at 0.5 and 1.5.
  expect_near(y[0], Tensor::from_vector<float>({1, 1, 2, 2}, {5.5f, 6.5f, 15.5f, 16.5f}));
}

TEST(RoiAlign, Opset16HalfPixelBatchIndexAndChannels) {
  // The ROI [1, 3] shifts to [0.5, 2.5]: bin centres 1 and 2.
  Tensor rois = Tensor::from_vector<float>({2, 4}, {1, 1, 3, 3, 2, 1, 4, 3});
  Tensor bi = Tensor::from_vector<int64_t>({2}, {1, 0});
  auto y = run_op({.op = "RoiAlign", .inputs = {ramp(2, 3, 5, 7), rois, bi}, .attrs = attrs(2, 2, 0), .opset = 16});
  ASSERT_EQ(y[0].dims(), (std::vector<int64_t>{2, 3, 2, 2}));
  const float* p = y[0].data<float>();
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(p[c * 4 + 0], 100 + 1000 * c + 11, 1e-4);
    EXPECT_NEAR(p[c * 4 + 3], 100 + 1000 * c + 22, 1e-4);
    EXPECT_NEAR(p[12 + c * 4 + 0], 1000 * c + 12, 1e-4);
    EXPECT_NEAR(p[12 + c * 4 + 1], 1000 * c + 13, 1e-4);
  }
  // Unshifted under output_half_pixel: one 2x2-pixel bin sampled at 1.5 and 2.5 per axis.
  auto o = run_op({.op = "RoiAlign", .inputs = {ramp(2, 3, 5, 7), rois, bi},
                   .attrs = {{"output_height", A::of_int(1)}, {"output_width", A::of_int(1)},
                             {"coordinate_transformation_mode", A::of_string("output_half_pixel")}},
                   .opset = 16});
  EXPECT_NEAR(o[0].data<float>()[0], 100 + 22, 1e-4);
}

TEST(RoiAlign, MaxModeAndSpatialScale) {
  // Sampling ratio 1 on 2-pixel bins lands every sample on a pixel: values 11, 13, 31, 33.
  Tensor rois = Tensor::from_vector<double>({1, 4}, {0, 0, 8, 8});
  Tensor bi = Tensor::from_vector<int64_t>({1}, {0});
  Tensor x = Tensor::from_vector<double>({1, 1, 4, 4}, {});
  for (int i = 0; i < 16; ++i) x.data<double>()[i] = 10 * (i / 4) + i % 4;
  ir::Attributes a = attrs(2, 2, 1, "max");
  a["spatial_scale"] = A::of_float(0.5f);
  auto y = run_op({.op = "RoiAlign", .inputs = {x, rois, bi}, .attrs = a, .opset = 10});
  expect_near(y[0], Tensor::from_vector<double>({1, 1, 2, 2}, {11, 13, 31, 33}));
}

TEST(RoiAlign, SamplesFarOutsideContributeZero) {
  Tensor rois = Tensor::from_vector<float>({1, 4}, {-20, -20, -10, -10});
  Tensor bi = Tensor::from_vector<int64_t>({1}, {0});
  auto y = run_op({.op = "RoiAlign", .inputs = {ramp(1, 1, 4, 4), rois, bi}, .attrs = attrs(1, 1, 2), .opset = 16});
  expect_near(y[0], Tensor::from_vector<float>({1, 1, 1, 1}, {0}));
}

TEST(RoiAlign, SymbolicInference) {
  auto t = infer_op("RoiAlign", {T(DType::Float, {S("n"), 256, S("h"), S("w")}), T(DType::Float, {S("r"), 4}), T(DType::Int64, {S("r")})},
                    attrs(7, 5, 2), 1, 16);
  EXPECT_EQ(t[0].str(), "float[r,256,7,5]");
  auto u = infer_op("RoiAlign", {ir::TensorType::unranked(DType::Float), ir::TensorType::unranked(DType::Float), T(DType::Int64, {3})},
                    {}, 1, 10);
  EXPECT_EQ(u[0].rank(), 4);
  EXPECT_EQ(u[0].dims[0].value, 3);
  EXPECT_EQ(u[0].dims[2].value, 1);
}

TEST(RoiAlign, BadInputs) {
  auto x = T(DType::Float, {1, 1, 4, 4});
  EXPECT_THROW(infer_op("RoiAlign", {x, T(DType::Float, {2, 5}), T(DType::Int64, {2})}), kiln::Error);
  EXPECT_THROW(infer_op("RoiAlign", {x, T(DType::Float, {2, 4}), T(DType::Int64, {3})}), kiln::Error);
  EXPECT_THROW(infer_op("RoiAlign", {x, T(DType::Float, {2, 4}), T(DType::Int32, {2})}), kiln::Error);
  EXPECT_THROW(infer_op("RoiAlign", {T(DType::Float, {1, 4, 4}), T(DType::Float, {2, 4}), T(DType::Int64, {2})}), kiln::Error);
  EXPECT_THROW(infer_op("RoiAlign", {x, T(DType::Float, {2, 4}), T(DType::Int64, {2})}, {{"mode", A::of_string("min")}}), kiln::Error);
  EXPECT_THROW(infer_op("RoiAlign", {x, T(DType::Float, {2, 4}), T(DType::Int64, {2})}, {{"output_height", A::of_int(0)}}),
               kiln::Error);
  EXPECT_THROW(infer_op("RoiAlign", {x, T(DType::Float, {2, 4}), T(DType::Int64, {2})},
                        {{"coordinate_transformation_mode", A::of_string("asymmetric")}}, 1, 16),
               kiln::Error);
  // A batch index outside [0, N).
  EXPECT_THROW(run_op({.op = "RoiAlign", .inputs = {ramp(1, 1, 4, 4), Tensor::from_vector<float>({1, 4}, {0, 0, 1, 1}),
                                                    Tensor::from_vector<int64_t>({1}, {1})}}),
               kiln::Error);
}

}  // namespace kiln::testing
