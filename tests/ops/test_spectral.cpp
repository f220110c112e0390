#include <kiln/error.h>

#include <cmath>
#include <complex>
#include <numbers>

#include "op_test_util.h"

namespace kiln::testing {

namespace {
using ir::Attribute;

// Naive DFT of x [outer, n, inner, comps] along n (zero-padded/truncated to len), for checks.
Tensor naive_dft(const Tensor& x, int axis, int64_t len, bool inverse) {
  std::vector<int64_t> d = x.dims();
  const int64_t comps = d.back(), n = d[axis];
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= d[i];
  for (size_t i = axis + 1; i + 1 < d.size(); ++i) inner *= d[i];
  d[axis] = len;
  d.back() = 2;
  Tensor y(DType::Float, d);
  const double sign = inverse ? 1 : -1;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      for (int64_t k = 0; k < len; ++k) {
        std::complex<double> s = 0;
        for (int64_t j = 0; j < std::min(n, len); ++j) {
          const float* e = x.data<float>() + ((o * n + j) * inner + i) * comps;
          std::complex<double> v(e[0], comps == 2 ? e[1] : 0.f);
          s += v * std::polar(1.0, sign * 2 * std::numbers::pi * double(j * k) / double(len));
        }
        if (inverse) s /= double(len);
        float* out = y.data<float>() + ((o * len + k) * inner + i) * 2;
        out[0] = float(s.real());
        out[1] = float(s.imag());
      }
  return y;
}
}  // namespace

TEST(DFT, HandComputedRealOnesidedInverse) {
  Tensor x = Tensor::from_vector<float>({1, 4, 1}, {1, 2, 3, 4});
  auto out = run_op({.op = "DFT", .inputs = {x}});
  expect_near(out[0], Tensor::from_vector<float>({1, 4, 2}, {10, 0, -2, 2, -2, 0, -2, -2}));
  out = run_op({.op = "DFT", .inputs = {x}, .attrs = {{"onesided", Attribute::of_int(1)}}});
  expect_near(out[0], Tensor::from_vector<float>({1, 3, 2}, {10, 0, -2, 2, -2, 0}));
  Tensor c = Tensor::from_vector<float>({1, 4, 2}, {10, 0, -2, 2, -2, 0, -2, -2});
  out = run_op({.op = "DFT", .inputs = {c}, .attrs = {{"inverse", Attribute::of_int(1)}}});
  expect_near(out[0], Tensor::from_vector<float>({1, 4, 2}, {1, 0, 2, 0, 3, 0, 4, 0}));
}

TEST(DFT, OddShapesAxesAndLength) {
  Tensor x = random_float({3, 5, 7, 2}, -1, 1, 3);
  expect_near(run_op({.op = "DFT", .inputs = {x}, .attrs = {{"axis", Attribute::of_int(2)}}})[0], naive_dft(x, 2, 7, false), 1e-5);
  expect_near(run_op({.op = "DFT", .inputs = {x}, .attrs = {{"axis", Attribute::of_int(-2)}}})[0], naive_dft(x, 2, 7, false), 1e-5);
  expect_near(run_op({.op = "DFT", .inputs = {x}, .attrs = {{"axis", Attribute::of_int(0)}, {"inverse", Attribute::of_int(1)}}})[0],
              naive_dft(x, 0, 3, true), 1e-5);
  // dft_length pads (9 > 5) or truncates (4 < 5); as a constant it gives a static shape.
  for (int64_t len : {9, 4}) {
    auto out = run_op({.op = "DFT", .inputs = {x, Tensor::scalar<int64_t>(len)}, .constant = {false, true}});
    expect_near(out[0], naive_dft(x, 1, len, false), 1e-5);
  }
}

TEST(DFT, InferenceAndErrors) {
  auto t = infer_op("DFT", {T(DType::Float, {S("b"), 10, 1})}, {{"onesided", Attribute::of_int(1)}});
  EXPECT_EQ(t[0].str(), "float[b,6,2]");
  t = infer_op("DFT", {T(DType::Float, {S("b"), 10, 2}), T(DType::Int64, {})});
  EXPECT_EQ(t[0].rank(), 3);
  EXPECT_FALSE(t[0].dims[1].is_static());
  EXPECT_EQ(t[0].dims[2].value, 2);
  EXPECT_THROW(infer_op("DFT", {T(DType::Float, {2, 10, 3})}), kiln::Error);             // last dim not 1|2
  EXPECT_THROW(infer_op("DFT", {T(DType::Float, {2, 10, 2})}, {{"axis", Attribute::of_int(2)}}), kiln::Error);
  EXPECT_THROW(infer_op("DFT", {T(DType::Float, {2, 10, 2})}, {{"axis", Attribute::of_int(-1)}}), kiln::Error);
  EXPECT_THROW(infer_op("DFT", {T(DType::Float, {2, 10, 2})}, {{"onesided", Attribute::of_int(1)}}), kiln::Error);
  EXPECT_THROW(infer_op("DFT", {T(DType::Int32, {2, 10, 1})}), kiln::Error);
  EXPECT_THROW(run_op({.op = "DFT", .inputs = {random_float({1, 4, 1}), Tensor::scalar<int64_t>(0)}}), kiln::Error);
}

TEST(STFT, RectangularAndWindowed) {
  std::vector<float> s;
  for (int i = 0; i < 8; ++i) s.push_back(float(i));
  Tensor sig = Tensor::from_vector<float>({1, 8, 1}, s);
  auto out = run_op({.op = "STFT", .inputs = {sig, Tensor::scalar<int64_t>(2), Tensor(), Tensor::scalar<int64_t>(4)},
                     .constant = {false, true, false, true}});
  expect_near(out[0], Tensor::from_vector<float>({1, 3, 3, 2}, {6, 0, -2, 2, -2, 0, 14, 0, -2, 2, -2, 0, 22, 0, -2, 2, -2, 0}));
  Tensor win = Tensor::from_vector<float>({4}, {0, 1, 1, 0});
  out = run_op({.op = "STFT", .inputs = {sig, Tensor::scalar<int64_t>(2), win}, .constant = {false, true}});
  // Frame 0 windowed is [0, 1, 2, 0]: X0 = 3, X1 = -i - 2, X2 = -1 + 2 = 1.
  EXPECT_EQ(out[0].dims(), (std::vector<int64_t>{1, 3, 3, 2}));
  const float* p = out[0].data<float>();
  EXPECT_NEAR(p[0], 3, 1e-5);
  EXPECT_NEAR(p[2], -2, 1e-5);
  EXPECT_NEAR(p[3], -1, 1e-5);
  EXPECT_NEAR(p[4], 1, 1e-5);
  // Two-sided on a batch of 2 matches DFT of each frame.
  Tensor two = random_float({2, 11, 1}, -1, 1, 4);
  out = run_op({.op = "STFT", .inputs = {two, Tensor::scalar<int64_t>(3), Tensor(), Tensor::scalar<int64_t>(5)},
                .attrs = {{"onesided", Attribute::of_int(0)}}});
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{2, 3, 5, 2}));
  Tensor frame(DType::Float, {1, 5, 1});
  for (int j = 0; j < 5; ++j) frame.data<float>()[j] = two.data<float>()[11 + 6 + j];  // batch 1, frame 2
  Tensor want = naive_dft(frame, 1, 5, false);
  for (int k = 0; k < 10; ++k) EXPECT_NEAR(out[0].data<float>()[(1 * 3 + 2) * 10 + k], want.data<float>()[k], 1e-5);
}

