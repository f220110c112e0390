#include <kiln/error.h>

#include <chrono>

#include "op_test_util.h"

namespace kiln::testing {

namespace {

// Timing checks only hold for optimized, uninstrumented builds.
#ifdef __SANITIZE_ADDRESS__
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

using ir::Attribute;

struct Conv2dParams {
  int64_t group = 1, sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0, pb = 0, pr = 0;
};

// Direct 2-D convolution straight from the definition.
Tensor naive_conv2d(const Tensor& x, const Tensor& w, const Tensor* b, const Conv2dParams& p) {
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  const int64_t M = w.dim(0), Cg = w.dim(1), KH = w.dim(2), KW = w.dim(3), Mg = M / p.group;
  const int64_t OH = (H + p.pt + p.pb - ((KH - 1) * p.dh + 1)) / p.sh + 1;
  const int64_t OW = (W + p.pl + p.pr - ((KW - 1) * p.dw + 1)) / p.sw + 1;
  (void)C;
  Tensor y(DType::Float, {N, M, OH, OW});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double s = b ? b->as_double(m) : 0;
          const int64_t g = m / Mg;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ih = oh * p.sh - p.pt + kh * p.dh, iw = ow * p.sw - p.pl + kw * p.dw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                s += x.as_double(((n * x.dim(1) + g * Cg + c) * H + ih) * W + iw) *
                     w.as_double(((m * Cg + c) * KH + kh) * KW + kw);
              }
          y.data<float>()[((n * M + m) * OH + oh) * OW + ow] = static_cast<float>(s);
        }
  return y;
}

ir::Attributes conv_attrs(const Conv2dParams& p) {
  return {{"group", Attribute::of_int(p.group)},
          {"strides", Attribute::of_ints({p.sh, p.sw})},
          {"dilations", Attribute::of_ints({p.dh, p.dw})},
          {"pads", Attribute::of_ints({p.pt, p.pl, p.pb, p.pr})}};
}

}  // namespace

TEST(Conv, HandComputed3x3) {
  // 1x1x3x3 input 0..8, 2x2 all-ones kernel, bias 1.
  Tensor x = Tensor::from_vector<float>({1, 1, 3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8});
  Tensor w = Tensor::from_vector<float>({1, 1, 2, 2}, {1, 1, 1, 1});
  Tensor b = Tensor::from_vector<float>({1}, {1});
  auto out = run_op({.op = "Conv", .inputs = {x, w, b}});
  expect_near(out[0], Tensor::from_vector<float>({1, 1, 2, 2}, {9, 13, 21, 25}));
  // Padding 1 all around: corners see one 2x2 patch partially.
  auto padded = run_op({.op = "Conv", .inputs = {x, w}, .attrs = {{"pads", Attribute::of_ints({1, 1, 1, 1})}}});
  expect_near(padded[0], Tensor::from_vector<float>({1, 1, 4, 4}, {0, 1, 3, 2, 3, 8, 12, 7, 9, 20, 24, 13, 6, 13, 15, 8}));
}

TEST(Conv, OddShapesAgainstNaive) {
  struct Case {
    std::vector<int64_t> x, w;
    Conv2dParams p;
  };
  const std::vector<Case> cases = {
      {{2, 3, 7, 5}, {4, 3, 3, 3}, {}},
      {{1, 3, 9, 11}, {5, 3, 3, 2}, {.sh = 2, .sw = 3, .pt = 1, .pl = 0, .pb = 2, .pr = 1}},
      {{1, 4, 8, 8}, {6, 2, 3, 3}, {.group = 2, .dh = 2, .dw = 2, .pt = 2, .pl = 2, .pb = 2, .pr = 2}},
      {{2, 6, 5, 7}, {6, 1, 3, 3}, {.group = 6, .pt = 1, .pl = 1, .pb = 1, .pr = 1}},  // depthwise
      {{1, 5, 4, 6}, {3, 5, 1, 1}, {}},                                                 // 1x1 direct path
      {{1, 5, 6, 6}, {3, 5, 1, 1}, {.sh = 2, .sw = 2}},
  };
  uint32_t seed = 20;
  for (const Case& c : cases) {
    Tensor x = random_float(c.x, -1, 1, seed++);
    Tensor w = random_float(c.w, -1, 1, seed++);
    Tensor b = random_float({c.w[0]}, -1, 1, seed++);
    auto out = run_op({.op = "Conv", .inputs = {x, w, b}, .attrs = conv_attrs(c.p)});
    expect_near(out[0], naive_conv2d(x, w, &b, c.p), 1e-4, 1e-4);
  }
}

