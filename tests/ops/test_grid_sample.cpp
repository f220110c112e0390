#include <kiln/error.h>

#include "op_test_util.h"

namespace kiln::testing {

namespace {
using A = ir::Attribute;

std::vector<Tensor> sample(const Tensor& x, const Tensor& grid, const char* mode, const char* pad, int64_t align) {
  return run_op({.op = "GridSample",
                 .inputs = {x, grid},
                 .attrs = {{"mode", A::of_string(mode)}, {"padding_mode", A::of_string(pad)}, {"align_corners", A::of_int(align)}},
                 .opset = 16});
}

// X[y][x] = [[1, 2], [3, 4]] as [1, 1, 2, 2].
Tensor small() { return Tensor::from_vector<float>({1, 1, 2, 2}, {1, 2, 3, 4}); }
Tensor points(std::vector<float> xy) {
  const int64_t n = static_cast<int64_t>(xy.size()) / 2;
  return Tensor::from_vector<float>({1, 1, n, 2}, xy);
}
}  // namespace

TEST(GridSample, BilinearAlignCorners) {
  auto y = sample(small(), points({-1, -1, 1, 1, 0, 0, 1, -1, 0, -1}), "bilinear", "zeros", 1);
  expect_near(y[0], Tensor::from_vector<float>({1, 1, 1, 5}, {1, 4, 2.5f, 2, 1.5f}));
}

TEST(GridSample, PaddingModesAtTheCorner) {
  // Without align_corners, -1 is the outer edge of pixel 0: pixel-space -0.5.
  Tensor g = points({-1, -1, 2, 0});
  expect_near(sample(small(), g, "bilinear", "zeros", 0)[0], Tensor::from_vector<float>({1, 1, 1, 2}, {0.25f, 0}));
  // Border clamps (-0.5, -0.5) to pixel 0 and x = 2 (pixel 2.5) to the last column.
  expect_near(sample(small(), g, "bilinear", "border", 0)[0], Tensor::from_vector<float>({1, 1, 1, 2}, {1, 3}));
  // Reflection: taps at -1 reflect onto 0; x = 2.5 reflects at 1.5 to 0.5, y = 0.5 -> mean of all four.
  expect_near(sample(small(), g, "bilinear", "reflection", 0)[0], Tensor::from_vector<float>({1, 1, 1, 2}, {1, 2.5f}));
}

TEST(GridSample, NearestAndBicubic) {
  // align_corners=1: (0.6, -0.6) -> pixel (0.8, 0.2) -> nearest (1, 0).
  expect_near(sample(small(), points({0.6f, -0.6f, -1, 1}), "nearest", "zeros", 1)[0],
              Tensor::from_vector<float>({1, 1, 1, 2}, {2, 3}));
  // Bicubic reproduces the pixel exactly at integer positions (zeros around have weight 0).
  expect_near(sample(small(), points({-1, -1, 1, 1, 1, -1}), "bicubic", "zeros", 1)[0],
              Tensor::from_vector<float>({1, 1, 1, 3}, {1, 4, 2}));
}

TEST(GridSample, PixelCentreGridReproducesInputOddShape) {
  const int64_t N = 2, C = 3, H = 5, W = 7;
  Tensor x = random_float({N, C, H, W});
  for (int64_t align : {0, 1}) {
    std::vector<float> g;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < H; ++i)
        for (int64_t j = 0; j < W; ++j) {
          if (align) {
            g.push_back(2.f * j / (W - 1) - 1);
            g.push_back(2.f * i / (H - 1) - 1);
          } else {
            g.push_back((2.f * j + 1) / W - 1);
            g.push_back((2.f * i + 1) / H - 1);
          }
        }
    Tensor grid = Tensor::from_vector<float>({N, H, W, 2}, g);
    for (const char* mode : {"bilinear", "nearest", "bicubic"})
      for (const char* pad : {"zeros", "border", "reflection"}) {
        if (std::string(mode) == "bicubic" && std::string(pad) == "zeros") continue;  // edge taps read 0
        expect_near(sample(x, grid, mode, pad, align)[0], x, 1e-5, 1e-5);
      }
  }
}

TEST(GridSample, DoubleGridWithFloatX) {
  Tensor g = Tensor::from_vector<double>({1, 1, 1, 2}, {0, 0});
  auto y = run_op({.op = "GridSample", .inputs = {small(), g}, .attrs = {{"align_corners", A::of_int(1)}}, .opset = 16});
  expect_near(y[0], Tensor::from_vector<float>({1, 1, 1, 1}, {2.5f}));
}

