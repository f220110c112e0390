// kiln_depthwise's two team splits (depthwise_conv.cpp): the channel split computes what the row
// split does (parts of 64 channels, the last one partial, activations in and after the
// registers, strides 1 and 2, dilation 2, two images, teams of 2 and 3), and the rule takes it only after a
// 1x1 conv whose team splits its output channels. The row split against the reference kernels
// is CpuKernels.DepthwiseConv.
#include "kernel_check.h"

#include "backends/cpu/depthwise_conv.h"
#include "backends/cpu/simd.h"

namespace kiln {
namespace {

ir::Attributes depthwise_attrs(int64_t c, int64_t k, int64_t stride, const std::string& act, int64_t dilation = 1) {
  const int64_t p = k / 2 * dilation;
  ir::Attributes a = {{"channels_last", ir::Attribute::of_int(1)},
                      {"group", ir::Attribute::of_int(c)},
                      {"strides", ir::Attribute::of_ints({stride, stride})},
                      {"dilations", ir::Attribute::of_ints({dilation, dilation})},
                      {"pads", ir::Attribute::of_ints({p, p, p, p})}};
  if (!act.empty()) a["activation"] = ir::Attribute::of_string(act);
  return a;
}

TEST(DepthwiseConv, ChannelSplitComputesWhatTheRowSplitDoes) {
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "the channel split runs on the AVX-512 rows";
  struct Shape {
    int64_t c, h, k, stride, dilation = 1;
  };
  for (const Shape& s : {Shape{40, 9, 3, 1}, Shape{130, 7, 5, 1}, Shape{200, 11, 3, 2}, Shape{19, 8, 5, 2},
                         Shape{160, 10, 5, 1, 2}, Shape{70, 9, 3, 1, 2}})
    for (const char* act : {"Relu", "SiLU", "Sigmoid"})
      for (int threads : {2, 3}) {
        SCOPED_TRACE(std::to_string(s.c) + " channels, " + std::to_string(s.k) + "x" + std::to_string(s.k) + " stride " +
                     std::to_string(s.stride) + " " + act + ", " + std::to_string(threads) + " threads");
        ir::Graph g;
        g.opsets[""] = 17;
        g.opsets["kiln"] = 1;
        std::mt19937 rng(5);
        ir::Value* x = g.add_input("x", ir::TensorType::from_dims(DType::Float, {2, s.h, s.h, s.c}));
        ir::Value* w = g.add_constant("w", kernel_check::random_tensor({s.c, 1, s.k, s.k}, rng));
        ir::Value* b = g.add_constant("b", kernel_check::random_tensor({s.c}, rng));
        ir::Value* y = g.add_value("y");
        ir::Node* n =
            g.add_node("FusedConv", {x, w, b}, {y}, depthwise_attrs(s.c, s.k, s.stride, act, s.dilation), "n", "kiln");
        g.add_output(y);
        ops::ShapeInference().run(g);
        auto rows = backends::cpu::make_kiln_depthwise(*n, 1, "rows");
        auto channels = backends::cpu::make_kiln_depthwise(*n, threads, "channels");
        ASSERT_TRUE(rows && channels);
        const Tensor in = kernel_check::random_tensor({2, s.h, s.h, s.c}, rng);
        Tensor a(DType::Float, y->type.static_dims()), c(DType::Float, y->type.static_dims());
        std::fill(c.data<float>(), c.data<float>() + c.numel(), std::nanf(""));  // every element written
        rows->run({&in, nullptr, nullptr}, {&a});
        channels->run({&in, nullptr, nullptr}, {&c});
        for (int64_t i = 0; i < a.numel(); ++i) ASSERT_NEAR(c.data<float>()[i], a.data<float>()[i], 1e-6f) << i;
      }
}

// x -> 1x1 conv (k -> n channels) -> depthwise 3x3: the depthwise conv's split at `threads`.
std::string split_after_pointwise(int64_t k, int64_t n, int threads, const std::string& act = "Relu") {
  ir::Graph g;
  g.opsets[""] = 17;
  g.opsets["kiln"] = 1;
  ir::Value* x = g.add_input("x", ir::TensorType::from_dims(DType::Float, {1, 7, 7, k}));
  ir::Value* e = g.add_value("e");
  g.add_node("FusedConv", {x, g.add_constant("we", Tensor(DType::Float, {n, k, 1, 1}))}, {e},
             {{"channels_last", ir::Attribute::of_int(1)}}, "expand", "kiln");
  ir::Value* y = g.add_value("y");
  ir::Node* dw = g.add_node("FusedConv", {e, g.add_constant("wd", Tensor(DType::Float, {n, 1, 3, 3}))}, {y},
                            depthwise_attrs(n, 3, 1, act), "dw", "kiln");
  g.add_output(y);
  ops::ShapeInference().run(g);
  return backends::cpu::depthwise_split(*dw, threads);
}

TEST(DepthwiseConv, SplitsChannelsAfterAOneByOneConvWhoseTeamSplitsItsOutputs) {
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "the channel split runs on the AVX-512 rows";
  // 192 x 1152 weights (864 KiB, mnasnet's 7x7 expand convs): the 1x1 conv's team splits its outputs.
  EXPECT_EQ(split_after_pointwise(192, 1152, 2), "channels");
  EXPECT_EQ(split_after_pointwise(192, 1152, 1), "rows");
  // An activation applied after the registers: each thread would apply it pixel by pixel.
  EXPECT_EQ(split_after_pointwise(192, 1152, 2, "Sigmoid"), "rows");
  // 80 x 480 (150 KiB): the 1x1 conv's team splits the pixels, as the row split does.
  EXPECT_EQ(split_after_pointwise(80, 480, 2), "rows");
}

}  // namespace
}  // namespace kiln