TEST(Conv, AutoPad) {
  Tensor x = random_float({1, 2, 7, 6}, -1, 1, 40);
  Tensor w = random_float({3, 2, 3, 3}, -1, 1, 41);
  // SAME_UPPER, stride 2: out ceil(7/2)=4, ceil(6/2)=3; total pads H: 3*2+3-7=2 -> 1,1; W: 2*2+3-6=1 -> 0,1.
  auto up = run_op({.op = "Conv", .inputs = {x, w},
                    .attrs = {{"auto_pad", Attribute::of_string("SAME_UPPER")}, {"strides", Attribute::of_ints({2, 2})}}});
  expect_near(up[0], naive_conv2d(x, w, nullptr, {.sh = 2, .sw = 2, .pt = 1, .pl = 0, .pb = 1, .pr = 1}), 1e-5, 1e-5);
  auto lo = run_op({.op = "Conv", .inputs = {x, w},
                    .attrs = {{"auto_pad", Attribute::of_string("SAME_LOWER")}, {"strides", Attribute::of_ints({2, 2})}}});
  expect_near(lo[0], naive_conv2d(x, w, nullptr, {.sh = 2, .sw = 2, .pt = 1, .pl = 1, .pb = 1, .pr = 0}), 1e-5, 1e-5);
  auto valid = run_op({.op = "Conv", .inputs = {x, w},
                       .attrs = {{"auto_pad", Attribute::of_string("VALID")}, {"pads", Attribute::of_ints({1, 1, 1, 1})}}});
  expect_near(valid[0], naive_conv2d(x, w, nullptr, {}), 1e-5, 1e-5);
  // Dilated: kernel 3x2, dilations 2x3 (extents 5 and 4) on 9x7, strides 2x1. H: out 5, total
  // 4*2+5-9 = 4 -> 2,2. W: out 7, total 6+4-7 = 3 -> 1,2 (UPPER) or 2,1 (LOWER).
  Tensor xd = random_float({1, 2, 9, 7}, -1, 1, 42);
  Tensor wd = random_float({3, 2, 3, 2}, -1, 1, 43);
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER"}) {
    const bool upper = std::string(mode) == "SAME_UPPER";
    auto out = run_op({.op = "Conv", .inputs = {xd, wd},
                       .attrs = {{"auto_pad", Attribute::of_string(mode)}, {"strides", Attribute::of_ints({2, 1})},
                                 {"dilations", Attribute::of_ints({2, 3})}}});
    ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{1, 3, 5, 7}));
    expect_near(out[0],
                naive_conv2d(xd, wd, nullptr,
                             {.sh = 2, .sw = 1, .dh = 2, .dw = 3, .pt = 2, .pl = upper ? 1 : 2, .pb = 2, .pr = upper ? 2 : 1}),
                1e-5, 1e-5);
  }
}

TEST(Conv, OneAndThreeDimensional) {
  // 1-D: x = [1,2,3,4,5], w = [1,0,-1], stride 2, pad 1: taps (x[i-1] - x[i+1]).
  Tensor x1 = Tensor::from_vector<float>({1, 1, 5}, {1, 2, 3, 4, 5});
  Tensor w1 = Tensor::from_vector<float>({1, 1, 3}, {1, 0, -1});
  auto o1 = run_op({.op = "Conv", .inputs = {x1, w1},
                    .attrs = {{"strides", Attribute::of_ints({2})}, {"pads", Attribute::of_ints({1, 1})}}});
  expect_near(o1[0], Tensor::from_vector<float>({1, 1, 3}, {-2, -2, 4}));

  // 3-D: all-ones 3x3x3 input, 2x2x2 ones kernel, pad 1 -> 4x4x4; corner 1, edge 2, face 4, inner 8.
  Tensor x3(DType::Float, {1, 1, 3, 3, 3});
  for (int64_t i = 0; i < 27; ++i) x3.data<float>()[i] = 1;
  Tensor w3(DType::Float, {1, 1, 2, 2, 2});
  for (int64_t i = 0; i < 8; ++i) w3.data<float>()[i] = 1;
  auto o3 = run_op({.op = "Conv", .inputs = {x3, w3}, .attrs = {{"pads", Attribute::of_ints({1, 1, 1, 1, 1, 1})}}});
  ASSERT_EQ(o3[0].dims(), (std::vector<int64_t>{1, 1, 4, 4, 4}));
  auto at = [&](int d, int h, int w) { return o3[0].as_double((d * 4 + h) * 4 + w); };
  EXPECT_EQ(at(0, 0, 0), 1);
  EXPECT_EQ(at(0, 0, 1), 2);
  EXPECT_EQ(at(0, 1, 1), 4);
  EXPECT_EQ(at(1, 1, 2), 8);
  EXPECT_EQ(at(3, 3, 3), 1);
}