TEST(GridSample, SymbolicInference) {
  auto t = infer_op("GridSample", {T(DType::Float, {S("n"), 3, S("h"), S("w")}), T(DType::Float, {S("n"), 6, S("q"), 2})}, {}, 1, 16);
  EXPECT_EQ(t[0].str(), "float[n,3,6,q]");
  auto u = infer_op("GridSample", {ir::TensorType::unranked(DType::Float), T(DType::Float, {2, 6, 5, 2})}, {}, 1, 16);
  EXPECT_EQ(u[0].rank(), 4);
  EXPECT_EQ(u[0].dims[0].value, 2);
  EXPECT_EQ(u[0].dims[3].value, 5);
}

TEST(GridSample, BadInputs) {
  EXPECT_THROW(infer_op("GridSample", {T(DType::Float, {1, 1, 4}), T(DType::Float, {1, 2, 2, 2})}, {}, 1, 16), kiln::Error);
  EXPECT_THROW(infer_op("GridSample", {T(DType::Float, {1, 1, 4, 4}), T(DType::Float, {1, 2, 2, 3})}, {}, 1, 16), kiln::Error);
  EXPECT_THROW(infer_op("GridSample", {T(DType::Float, {2, 1, 4, 4}), T(DType::Float, {3, 2, 2, 2})}, {}, 1, 16), kiln::Error);
  EXPECT_THROW(infer_op("GridSample", {T(DType::Float, {1, 1, 4, 4}), T(DType::Float, {1, 2, 2, 2})},
                        {{"mode", A::of_string("area")}}, 1, 16),
               kiln::Error);
  EXPECT_THROW(infer_op("GridSample", {T(DType::Float, {1, 1, 4, 4}), T(DType::Float, {1, 2, 2, 2})},
                        {{"padding_mode", A::of_string("wrap")}}, 1, 16),
               kiln::Error);
  EXPECT_THROW(sample(small(), Tensor::from_vector<float>({1, 1, 1, 3}, {0, 0, 0}), "bilinear", "zeros", 0), kiln::Error);
  // GridSample does not exist before opset 16.
  EXPECT_THROW(run_op({.op = "GridSample", .inputs = {small(), points({0, 0})}, .opset = 15}), kiln::Error);
}

}  // namespace kiln::testing

namespace kiln::testing {

// AffineGrid (opset 20): theta applied to normalized pixel centres (or corners).
TEST(AffineGrid, IdentityScaleAnd3D) {
  Tensor id = Tensor::from_vector<float>({1, 2, 3}, {1, 0, 0, 0, 1, 0});
  auto out = run_op({.op = "AffineGrid", .inputs = {id, Tensor::from_vector<int64_t>({4}, {1, 1, 2, 3})}, .opset = 20,
                     .constant = {false, true}});
  // W = 3 centres: -2/3, 0, 2/3; H = 2 centres: -1/2, 1/2.
  const float a = 2.f / 3;
  expect_near(out[0], Tensor::from_vector<float>({1, 2, 3, 2}, {-a, -0.5f, 0, -0.5f, a, -0.5f, -a, 0.5f, 0, 0.5f, a, 0.5f}));
  // align_corners, a scale and a shift: x' = 2x + 1, y' = -y.
  Tensor t = Tensor::from_vector<float>({1, 2, 3}, {2, 0, 1, 0, -1, 0});
  out = run_op({.op = "AffineGrid", .inputs = {t, Tensor::from_vector<int64_t>({4}, {1, 1, 2, 2})},
                .attrs = {{"align_corners", ir::Attribute::of_int(1)}}, .opset = 20, .constant = {false, true}});
  expect_near(out[0], Tensor::from_vector<float>({1, 2, 2, 2}, {-1, 1, 3, 1, -1, -1, 3, -1}));
  // 3-D: [N, D, H, W, 3], z from the depth axis.
  Tensor id3 = Tensor::from_vector<float>({1, 3, 4}, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0});
  out = run_op({.op = "AffineGrid", .inputs = {id3, Tensor::from_vector<int64_t>({5}, {1, 1, 2, 1, 1})}, .opset = 20,
                .constant = {false, true}});
  expect_near(out[0], Tensor::from_vector<float>({1, 2, 1, 1, 3}, {0, 0, -0.5f, 0, 0, 0.5f}));
  EXPECT_THROW(run_op({.op = "AffineGrid", .inputs = {id3, Tensor::from_vector<int64_t>({4}, {1, 1, 2, 2})}, .opset = 20}),
               kiln::Error);
}

}  // namespace kiln::testing
