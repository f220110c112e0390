// kiln's stem conv (stem_conv.cpp) against the reference kernel: the stems of the shared models
// (3x3/2 3 -> 32, 7x7/2 3 -> 64, unpadded 3x3/2 3 -> 64) on small odd images, and odd shapes
// (asymmetric pads, 1 and 8 input channels, output counts off the 16-wide vectors, kernel rows
// wholly in the padding), each activation, two images, one and two threads; and the convs it
// leaves to the other kernels.
#include "kernel_check.h"

#include "backends/cpu/simd.h"
#include "backends/cpu/stem_conv.h"

namespace kiln {
namespace {

using kernel_check::Case;
using kernel_check::check;

struct StemCase {
  int64_t h, w, c, oc, kh, kw, stride;
  std::vector<int64_t> pads;
};

ir::Attributes stem_attrs(const StemCase& s, const std::string& act) {
  ir::Attributes a = {{"channels_last", ir::Attribute::of_int(1)},
                      {"strides", ir::Attribute::of_ints({s.stride, s.stride})},
                      {"pads", ir::Attribute::of_ints(s.pads)}};
  if (!act.empty()) a["activation"] = ir::Attribute::of_string(act);
  if (act == "Clip") a["activation_params"] = ir::Attribute::of_floats({0.f, 6.f});
  if (act == "HardSigmoid") a["activation_params"] = ir::Attribute::of_floats({0.3f, 0.4f});
  if (act == "LeakyRelu") a["activation_params"] = ir::Attribute::of_floats({0.07f});
  return a;
}

int64_t out_size(int64_t in, int64_t k, int64_t stride, int64_t p0, int64_t p1) {
  return (in + p0 + p1 - k) / stride + 1;
}

// The kernel the cpu backend picks first for the case's conv on one image.
std::string chosen(const StemCase& s, const std::string& act) {
  return kernel_check::first_fused_conv_kernel({1, s.h, s.w, s.c}, {s.oc, s.c, s.kh, s.kw}, stem_attrs(s, act));
}

TEST(StemConv, IsChosenForFewInputChannels) {
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "kiln_stem_conv needs AVX-512";
  EXPECT_EQ(chosen({224, 224, 3, 32, 3, 3, 2, {1, 1, 1, 1}}, "Clip"), "kiln_stem_conv");  // mobilenet_v2
  EXPECT_EQ(chosen({224, 224, 3, 64, 7, 7, 2, {3, 3, 3, 3}}, "Relu"), "kiln_stem_conv");  // resnet18
  // 16 input channels, a 1x1 conv, a grouped conv: other kernels.
  const StemCase wide{28, 28, 16, 32, 3, 3, 1, {1, 1, 1, 1}};
  EXPECT_NE(chosen(wide, ""), "kiln_stem_conv");
  EXPECT_NE(chosen({28, 28, 3, 32, 1, 1, 1, {0, 0, 0, 0}}, ""), "kiln_stem_conv");
  ir::Attributes grouped = stem_attrs(wide, "");
  grouped["group"] = ir::Attribute::of_int(2);
  EXPECT_NE(kernel_check::first_fused_conv_kernel({1, 28, 28, 4}, {32, 2, 3, 3}, grouped), "kiln_stem_conv");
}

TEST(StemConv, MatchesTheReference) {
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "kiln_stem_conv needs AVX-512";
  const StemCase cases[] = {
      {17, 23, 3, 32, 3, 3, 2, {1, 1, 1, 1}},    // mobilenet_v2 / efficientnet_b0
      {19, 21, 3, 64, 7, 7, 2, {3, 3, 3, 3}},    // resnet18
      {15, 15, 3, 64, 3, 3, 2, {0, 0, 0, 0}},    // squeezenet1_1
      {9, 30, 4, 40, 3, 3, 2, {1, 1, 1, 1}},     // 3 vectors, the last of 8
      {7, 6, 8, 150, 3, 3, 2, {2, 1, 0, 2}},     // 8 channels, asymmetric pads, 10 vectors
      {8, 9, 2, 24, 3, 2, 1, {1, 0, 1, 1}},      // stride 1 (3x3 stride 1 is kiln_winograd's)
      {7, 6, 8, 150, 5, 5, 1, {2, 1, 0, 2}},     // 160 taps at most: 5x5x8 = 200 declines
      {6, 13, 1, 9, 2, 2, 3, {0, 1, 1, 0}},      // one channel, one partial vector
      {3, 5, 3, 20, 3, 3, 2, {4, 1, 4, 1}},      // rows wholly in the padding
  };
  for (const StemCase& s : cases)
    for (const char* act : {"", "Relu", "Clip", "SiLU", "Sigmoid", "HardSwish", "HardSigmoid", "LeakyRelu", "Gelu", "GeluTanh"})
      for (int threads : {1, 2}) {
        const int64_t oh = out_size(s.h, s.kh, s.stride, s.pads[0], s.pads[2]),
                      ow = out_size(s.w, s.kw, s.stride, s.pads[1], s.pads[3]);
        SCOPED_TRACE(std::to_string(s.h) + "x" + std::to_string(s.w) + "x" + std::to_string(s.c) + " -> " +
                     std::to_string(s.oc) + " k" + std::to_string(s.kh) + "x" + std::to_string(s.kw) + " " + act +
                     " threads " + std::to_string(threads));
        Case c{"FusedConv", "kiln", {{2, s.h, s.w, s.c}, {s.oc, s.c, s.kh, s.kw}, {s.oc}}, {false, true, true},
               {{2, oh, ow, s.oc}}, stem_attrs(s, act)};
        c.threads = threads;
        c.concurrent = threads == 2 && std::string(act) == "Relu";  // the padded rows are per thread
        const bool taken = s.kh * s.kw * s.c <= 160;
        EXPECT_EQ(chosen(s, act) == "kiln_stem_conv", taken);
        check(c);
      }
}

// Planar (a ConvChain whose input is the model's NCHW image): each channel's row is a kernel row
// of its own, up to 7 x 8 of them, and the pixels whose taps cross an edge are computed one by
// one (every pixel, where the kernel is wider than the row). The output rows against the same
// conv on the NHWC image.
TEST(StemConv, ReadsNchwPlanes) {
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "kiln_stem_conv needs AVX-512";
  const StemCase cases[] = {
      {17, 23, 3, 32, 3, 3, 2, {1, 1, 1, 1}}, {19, 21, 3, 64, 7, 7, 2, {3, 3, 3, 3}},
      {7, 6, 8, 150, 3, 3, 2, {2, 1, 0, 2}},  {11, 9, 8, 20, 7, 2, 1, {3, 0, 3, 1}},
      {6, 13, 1, 9, 2, 2, 3, {0, 1, 1, 0}},   {3, 5, 3, 20, 3, 3, 2, {4, 1, 4, 1}},
      {5, 3, 2, 16, 3, 5, 1, {1, 2, 1, 2}},   {4, 2, 1, 40, 3, 5, 1, {1, 2, 1, 2}},  // kernels wider than the row
  };
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (const StemCase& c : cases) {
    SCOPED_TRACE(std::to_string(c.c) + " channels, " + std::to_string(c.kh) + "x" + std::to_string(c.kw));
    backends::cpu::StemShape s;
    s.H = c.h, s.W = c.w, s.C = c.c, s.OC = c.oc, s.KH = c.kh, s.KW = c.kw, s.SH = s.SW = c.stride;
    s.PT = c.pads[0], s.PL = c.pads[1];
    s.OH = out_size(c.h, c.kh, c.stride, c.pads[0], c.pads[2]), s.OW = out_size(c.w, c.kw, c.stride, c.pads[1], c.pads[3]);
    std::vector<float> nchw(c.c * c.h * c.w), nhwc(nchw.size()), w(c.oc * c.c * c.kh * c.kw), b(c.oc);
    for (float& v : nchw) v = u(rng);
    for (float& v : w) v = u(rng);
    for (float& v : b) v = u(rng);
    for (int64_t ch = 0; ch < c.c; ++ch)
      for (int64_t p = 0; p < c.h * c.w; ++p) nhwc[p * c.c + ch] = nchw[ch * c.h * c.w + p];
    const ops::Activation act{ops::Activation::Relu};
    const backends::cpu::StemConv rows(s, w.data(), b.data(), act), planes(s, w.data(), b.data(), act, true);
    std::vector<float> expected(s.OH * s.OW * c.oc), actual(expected.size());
    rows.rows(nhwc.data(), 0, expected.data(), 0, s.OH);
    planes.rows(nchw.data(), 0, actual.data(), 0, s.OH);
    for (size_t i = 0; i < actual.size(); ++i)
      ASSERT_NEAR(actual[i], expected[i], 1e-5f * std::max(1.f, std::fabs(expected[i]))) << "at " << i;
  }
}

}  // namespace
}  // namespace kiln