TEST(Conv, HalfAndDouble) {
  Tensor x = Tensor::from_vector<Float16>({1, 1, 2, 2}, {Float16(1), Float16(2), Float16(3), Float16(4)});
  Tensor w = Tensor::from_vector<Float16>({1, 1, 1, 1}, {Float16(0.5f)});
  auto o = run_op({.op = "Conv", .inputs = {x, w}});
  ASSERT_EQ(o[0].dtype(), DType::Float16);
  EXPECT_FLOAT_EQ(o[0].as_double(3), 2.0);
  Tensor xd = Tensor::from_vector<double>({1, 1, 3}, {1, 2, 3});
  Tensor wd = Tensor::from_vector<double>({1, 1, 2}, {1, 1});
  EXPECT_EQ(run_op({.op = "Conv", .inputs = {xd, wd}})[0].as_double(1), 5.0);
}

TEST(Conv, SymbolicInference) {
  auto t = infer_op("Conv", {T(DType::Float, {S("batch"), 3, 224, 224}), T(DType::Float, {64, 3, 7, 7})},
                    {{"strides", Attribute::of_ints({2, 2})}, {"pads", Attribute::of_ints({3, 3, 3, 3})}});
  EXPECT_EQ(t[0].str(), "float[batch,64,112,112]");
  auto t2 = infer_op("Conv", {T(DType::Float, {S("n"), 8, S("h"), 10}), T(DType::Float, {S("m"), 8, 3, 3})});
  ASSERT_EQ(t2[0].rank(), 4);
  EXPECT_EQ(t2[0].dims[0].symbol, "n");
  EXPECT_EQ(t2[0].dims[1].symbol, "m");
  EXPECT_TRUE(t2[0].dims[2].is_symbolic());
  EXPECT_EQ(t2[0].dims[3].value, 8);
  auto t3 = infer_op("Conv", {T(DType::Float, {1, 8, 9, 9}), T(DType::Float, {4, 8, 3, 3})},
                     {{"auto_pad", Attribute::of_string("SAME_UPPER")}});
  EXPECT_EQ(t3[0].str(), "float[1,4,9,9]");
  auto t4 = infer_op("Conv", {ir::TensorType::unranked(DType::Float), T(DType::Float, {4, 8, 3, 3})});
  ASSERT_TRUE(t4[0].rank_known);
  EXPECT_EQ(t4[0].rank(), 4);
}

TEST(Conv, BadInputs) {
  // Channel mismatch (8 vs 3*group 1), kernel larger than padded input, bad group, bad rank.
  EXPECT_THROW(infer_op("Conv", {T(DType::Float, {1, 8, 9, 9}), T(DType::Float, {4, 3, 3, 3})}), kiln::Error);
  EXPECT_THROW(infer_op("Conv", {T(DType::Float, {1, 3, 2, 2}), T(DType::Float, {4, 3, 3, 3})}), kiln::Error);
  EXPECT_THROW(infer_op("Conv", {T(DType::Float, {1, 4, 5, 5}), T(DType::Float, {3, 2, 3, 3})},
                        {{"group", Attribute::of_int(2)}}),
               kiln::Error);
  EXPECT_THROW(infer_op("Conv", {T(DType::Float, {1, 4, 5}), T(DType::Float, {3, 4, 3, 3})}), kiln::Error);
  EXPECT_THROW(infer_op("Conv", {T(DType::Float, {1, 3, 5, 5}), T(DType::Float, {4, 3, 3, 3})},
                        {{"strides", Attribute::of_ints({0, 1})}}),
               kiln::Error);
  EXPECT_THROW(infer_op("Conv", {T(DType::Float, {1, 3, 5, 5}), T(DType::Float, {4, 3, 3, 3})},
                        {{"auto_pad", Attribute::of_string("BOGUS")}}),
               kiln::Error);
  EXPECT_THROW(run_op({.op = "Conv", .inputs = {random_float({1, 3, 2, 2}), random_float({4, 3, 3, 3})}}), kiln::Error);
  EXPECT_THROW(run_op({.op = "Conv", .inputs = {random_float({1, 3, 5, 5}), random_float({4, 3, 3, 3}), random_float({3})}}),
               kiln::Error);
}