TEST(STFT, InferenceAndErrors) {
  auto t = infer_op("STFT", {T(DType::Float, {S("b"), 128, 1}), T(DType::Int64, {}), T(DType::Float, {16})}, {}, 1, 17,
                    {Tensor(), Tensor::scalar<int64_t>(8)});
  EXPECT_EQ(t[0].str(), "float[b,15,9,2]");
  t = infer_op("STFT", {T(DType::Float, {S("b"), S("n"), 1}), T(DType::Int64, {}), T(DType::Float, {16})});
  EXPECT_EQ(t[0].rank(), 4);
  EXPECT_EQ(t[0].dims[2].value, 9);
  EXPECT_THROW(infer_op("STFT", {T(DType::Float, {1, 128}), T(DType::Int64, {}), T(DType::Float, {16})}), kiln::Error);
  EXPECT_THROW(infer_op("STFT", {T(DType::Float, {1, 128, 2}), T(DType::Int64, {}), T(DType::Float, {16})}), kiln::Error);
  Tensor sig = random_float({1, 8, 1});
  // Neither window nor frame_length; frame longer than the signal; window/frame_length mismatch.
  EXPECT_THROW(run_op({.op = "STFT", .inputs = {sig, Tensor::scalar<int64_t>(2)}}), kiln::Error);
  EXPECT_THROW(run_op({.op = "STFT", .inputs = {sig, Tensor::scalar<int64_t>(2), Tensor(), Tensor::scalar<int64_t>(9)}}), kiln::Error);
  EXPECT_THROW(run_op({.op = "STFT", .inputs = {sig, Tensor::scalar<int64_t>(2), random_float({4}), Tensor::scalar<int64_t>(3)}}),
               kiln::Error);
  EXPECT_THROW(run_op({.op = "STFT", .inputs = {sig, Tensor::scalar<int64_t>(0), random_float({4})}}), kiln::Error);
}

