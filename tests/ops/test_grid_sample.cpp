#include <kiln/error.h>

#include <algorithm>
#include <cmath>

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

// Volumetric (opset 20): X [N, C, D, H, W], grid [N, D', H', W', 3] of (x, y, z). Trilinear
// interpolation reproduces a multilinear function of the voxel coordinates exactly, so the
// expected values are that function at the (clamped or reflected) sample point.
double multilinear(int64_t c, double z, double y, double x) { return 1 + c + 2 * z - y + 0.5 * x + 0.25 * z * y * x; }

TEST(GridSample, VolumetricLinearMatchesAMultilinearFunction) {
  const int64_t N = 2, C = 2, D = 3, H = 4, W = 5, OD = 2, OH = 3, OW = 2;
  std::vector<float> xv;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t z = 0; z < D; ++z)
        for (int64_t y = 0; y < H; ++y)
          for (int64_t x = 0; x < W; ++x) xv.push_back(static_cast<float>(multilinear(c, z, y, x)));
  const Tensor X = Tensor::from_vector<float>({N, C, D, H, W}, xv);
  const int64_t len[3] = {W, H, D};  // grid component k scales axis len[k]
  struct Case {
    const char* pad;
    int64_t align;
    float lo, hi;  // grid range
  };
  for (const Case& k : {Case{"border", 1, -1.5f, 1.5f}, Case{"reflection", 1, -1.5f, 1.5f}, Case{"zeros", 0, -0.6f, 0.6f}}) {
    SCOPED_TRACE(k.pad);
    const Tensor grid = random_float({N, OD, OH, OW, 3}, k.lo, k.hi, 5);
    auto y = run_op({.op = "GridSample", .inputs = {X, grid},
                     .attrs = {{"mode", A::of_string("linear")}, {"padding_mode", A::of_string(k.pad)},
                               {"align_corners", A::of_int(k.align)}},
                     .opset = 20});
    ASSERT_EQ(y[0].dims(), (std::vector<int64_t>{N, C, OD, OH, OW}));
    std::vector<float> want;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < OD * OH * OW; ++i) {
          double p[3];
          for (int j = 0; j < 3; ++j) {
            const double g = grid.data<float>()[(n * OD * OH * OW + i) * 3 + j], m = static_cast<double>(len[j] - 1);
            // align_corners: -1 .. 1 spans voxel 0 .. len - 1; otherwise -0.5 .. len - 0.5
            // (the zeros case stays inside [0, len - 1], where no tap reads padding).
            p[j] = k.align ? (g + 1) / 2 * m : ((g + 1) * len[j] - 1) / 2;
            if (std::string(k.pad) == "border") p[j] = std::clamp(p[j], 0.0, m);
            if (std::string(k.pad) == "reflection") p[j] = p[j] < 0 ? -p[j] : p[j] > m ? 2 * m - p[j] : p[j];
            ASSERT_GE(p[j], 0);
            ASSERT_LE(p[j], m);
          }
          want.push_back(static_cast<float>(multilinear(c, p[2], p[1], p[0])));
        }
    expect_near(y[0], Tensor::from_vector<float>({N, C, OD, OH, OW}, want), 1e-5, 1e-5);
  }
  // Zeros padding outside: the corner (-1, -1, -1) without align_corners is voxel (-0.5, -0.5,
  // -0.5), where only voxel 0 is inside, at weight 1/8.
  auto corner = run_op({.op = "GridSample", .inputs = {X, Tensor::from_vector<float>({N, 1, 1, 1, 3}, {-1, -1, -1, 1, 1, 1})},
                        .attrs = {{"mode", A::of_string("linear")}}, .opset = 20});
  const float x0 = static_cast<float>(multilinear(1, 0, 0, 0)), xl = static_cast<float>(multilinear(1, D - 1, H - 1, W - 1));
  EXPECT_NEAR(corner[0].data<float>()[1], x0 / 8, 1e-6);  // n 0, c 1
  EXPECT_NEAR(corner[0].data<float>()[3], xl / 8, 1e-6);  // n 1, c 1: the far corner
}

TEST(GridSample, VolumetricNearest) {
  // X[z][y][x] = 4z + 2y + x on [1, 1, 2, 2, 2].
  const Tensor X = Tensor::from_vector<float>({1, 1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  // align_corners: (x, y, z) = (1, -1, 1) is voxel (x 1, y 0, z 1); (0, -1, 1) lies halfway in
  // x (0.5), which rounds to the even index 0. Without align_corners (-1, 0, 0.5) is at voxel
  // (x -0.5, y 0.5, z 1): both halves round to 0, x not out of the volume.
  const Tensor grid = Tensor::from_vector<float>({1, 1, 1, 3, 3}, {1, -1, 1, 0, -1, 1, -0.2f, 0.9f, 0.2f});
  auto y = run_op({.op = "GridSample", .inputs = {X, grid},
                   .attrs = {{"mode", A::of_string("nearest")}, {"align_corners", A::of_int(1)}}, .opset = 20});
  expect_near(y[0], Tensor::from_vector<float>({1, 1, 1, 1, 3}, {5, 4, 6}));
  auto edge = run_op({.op = "GridSample", .inputs = {X, Tensor::from_vector<float>({1, 1, 1, 1, 3}, {-1, 0, 0.5f})},
                      .attrs = {{"mode", A::of_string("nearest")}}, .opset = 20});
  expect_near(edge[0], Tensor::from_vector<float>({1, 1, 1, 1, 1}, {4}));
  // Zeros padding: a point beyond the last voxel reads 0; border takes the last voxel.
  const Tensor out = Tensor::from_vector<float>({1, 1, 1, 1, 3}, {1, 1, 2});
  for (const char* pad : {"zeros", "border"}) {
    auto z = run_op({.op = "GridSample", .inputs = {X, out},
                     .attrs = {{"mode", A::of_string("nearest")}, {"padding_mode", A::of_string(pad)}, {"align_corners", A::of_int(1)}},
                     .opset = 20});
    EXPECT_EQ(z[0].data<float>()[0], std::string(pad) == "zeros" ? 0.f : 7.f) << pad;
  }
}

TEST(GridSample, VolumetricRefusals) {
  const Tensor X = random_float({1, 1, 2, 3, 4});
  const Tensor grid = random_float({1, 2, 2, 2, 3});
  // Cubic is defined for 4-D X only.
  EXPECT_THROW(run_op({.op = "GridSample", .inputs = {X, grid}, .attrs = {{"mode", A::of_string("cubic")}}, .opset = 20}),
               kiln::Error);
  // Opset 16 has only the 4-D form.
  EXPECT_THROW(run_op({.op = "GridSample", .inputs = {X, grid}, .opset = 16}), kiln::Error);
  // The grid's last dim is the number of spatial axes.
  EXPECT_THROW(run_op({.op = "GridSample", .inputs = {X, random_float({1, 2, 2, 2, 2})}, .opset = 20}), kiln::Error);
  auto t = infer_op("GridSample", {T(DType::Float, {S("n"), 3, 4, 5, 6}), T(DType::Float, {S("n"), 2, S("h"), 7, 3})}, {}, 1, 20);
  EXPECT_EQ(t[0].str(), "float[n,3,2,h,7]");
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