TEST(Conv, ResnetSizedLayerIsFast) {
  // resnet18's layer1 3x3 conv: 64->64 at 56x56 is 116 MMAC; the whole net is ~16x this.
  Tensor x = random_float({1, 64, 56, 56}, -1, 1, 50);
  Tensor w = random_float({64, 64, 3, 3}, -1, 1, 51);
  auto t0 = std::chrono::steady_clock::now();
  auto out = run_op({.op = "Conv", .inputs = {x, w}, .attrs = {{"pads", Attribute::of_ints({1, 1, 1, 1})}}});
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!kSanitized) {
    EXPECT_LT(secs, 1.0);
  }
  std::printf("64x64x56x56 3x3 conv: %.3f s\n", secs);
  // Spot-check one interior and one corner output.
  Tensor sx = x, sw = w;
  auto check = [&](int64_t m, int64_t oh, int64_t ow) {
    double s = 0;
    for (int64_t c = 0; c < 64; ++c)
      for (int64_t kh = 0; kh < 3; ++kh)
        for (int64_t kw = 0; kw < 3; ++kw) {
          int64_t ih = oh - 1 + kh, iw = ow - 1 + kw;
          if (ih < 0 || ih >= 56 || iw < 0 || iw >= 56) continue;
          s += sx.as_double((c * 56 + ih) * 56 + iw) * sw.as_double(((m * 64 + c) * 3 + kh) * 3 + kw);
        }
    EXPECT_NEAR(out[0].as_double((m * 56 + oh) * 56 + ow), s, 1e-3);
  };
  check(5, 20, 31);
  check(63, 0, 0);
  check(0, 55, 55);
}

TEST(ConvTranspose, HandComputed) {
  // 1-D: x=[1,2,3], w=[1,1,1], stride 1 -> full correlation [1,3,6,5,3].
  Tensor x = Tensor::from_vector<float>({1, 1, 3}, {1, 2, 3});
  Tensor w = Tensor::from_vector<float>({1, 1, 3}, {1, 1, 1});
  auto o = run_op({.op = "ConvTranspose", .inputs = {x, w}});
  expect_near(o[0], Tensor::from_vector<float>({1, 1, 5}, {1, 3, 6, 5, 3}));
  // Stride 2, two output channels (bias 10, 20), w second channel = [1,2,3].
  Tensor w2 = Tensor::from_vector<float>({1, 2, 3}, {1, 1, 1, 1, 2, 3});
  Tensor b = Tensor::from_vector<float>({2}, {10, 20});
  auto o2 = run_op({.op = "ConvTranspose", .inputs = {x, w2, b}, .attrs = {{"strides", Attribute::of_ints({2})}}});
  // out len 2*(3-1)+3 = 7: ch0 = [1,1,3,2,5,3,3]; ch1 = [1,2,5,4,9,6,9]
  expect_near(o2[0], Tensor::from_vector<float>({1, 2, 7}, {11, 11, 13, 12, 15, 13, 13, 21, 22, 25, 24, 29, 26, 29}));
  // pads 1,1 crop one from each end; output_padding 1 adds one at the end (no contribution).
  auto o3 = run_op({.op = "ConvTranspose", .inputs = {x, w2},
                    .attrs = {{"strides", Attribute::of_ints({2})}, {"pads", Attribute::of_ints({1, 1})},
                              {"output_padding", Attribute::of_ints({1})}}});
  expect_near(o3[0], Tensor::from_vector<float>({1, 2, 6}, {1, 3, 2, 5, 3, 3, 2, 5, 4, 9, 6, 9}));
  // output_shape [8] with stride 2: total padding 2*2+3-8 = -1 -> pads (0, -1) (floor halves): the end grows.
  auto o4 = run_op({.op = "ConvTranspose", .inputs = {x, w2},
                    .attrs = {{"strides", Attribute::of_ints({2})}, {"output_shape", Attribute::of_ints({8})}}});
  expect_near(o4[0], Tensor::from_vector<float>({1, 2, 8}, {1, 1, 3, 2, 5, 3, 3, 0, 1, 2, 5, 4, 9, 6, 9, 0}));
}

