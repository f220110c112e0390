#include <kiln/error.h>

#include <algorithm>
#include <cmath>
#include <functional>

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

// Antialiased half_pixel downscale of one axis by a direct sum over every input pixel: the
// filter stretched by 1 / scale, out-of-range pixels read the edge, weights normalized.
std::vector<std::vector<double>> antialias_weights(int64_t len_in, int64_t len_out, double scale,
                                                   const std::function<double(double)>& filter) {
  std::vector<std::vector<double>> w(len_out, std::vector<double>(len_in, 0.0));
  for (int64_t o = 0; o < len_out; ++o) {
    const double center = (o + 0.5) / scale - 0.5;
    double total = 0;
    for (int64_t j = -20; j < len_in + 20; ++j) {
      const double v = filter(scale * (j - center));
      w[o][std::clamp<int64_t>(j, 0, len_in - 1)] += v;
      total += v;
    }
    for (double& v : w[o]) v /= total;
  }
  return w;
}

double tent(double d) { return std::max(0.0, 1 - std::abs(d)); }
double keys(double d) {  // the cubic convolution kernel, a = -0.75
  const double a = -0.75, t = std::abs(d);
  if (t <= 1) return (a + 2) * t * t * t - (a + 3) * t * t + 1;
  if (t < 2) return a * t * t * t - 5 * a * t * t + 8 * a * t - 4 * a;
  return 0;
}

// Expected [1, 1, H', W'] of x [1, 1, H, W] under separable per-axis weights.
Tensor separable(const Tensor& x, const std::vector<std::vector<double>>& wy, const std::vector<std::vector<double>>& wx) {
  const int64_t H = x.dim(2), W = x.dim(3), HO = static_cast<int64_t>(wy.size()), WO = static_cast<int64_t>(wx.size());
  std::vector<float> y;
  for (int64_t i = 0; i < HO; ++i)
    for (int64_t j = 0; j < WO; ++j) {
      double v = 0;
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) v += wy[i][h] * wx[j][w] * x.data<float>()[h * W + w];
      y.push_back(static_cast<float>(v));
    }
  return F({1, 1, HO, WO}, y);
}

TEST(Resize, AntialiasLinearAndCubicDownscale) {
  const Tensor x = random_float({1, 1, 5, 7}, -1, 1, 7);
  for (const char* mode : {"linear", "cubic"}) {
    SCOPED_TRACE(mode);
    const auto filter = std::string(mode) == "linear" ? tent : keys;
    const ir::Attributes attrs = A({{"mode", Str(mode)}, {"antialias", ir::Attribute::of_int(1)}});
    // scales: 5 * 0.6 -> 3 rows, 7 * 0.45 -> 3 columns.
    auto out = run_op({.op = "Resize", .inputs = {x, Tensor(), Fv({1, 1, 0.6f, 0.45f})}, .attrs = attrs, .opset = 18});
    expect_near(out[0], separable(x, antialias_weights(5, 3, 0.6f, filter), antialias_weights(7, 3, 0.45f, filter)));
    // sizes: the scales are 2 / 5 and 4 / 7.
    out = run_op({.op = "Resize", .inputs = {x, Tensor(), Tensor(), I64({1, 1, 2, 4})}, .attrs = attrs, .opset = 18});
    expect_near(out[0], separable(x, antialias_weights(5, 2, 2.0 / 5, filter), antialias_weights(7, 4, 4.0 / 7, filter)));
  }
}

TEST(Resize, AntialiasLeavesUpscalesAndNearestAlone) {
  const Tensor x = random_float({1, 1, 3, 4}, -1, 1, 8);
  for (const char* mode : {"nearest", "linear", "cubic"}) {
    SCOPED_TRACE(mode);
    auto run = [&](int64_t aa) {
      return run_op({.op = "Resize", .inputs = {x, Tensor(), Fv({1, 1, mode[0] == 'n' ? 0.7f : 1.f, 2.5f})},
                     .attrs = A({{"mode", Str(mode)}, {"antialias", ir::Attribute::of_int(aa)}}), .opset = 18});
    };
    expect_near(run(1)[0], run(0)[0]);
  }
  EXPECT_THROW(run_op({.op = "Resize", .inputs = {x, Tensor(), Fv({1, 1, 0.5f, 0.5f})},
                       .attrs = A({{"mode", Str("linear")}, {"antialias", ir::Attribute::of_int(2)}}), .opset = 18}),
               kiln::Error);
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