TEST(Windows, HannHammingBlackman) {
  Tensor four = Tensor::scalar<int64_t>(4);
  expect_near(run_op({.op = "HannWindow", .inputs = {four}})[0], Tensor::from_vector<float>({4}, {0, 0.5f, 1, 0.5f}));
  expect_near(run_op({.op = "HannWindow", .inputs = {Tensor::scalar<int32_t>(5)}, .attrs = {{"periodic", Attribute::of_int(0)}}})[0],
              Tensor::from_vector<float>({5}, {0, 0.5f, 1, 0.5f, 0}));
  expect_near(run_op({.op = "HammingWindow", .inputs = {four}})[0],
              Tensor::from_vector<float>({4}, {4.f / 46, 25.f / 46, 1, 25.f / 46}));
  expect_near(run_op({.op = "BlackmanWindow", .inputs = {four}, .attrs = {{"output_datatype", Attribute::of_int(11)}}})[0],
              Tensor::from_vector<double>({4}, {0, 0.34, 1, 0.34}), 1e-12);
  // Degenerate sizes: empty, and a one-point symmetric window.
  EXPECT_EQ(run_op({.op = "HannWindow", .inputs = {Tensor::scalar<int64_t>(0)}})[0].numel(), 0);
  expect_near(run_op({.op = "HannWindow", .inputs = {Tensor::scalar<int64_t>(1)}, .attrs = {{"periodic", Attribute::of_int(0)}}})[0],
              Tensor::from_vector<float>({1}, {1}));
  EXPECT_THROW(run_op({.op = "HannWindow", .inputs = {Tensor::scalar<int64_t>(-1)}}), kiln::Error);
  auto t = infer_op("HammingWindow", {T(DType::Int64, {})}, {}, 1, 17, {Tensor::scalar<int64_t>(7)});
  EXPECT_EQ(t[0].str(), "float[7]");
  t = infer_op("BlackmanWindow", {T(DType::Int32, {})}, {{"output_datatype", Attribute::of_int(10)}});
  EXPECT_EQ(t[0].dtype, DType::Float16);
  EXPECT_FALSE(t[0].dims[0].is_static());
  EXPECT_THROW(infer_op("HannWindow", {T(DType::Float, {})}), kiln::Error);
  EXPECT_THROW(infer_op("HannWindow", {T(DType::Int64, {})}, {{"output_datatype", Attribute::of_int(8)}}), kiln::Error);
}

TEST(MelWeightMatrix, OnnxExample) {
  auto out = run_op({.op = "MelWeightMatrix",
                     .inputs = {Tensor::scalar<int32_t>(8), Tensor::scalar<int32_t>(16), Tensor::scalar<int32_t>(8192),
                                Tensor::scalar<float>(0), Tensor::scalar<float>(4096)},
                     .constant = {true, true}});
  std::vector<float> want(9 * 8, 0.f);
  const int ones[][2] = {{0, 0}, {0, 1}, {1, 2}, {1, 3}, {2, 4}, {3, 5}, {4, 6}, {5, 7}};
  for (auto& rc : ones) want[rc[0] * 8 + rc[1]] = 1.f;
  expect_near(out[0], Tensor::from_vector<float>({9, 8}, want));
  auto t = infer_op("MelWeightMatrix", {T(DType::Int64, {}), T(DType::Int64, {}), T(DType::Int64, {}), T(DType::Float, {}), T(DType::Float, {})});
  EXPECT_EQ(t[0].rank(), 2);
  EXPECT_THROW(run_op({.op = "MelWeightMatrix",
                       .inputs = {Tensor::scalar<int32_t>(8), Tensor::scalar<int32_t>(16), Tensor::scalar<int32_t>(8192),
                                  Tensor::scalar<float>(5000), Tensor::scalar<float>(4096)}}),
               kiln::Error);
}

}  // namespace kiln::testing

namespace kiln::testing {

// Opset 20 moved the axis from an attribute to input 2, whose default is -2.
TEST(DFT, Opset20AxisInput) {
  Tensor x = random_float({3, 5, 7, 2}, -1, 1, 4);
  expect_near(run_op({.op = "DFT", .inputs = {x}, .opset = 20})[0], naive_dft(x, 2, 7, false), 1e-5);
  expect_near(run_op({.op = "DFT", .inputs = {x, Tensor(), Tensor::scalar<int64_t>(1)}, .opset = 20,
                      .constant = {false, false, true}})[0],
              naive_dft(x, 1, 5, false), 1e-5);
  expect_near(run_op({.op = "DFT", .inputs = {x, Tensor::scalar<int64_t>(4), Tensor::scalar<int64_t>(0)}, .opset = 20,
                      .constant = {false, true, true}})[0],
              naive_dft(x, 0, 4, false), 1e-5);
  // The attribute no longer counts; before opset 20 the input does not exist.
  expect_near(run_op({.op = "DFT", .inputs = {x}, .attrs = {{"axis", Attribute::of_int(1)}}, .opset = 20})[0],
              naive_dft(x, 2, 7, false), 1e-5);
  EXPECT_THROW(run_op({.op = "DFT", .inputs = {x, Tensor(), Tensor::scalar<int64_t>(1)}, .opset = 19,
                       .constant = {false, false, true}}),
               kiln::Error);
  // An axis known only at run time leaves every dim but the last unknown.
  auto t = infer_op("DFT", {T(DType::Float, {3, 5, 7, 2}), T(DType::Int64, {}), T(DType::Int64, {})}, {}, 1, 20);
  EXPECT_EQ(t[0].rank(), 4);
  EXPECT_FALSE(t[0].dims[0].is_static());
  EXPECT_EQ(t[0].dims[3].value, 2);
}

}  // namespace kiln::testing