TEST(ConvTranspose, IsAdjointOfConv) {
  // <conv(x, w), y> == <x, convT(y, w)> for any group/stride/pad/dilation combination.
  Tensor x = random_float({2, 4, 7, 6}, -1, 1, 60);
  Tensor w = random_float({6, 2, 3, 2}, -1, 1, 61);
  ir::Attributes a = {{"group", Attribute::of_int(2)},
                      {"strides", Attribute::of_ints({2, 1})},
                      {"dilations", Attribute::of_ints({1, 2})},
                      {"pads", Attribute::of_ints({1, 0, 0, 1})}};
  Tensor cx = run_op({.op = "Conv", .inputs = {x, w}, .attrs = a})[0];
  Tensor y = random_float(cx.dims(), -1, 1, 62);
  // ConvTranspose weights are [C_in_of_transpose = 6, M/group = 2, k]: the same tensor.
  ir::Attributes at = a;
  Tensor ty = run_op({.op = "ConvTranspose", .inputs = {y, w}, .attrs = at})[0];
  // convT's natural output may be shorter than x when stride leaves a remainder; compare overlap.
  ASSERT_EQ(ty.dim(1), 4);
  double lhs = 0, rhs = 0;
  for (int64_t i = 0; i < cx.numel(); ++i) lhs += cx.as_double(i) * y.as_double(i);
  const int64_t H = ty.dim(2), W = ty.dim(3);
  ASSERT_LE(H, 7);
  ASSERT_LE(W, 6);
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 4; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t ww = 0; ww < W; ++ww)
          rhs += x.as_double(((n * 4 + c) * 7 + h) * 6 + ww) * ty.as_double(((n * 4 + c) * H + h) * W + ww);
  EXPECT_NEAR(lhs, rhs, 1e-3);
}

TEST(ConvTranspose, InferenceAndErrors) {
  auto t = infer_op("ConvTranspose", {T(DType::Float, {S("b"), 16, 10, 12}), T(DType::Float, {16, 4, 3, 3})},
                    {{"strides", Attribute::of_ints({2, 2})}, {"group", Attribute::of_int(2)}});
  EXPECT_EQ(t[0].str(), "float[b,8,21,25]");
  auto t2 = infer_op("ConvTranspose", {T(DType::Float, {1, 16, 10, 12}), T(DType::Float, {16, 4, 3, 3})},
                     {{"strides", Attribute::of_ints({2, 2})}, {"auto_pad", Attribute::of_string("SAME_UPPER")}});
  EXPECT_EQ(t2[0].str(), "float[1,4,20,24]");
  auto t3 = infer_op("ConvTranspose", {T(DType::Float, {1, 16, 10, 12}), T(DType::Float, {16, 4, 3, 3})},
                     {{"output_shape", Attribute::of_ints({21, 23})}});
  EXPECT_EQ(t3[0].str(), "float[1,4,21,23]");
  EXPECT_THROW(infer_op("ConvTranspose", {T(DType::Float, {1, 8, 10, 12}), T(DType::Float, {16, 4, 3, 3})}), kiln::Error);
  EXPECT_THROW(infer_op("ConvTranspose", {T(DType::Float, {1, 16, 2, 2}), T(DType::Float, {16, 4, 3, 3})},
                        {{"pads", Attribute::of_ints({3, 3, 3, 3})}}),
               kiln::Error);
}

