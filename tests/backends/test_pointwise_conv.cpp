// kiln's 1x1 conv for few pixels (pointwise_conv.cpp) against the reference kernel: pixel
// counts off the row tiles, output counts of 1-13 vectors and partial vectors, input channels
// across the 128-channel ranges, bias, residual and each kind of activation, two images, one
// and two threads; and the forms it leaves to oneDNN.
#include "kernel_check.h"

#include <string>

#include "backends/cpu/pointwise_conv.h"
#include "backends/cpu/simd.h"
#include "kernels/pointwise_rows.h"

namespace kiln {
namespace {

using kernel_check::Case;
using kernel_check::check;

ir::Attributes pointwise_attrs(const std::string& act) {
  ir::Attributes a = {{"channels_last", ir::Attribute::of_int(1)}};
  if (!act.empty()) a["activation"] = ir::Attribute::of_string(act);
  if (act == "Clip") a["activation_params"] = ir::Attribute::of_floats({-0.2f, 0.3f});
  if (act == "HardSigmoid") a["activation_params"] = ir::Attribute::of_floats({0.3f, 0.4f});
  if (act == "LeakyRelu") a["activation_params"] = ir::Attribute::of_floats({0.07f});
  return a;
}

// The name of the kernel the cpu backend picks for a 1x1 FusedConv of these shapes.
std::string chosen(std::vector<int64_t> x, int64_t n, ir::Attributes a = pointwise_attrs(""), int64_t group = 1) {
  return kernel_check::first_fused_conv_kernel(x, {n, x[3] / group, 1, 1}, a);
}

// The default for channels-last 1x1 convs of any size (pointwise_conv.h), not the pads or groups
// it does not take.
TEST(PointwiseConv, IsTheDefaultForEveryImageSize) {
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "kiln_pointwise needs AVX-512";
  EXPECT_EQ(chosen({1, 7, 7, 320}, 1280), "kiln_pointwise");
  EXPECT_EQ(chosen({1, 14, 14, 96}, 576), "kiln_pointwise");
  EXPECT_EQ(chosen({1, 55, 55, 128}, 16), "kiln_pointwise");  // squeezenet's 55x55 squeeze
  EXPECT_EQ(chosen({1, 112, 112, 32}, 192), "kiln_pointwise");  // 12544 pixels
  // With a channel scale S (a folded squeeze-excitation), any number of pixels.
  EXPECT_EQ(kernel_check::first_fused_conv_kernel({1, 28, 28, 144}, {40, 144, 1, 1}, pointwise_attrs(""), true),
            "kiln_pointwise_scaled");
  EXPECT_EQ(chosen({1, 13, 13, 512}, 1000), "kiln_pointwise");  // squeezenet's classifier
  ir::Attributes strided = pointwise_attrs("");
  strided["strides"] = ir::Attribute::of_ints({2, 2});
  EXPECT_EQ(chosen({1, 56, 56, 64}, 128, strided), "kiln_pointwise");  // a downsampling shortcut
  ir::Attributes padded = pointwise_attrs("");
  padded["pads"] = ir::Attribute::of_ints({1, 1, 1, 1});
  EXPECT_NE(chosen({1, 7, 7, 32}, 64, padded), "kiln_pointwise");
  ir::Attributes grouped = pointwise_attrs("");
  grouped["group"] = ir::Attribute::of_int(2);
  EXPECT_NE(chosen({1, 7, 7, 32}, 64, grouped, 2), "kiln_pointwise");
}

TEST(PointwiseConv, MatchesTheReference) {
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "kiln_pointwise needs AVX-512";
  struct Shape {
    int64_t h, w, k, n;
  };
  // Pixels: 1, 13 (a tile and a tail at every width), 49, 5 x 11, 67 x 71 (4757); outputs: 9 to 208 (equal
  // blocks of 1-4 vectors: 144 as 3 x 3, 150 as 3 + 3 + 4 ending in 6 outputs; a last vector of 9
  // or 8 outputs); input channels: 1, 7, 128 exactly, 300 (two ranges at 48 outputs in a team of
  // two, four of 75 at 1 thread), 520 on 24 outputs (pair mode).
  const Shape shapes[] = {{1, 1, 7, 16},  {1, 13, 300, 48}, {7, 7, 128, 208}, {5, 11, 1, 9},  {7, 7, 130, 80},
                          {1, 13, 20, 40}, {3, 3, 64, 200},  {5, 3, 520, 24},  {2, 5, 24, 144}, {3, 7, 16, 150},
                          {67, 71, 24, 40}};
  for (const Shape& s : shapes)
    for (const char* act : {"", "Relu", "Clip", "SiLU", "Sigmoid", "HardSwish", "HardSigmoid", "LeakyRelu", "Gelu", "GeluTanh"})
      for (bool residual : {false, true})
        for (int threads : {1, 2}) {
          SCOPED_TRACE(std::to_string(s.h) + "x" + std::to_string(s.w) + " " + std::to_string(s.k) + " -> " +
                       std::to_string(s.n) + " " + act + (residual ? " residual" : "") + " threads " +
                       std::to_string(threads));
          Case c{"FusedConv", "kiln", {{2, s.h, s.w, s.k}, {s.n, s.k, 1, 1}, {s.n}}, {false, true, true},
                 {{2, s.h, s.w, s.n}}, pointwise_attrs(act)};
          if (residual) {
            c.in_dims.push_back({2, s.h, s.w, s.n});
            c.constant.push_back(false);
            c.written_over = 3;  // and with the output over the residual, across ranges of inputs
          }
          c.threads = threads;
          c.tol = 2e-4f;  // sums of up to 300 products in another order
          c.concurrent = s.k == 300 && residual && threads == 2;  // two callers of one kernel at once
          check(c);
        }
}

// A strided 1x1 conv (a ResNet's downsampling shortcut) reads the input pixels its outputs sit
// on: strides 2x2 and 2x1 and 3x2 (odd input sizes: the last row and column are read), blocks and
// pair mode, with a residual and a channel scale, one and two threads (pixels split, and
// outputs split with wide weights).
TEST(PointwiseConv, StridedReadsThePixelsItsOutputsSitOn) {
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "kiln_pointwise needs AVX-512";
  struct Shape {
    int64_t h, w, k, n, sh, sw;
  };
  const Shape shapes[] = {{13, 11, 40, 48, 2, 2}, {9, 8, 150, 80, 2, 1}, {7, 7, 40, 20, 2, 2},
                          {10, 9, 33, 70, 3, 2},  {6, 6, 520, 260, 2, 2}};
  for (const Shape& s : shapes)
    for (bool residual : {false, true})
      for (bool scaled : {false, true})
        for (int threads : {1, 2}) {
          const int64_t oh = (s.h - 1) / s.sh + 1, ow = (s.w - 1) / s.sw + 1;
          SCOPED_TRACE(std::to_string(s.h) + "x" + std::to_string(s.w) + " stride " + std::to_string(s.sh) + "x" +
                       std::to_string(s.sw) + " " + std::to_string(s.k) + " -> " + std::to_string(s.n) +
                       (residual ? " residual" : "") + (scaled ? " scaled" : "") + " threads " + std::to_string(threads));
          ir::Attributes a = pointwise_attrs("Relu");
          a["strides"] = ir::Attribute::of_ints({s.sh, s.sw});
          Case c{"FusedConv", "kiln", {{2, s.h, s.w, s.k}, {s.n, s.k, 1, 1}, {s.n}}, {false, true, true},
                 {{2, oh, ow, s.n}}, a};
          c.in_dims.push_back({2, oh, ow, s.n});
          c.constant.push_back(!residual);
          if (!residual) c.unset_inputs = {3};
          else c.written_over = 3;
          if (scaled) {
            c.in_dims.push_back({2, 1, 1, s.k});
            c.constant.push_back(false);
          }
          c.threads = threads;
          c.tol = 3e-4f;
          c.impl = scaled ? "kiln_pointwise_scaled" : "kiln_pointwise";
          check(c);
        }
}

// FusedConv's channel scale S (the input's channels times S, per image or shared), with and
// without a residual: on 7x7 images (49 pixels, fewer than the 80 outputs; 25 and 24 per thread)
// the kernel scales the pixels' inputs, on 14x14 (196, 98 per thread) each range's weights;
// 150 input channels leave a partial last vector; 151 -> 20 runs in pair mode (an odd input
// count: the last pair has one channel), each weight vector scaled as it is loaded.
TEST(PointwiseConv, ChannelScale) {
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "kiln_pointwise needs AVX-512";
  for (auto [k, n, hw] : {std::tuple<int64_t, int64_t, int64_t>{150, 80, 7}, {150, 80, 14}, {151, 20, 7}})
    for (int64_t s_images : {2, 1})
      for (bool residual : {false, true})
        for (int threads : {1, 2}) {
          SCOPED_TRACE("S for " + std::to_string(s_images) + " images" + (residual ? ", residual" : "") +
                       ", threads " + std::to_string(threads) + ", " + std::to_string(k) + " -> " + std::to_string(n) +
                       " on " + std::to_string(hw) + "x" + std::to_string(hw));
          Case c{"FusedConv", "kiln", {{2, hw, hw, k}, {n, k, 1, 1}, {n}}, {false, true, true}, {{2, hw, hw, n}},
                 pointwise_attrs("SiLU")};
          c.in_dims.push_back({2, hw, hw, n});
          c.constant.push_back(!residual);  // the Z slot: a constant when unused, erased below
          c.in_dims.push_back({s_images, 1, 1, k});
          c.constant.push_back(false);
          c.threads = threads;
          c.tol = 2e-4f;
          if (!residual) c.unset_inputs = {3};
          else c.written_over = 3;
          check(c);
        }
}

// With 512 KiB of weights or more, two threads split the output blocks instead of the pixels:
// 520 -> 260 (five blocks, the last one partial; each thread two and a half, the middle block's
// rows shared, across an image's edge with three images of 3x3) with each kind of
// activation (Sigmoid after the blocks, on each thread's outputs only), a residual, a channel
// scale, and as a channel slice of a wider output (kiln.ConvConcat). One image of 3x3 pixels
// has fewer outputs than an elementwise op splits (kParallelMinElements) but 1.2M multiply-adds:
// it is split as well (product_team).
TEST(PointwiseConv, SplitsOutputsWithWideWeights) {
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "kiln_pointwise needs AVX-512";
  for (const std::vector<int64_t>& image :
       {std::vector<int64_t>{2, 3, 5}, std::vector<int64_t>{1, 3, 3}, std::vector<int64_t>{3, 3, 3}}) {
    for (const char* act : {"", "Relu", "SiLU", "Sigmoid"})
      for (bool residual : {false, true}) {
        SCOPED_TRACE(std::string(act) + (residual ? " residual" : "") + " " + std::to_string(image[1]) + "x" +
                     std::to_string(image[2]));
        std::vector<int64_t> x_dims = image, y_dims = image;
        x_dims.push_back(520);
        y_dims.push_back(260);
        Case c{"FusedConv", "kiln", {x_dims, {260, 520, 1, 1}, {260}}, {false, true, true}, {y_dims},
               pointwise_attrs(act)};
        if (residual) {
          c.in_dims.push_back(y_dims);
          c.constant.push_back(false);
          c.written_over = 3;
        }
        c.threads = 2;
        c.tol = 3e-4f;
        check(c);
      }
  }
  Case scaled{"FusedConv", "kiln", {{2, 3, 3, 640}, {208, 640, 1, 1}, {208}, {1}, {2, 1, 1, 640}},
              {false, true, true, true, false}, {{2, 3, 3, 208}}, pointwise_attrs("SiLU")};
  scaled.unset_inputs = {3};
  scaled.threads = 2;
  scaled.tol = 3e-4f;
  check(scaled);
}

// Two threads split the outputs of wide weights where the rows are few against the outputs:
// ResNet-50's 1x1 convs at 160 pixels, where the two splits differ by 2-15%.
TEST(PointwiseConv, SplitsOutputsWhereTheRowsAreFew) {
  using backends::cpu::kSplitOutputsMinWeightBytes;
  using backends::cpu::outputs_split_pays;
  using backends::cpu::pointwise_rule;
  EXPECT_TRUE(outputs_split_pays(100, 256, 1024, 2));   // layer3's expanding convs (10x10)
  EXPECT_TRUE(outputs_split_pays(25, 2048, 512, 2));    // layer4's reducing convs (5x5)
  EXPECT_FALSE(outputs_split_pays(100, 1024, 256, 2));  // layer3's reducing convs
  EXPECT_FALSE(outputs_split_pays(100, 1024, 512, 2));  // layer4's first
  EXPECT_FALSE(outputs_split_pays(400, 256, 512, 2));   // layer2's strided downsample (20x20 out)
  EXPECT_TRUE(outputs_split_pays(0, 1024, 256, 2));     // rows not known: the weights decide
  EXPECT_TRUE(pointwise_rule(1024, 256, 2, kSplitOutputsMinWeightBytes).split_outputs);
  EXPECT_FALSE(pointwise_rule(1024, 256, 2, kSplitOutputsMinWeightBytes, 100).split_outputs);
  EXPECT_TRUE(pointwise_rule(256, 1024, 2, kSplitOutputsMinWeightBytes, 100).split_outputs);
  EXPECT_FALSE(pointwise_rule(128, 256, 2, kSplitOutputsMinWeightBytes, 4).split_outputs);  // 128 KiB of weights
}

// The rows the split rule weighs: a 1x1 conv's images x output pixels, unless a depthwise conv
// or a global pool reads its output (they split its channels as it does), then none.
TEST(PointwiseConv, SplitRowsLeaveOutConvsReadByChannelFollowers) {
  using backends::cpu::pointwise_split_rows;
  ir::Graph g;
  g.opsets[""] = 17;
  g.opsets["kiln"] = 1;
  ir::Value* x = g.add_input("x", ir::TensorType::from_dims(DType::Float, {2, 10, 10, 64}));
  auto conv = [&](ir::Value* in, int64_t oc, int64_t group, const std::string& name) {
    const int64_t ic = in->type.static_dims()[3] / group, k = group > 1 ? 3 : 1;
    ir::Value* w = g.add_constant(name + "_w", Tensor(DType::Float, {oc, ic, k, k}));
    ir::Value* y = g.add_value(name);
    g.add_node("FusedConv", {in, w}, {y},
               {{"pads", ir::Attribute::of_ints({k / 2, k / 2, k / 2, k / 2})},
                {"group", ir::Attribute::of_int(group)},
                {"channels_last", ir::Attribute::of_int(1)}},
               name, "kiln");
    ops::ShapeInference().run(g);
    return y;
  };
  ir::Value* a = conv(x, 256, 1, "a");
  conv(a, 256, 32, "grouped");  // a ResNeXt block's 3x3: splits its own rows
  ir::Value* b = conv(x, 128, 1, "b");
  conv(b, 128, 128, "depthwise");
  ir::Value* c = conv(x, 128, 1, "c");
  ir::Value* pooled = g.add_value("pooled");
  g.add_node("NhwcGlobalAveragePool", {c}, {pooled}, {}, "pool", "kiln");
  EXPECT_EQ(pointwise_split_rows(*a->producer(), 256), 200);
  EXPECT_EQ(pointwise_split_rows(*b->producer(), 128), 0);
  EXPECT_EQ(pointwise_split_rows(*c->producer(), 128), 0);
}

// A range's weights for 64 outputs fill at most two thirds of the core's L1 data cache.
TEST(PointwiseConv, RangeDepthFollowsTheL1) {
  namespace pk = kiln_kernels::pointwise_detail;
  EXPECT_EQ(pk::range_depth(48 << 10), 128);  // 32 KiB of weights
  EXPECT_EQ(pk::range_depth(32 << 10), 80);   // 20 KiB
  EXPECT_EQ(pk::range_depth(16 << 10), 32);   // no shallower
  EXPECT_EQ(pk::range_depth(1 << 20), pk::kMaxRangeDepth);  // no deeper than a thread's scaled range
}

TEST(PointwiseConv, NoBias) {
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "kiln_pointwise needs AVX-512";
  check({"FusedConv", "kiln", {{1, 3, 5, 40}, {64, 40, 1, 1}}, {false, true}, {{1, 3, 5, 64}}, pointwise_attrs("Relu")});
}

}  // namespace
}  // namespace kiln