TEST(ConvInteger, ZeroPoints) {
  Tensor x = Tensor::from_vector<uint8_t>({1, 1, 3, 3}, {2, 3, 4, 5, 6, 7, 8, 9, 10});
  Tensor w = Tensor::from_vector<uint8_t>({1, 1, 2, 2}, {1, 1, 1, 1});
  Tensor xz = Tensor::scalar<uint8_t>(1);
  auto o = run_op({.op = "ConvInteger", .inputs = {x, w, xz}});
  ASSERT_EQ(o[0].dtype(), DType::Int32);
  EXPECT_EQ(o[0].to_int64_vector(), (std::vector<int64_t>{12, 16, 24, 28}));
  // Padding contributes the zero point, i.e. nothing after subtraction.
  auto op = run_op({.op = "ConvInteger", .inputs = {x, w, xz}, .attrs = {{"pads", Attribute::of_ints({1, 1, 1, 1})}}});
  EXPECT_EQ(op[0].as_int64(0), 1);
  // Per-channel int8 weight zero points.
  Tensor x8 = Tensor::from_vector<int8_t>({1, 1, 1, 2}, {3, -4});
  Tensor w8 = Tensor::from_vector<int8_t>({2, 1, 1, 1}, {2, 5});
  Tensor wz = Tensor::from_vector<int8_t>({2}, {1, 5});
  auto o8 = run_op({.op = "ConvInteger", .inputs = {x8, w8, Tensor(), wz}});
  EXPECT_EQ(o8[0].to_int64_vector(), (std::vector<int64_t>{3, -4, 0, 0}));
  EXPECT_THROW(infer_op("ConvInteger", {T(DType::Float, {1, 1, 3, 3}), T(DType::UInt8, {1, 1, 2, 2})}), kiln::Error);
}

}  // namespace kiln::testing

namespace kiln::testing {

TEST(Conv, DeepNarrowLayerIsFast) {
  // resnet18's layer4 3x3 conv: 512->512 at 7x7 (116 MMAC) has a short GEMM row (49 outputs).
  Tensor x = random_float({1, 512, 7, 7}, -1, 1, 70);
  Tensor w = random_float({512, 512, 3, 3}, -1, 1, 71);
  auto t0 = std::chrono::steady_clock::now();
  auto out = run_op({.op = "Conv", .inputs = {x, w}, .attrs = {{"pads", ir::Attribute::of_ints({1, 1, 1, 1})}}});
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("512x512x7x7 3x3 conv: %.3f s\n", secs);
  if (!kSanitized) {
    EXPECT_LT(secs, 1.0);
  }
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{1, 512, 7, 7}));
}

}  // namespace kiln::testing

namespace kiln::testing {

// Col2Im (opset 18): blocks added back into the image; non-overlapping blocks rebuild it.
TEST(Col2Im, RebuildsTheImageAndSumsOverlaps) {
  // [1, 1, 4, 6] cut into 2x3 blocks at stride 2x3: L = 2 * 2 blocks of K = 6 values.
  Tensor x = random_float({1, 1, 4, 6}, -1, 1, 21);
  Tensor cols(DType::Float, {1, 6, 4});
  for (int64_t by = 0; by < 2; ++by)
    for (int64_t bx = 0; bx < 2; ++bx)
      for (int64_t ky = 0; ky < 2; ++ky)
        for (int64_t kx = 0; kx < 3; ++kx)
          cols.data<float>()[(ky * 3 + kx) * 4 + by * 2 + bx] = x.data<float>()[(by * 2 + ky) * 6 + bx * 3 + kx];
  auto out = run_op({.op = "Col2Im",
                     .inputs = {cols, Tensor::from_vector<int64_t>({2}, {4, 6}), Tensor::from_vector<int64_t>({2}, {2, 3})},
                     .attrs = {{"strides", ir::Attribute::of_ints({2, 3})}}, .opset = 18, .constant = {false, true, true}});
  expect_near(out[0], x);
  // Overlap at stride 1: image [1, 3], blocks of [1, 2] at 0 and 1; pixel 1 gets both.
  Tensor c = Tensor::from_vector<float>({1, 2, 2}, {1, 2, 10, 20});  // k = 0: blocks 0, 1; k = 1: blocks 0, 1
  out = run_op({.op = "Col2Im",
                .inputs = {c, Tensor::from_vector<int64_t>({2}, {1, 3}), Tensor::from_vector<int64_t>({2}, {1, 2})},
                .opset = 18, .constant = {false, true, true}});
  expect_near(out[0], Tensor::from_vector<float>({1, 1, 1, 3}, {1, 12, 20}));
  // L must match the geometry.
  EXPECT_THROW(run_op({.op = "Col2Im",
                       .inputs = {random_float({1, 2, 3}), Tensor::from_vector<int64_t>({2}, {1, 3}),
                                  Tensor::from_vector<int64_t>({2}, {1, 2})},
                       .opset = 18}),
               kiln::Error);
}

}  // namespace kiln::testing
