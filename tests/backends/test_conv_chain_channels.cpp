// kiln.ConvChain of an inverted-residual block split by its middle channels
// (src/backends/cpu/conv_chain_channels.cpp), with and without a squeeze-excitation: values
// against the reference kernels at 2 and 3 threads, odd channel counts, strides, activations,
// the residual added in place; and where the banded kernel runs instead.
#include <gtest/gtest.h>
#include <kiln/tensor.h>

#include <cmath>
#include <random>
#include <thread>

#include "backends/backend.h"
#include "backends/cpu/simd.h"
#include "backends/kernel_selection.h"
#include "kernel_check.h"
#include "lower/fuse_conv_chain.h"
#include "ops/core/infer_graph.h"

namespace kiln::testing {
namespace {

using kernel_check::random_tensor;

struct Block {
  int64_t H, W, K, C, OC, taps, stride;
  const char* expand_act;
  const char* dw_act;
  const char* project_act;
  bool residual;
  int64_t images = 1;
};

// The block as one ConvChain marked `split_channels`, its inputs and the reference's output.
struct BlockCase {
  ir::Graph g;
  ir::Node* node = nullptr;
  Tensor x;
  std::vector<Tensor> expected;

  explicit BlockCase(const Block& b) {
    std::mt19937 rng(static_cast<uint32_t>(b.C * 31 + b.H));
    g.opsets[""] = 17;
    g.opsets["kiln"] = 1;
    ir::Value* in = g.add_input("x", ir::TensorType::from_dims(DType::Float, {b.images, b.H, b.W, b.K}));
    auto conv = [&](ir::Value* v, const std::string& name, int64_t oc, int64_t c_per_group, int64_t k, int64_t stride,
                    const char* act, ir::Value* z) {
      const int64_t p = k / 2;
      ir::Attributes a{{"pads", ir::Attribute::of_ints({p, p, p, p})},
                       {"strides", ir::Attribute::of_ints({stride, stride})},
                       {"channels_last", ir::Attribute::of_int(1)}};
      if (c_per_group == 1) a["group"] = ir::Attribute::of_int(oc);
      if (*act) a["activation"] = ir::Attribute::of_string(act);
      if (std::string(act) == "Clip") a["activation_params"] = ir::Attribute::of_floats({0.f, 6.f});
      std::vector<ir::Value*> ins{v, g.add_constant(name + "_w", random_tensor({oc, c_per_group, k, k}, rng)),
                                  g.add_constant(name + "_b", random_tensor({oc}, rng))};
      if (z) ins.push_back(z);
      ir::Value* y = g.add_value(name);
      g.add_node("FusedConv", ins, {y}, a, name, "kiln");
      return y;
    };
    ir::Value* v = conv(in, "expand", b.C, b.K, 1, 1, b.expand_act, nullptr);
    v = conv(v, "dw", b.C, 1, b.taps, b.stride, b.dw_act, nullptr);
    v = conv(v, "project", b.OC, b.C, 1, 1, b.project_act, b.residual ? in : nullptr);
    g.add_output(v);
    ops::ShapeInference().run(g);
    EXPECT_EQ(lower::fuse_conv_chains(g, 0), 1);
    ops::ShapeInference().run(g);
    node = g.nodes().back();
    EXPECT_EQ(node->op_type(), "ConvChain");
    node->attrs["split_channels"] = ir::Attribute::of_int(1);
    x = random_tensor({b.images, b.H, b.W, b.K}, rng);
    expected = ops::run_reference(*node, {&x});
  }
};

void expect_near(const Tensor& actual, const Tensor& expected, const std::string& what) {
  ASSERT_EQ(actual.dims(), expected.dims()) << what;
  for (int64_t i = 0; i < actual.numel(); ++i) {
    const float e = expected.data<float>()[i];
    ASSERT_NEAR(actual.data<float>()[i], e, 1e-4 * std::max(1.f, std::fabs(e))) << what << " at " << i;
  }
}

// Middle channels not a multiple of 16 or of the team (slices of 16-channel vectors, the last one
// short; under 32, one slice), 3x3 and 5x5 taps at strides 1 and 2, activations on every layer
// (the project's after the partial sums are added), with and without the residual, two images,
// at 2 and 3 threads.
TEST(ConvChainChannels, MatchesTheReference) {
  const Block blocks[] = {
      {7, 7, 24, 150, 24, 3, 1, "Clip", "Clip", "", true},
      {9, 6, 16, 96, 40, 5, 2, "SiLU", "SiLU", "Relu", false},
      {5, 11, 33, 200, 33, 3, 1, "Relu", "", "", true},
      {14, 14, 20, 64, 12, 3, 2, "HardSwish", "Relu", "", false},
      {6, 5, 16, 48, 16, 3, 1, "Relu", "Relu", "", true, 2},  // two images
      {7, 7, 8, 24, 8, 3, 1, "Relu", "Relu", "", false},     // under 32 channels: one slice
  };
  for (const Block& b : blocks) {
    BlockCase c(b);
    for (int threads : {2, 3}) {
      const std::string what = "C " + std::to_string(b.C) + " threads " + std::to_string(threads);
      auto backend = backends::make_cpu_backend(threads);
      const backends::SelectedKernel sel = backends::select_kernel(*backend, *c.node, threads);
      ASSERT_TRUE(sel.kernel) << what;
      if (!backends::cpu::has_avx512()) continue;  // the banded kernel runs it elsewhere
      EXPECT_EQ(sel.name, "kiln_chain_channels") << what;
      Tensor y(DType::Float, c.expected[0].dims());
      sel.kernel->run({&c.x}, {&y});
      expect_near(y, c.expected[0], what);
      sel.kernel->run({&c.x}, {&y});  // again: the buffers of one run do not leak into the next
      expect_near(y, c.expected[0], what + ", second run");
      {  // two callers at once (a session run from two threads): each its own buffers
        Tensor y1(DType::Float, c.expected[0].dims()), y2(DType::Float, c.expected[0].dims());
        std::thread a([&] { for (int i = 0; i < 20; ++i) sel.kernel->run({&c.x}, {&y1}); });
        std::thread b2([&] { for (int i = 0; i < 20; ++i) sel.kernel->run({&c.x}, {&y2}); });
        a.join();
        b2.join();
        expect_near(y1, c.expected[0], what + ", concurrent");
        expect_near(y2, c.expected[0], what + ", concurrent");
      }
      if (b.residual) {  // the output written over the residual, as the memory plan may place it
        EXPECT_TRUE(sel.kernel->writes_over(0));
        Tensor inout = c.x.clone();
        sel.kernel->run({&inout}, {&inout});
        expect_near(inout, c.expected[0], what + ", in place");
      }
    }
  }
}

// An inverted-residual block with a squeeze-excitation (efficientnet's, mobilenet_v3's; RegNet's
// with a grouped 3x3 conv of 8-channel groups in the middle, at strides 1 and 2): the middle
// output's global average pool -> fc1 -> fc2 is the project's channel scale S. The
// lowering (2 threads, a backend that splits channels) makes it one chain; values against the
// reference at 2 and 3 threads, the residual added in place.
TEST(ConvChainChannels, SqueezeExcitationBlocks) {
  struct SeBlock {
    int64_t H, K, C, S, OC, taps;
    const char *act, *fc1_act, *fc2_act;
    bool residual;
    int64_t group_channels = 1;  // the middle conv's channels a group: 1 depthwise, 8 RegNet's
    int64_t stride = 1;
  };
  for (const SeBlock& b : {SeBlock{7, 40, 240, 10, 40, 5, "SiLU", "SiLU", "Sigmoid", true},
                           SeBlock{9, 24, 376, 40, 32, 3, "HardSwish", "Relu", "HardSigmoid", false},
                           SeBlock{7, 440, 440, 110, 440, 3, "Relu", "Relu", "Sigmoid", true, 8},
                           SeBlock{11, 208, 440, 52, 440, 3, "Relu", "Relu", "Sigmoid", false, 8, 2}}) {
    std::mt19937 rng(static_cast<uint32_t>(b.C));
    ir::Graph g;
    g.opsets[""] = 17;
    g.opsets["kiln"] = 1;
    ir::Value* in = g.add_input("x", ir::TensorType::from_dims(DType::Float, {1, b.H, b.H, b.K}));
    auto conv = [&](ir::Value* v, const std::string& name, int64_t oc, int64_t c_per_group, int64_t k, const char* act,
                    std::vector<ir::Value*> extra, int64_t group = 1, int64_t stride = 1) {
      ir::Attributes a{{"pads", ir::Attribute::of_ints({k / 2, k / 2, k / 2, k / 2})},
                       {"strides", ir::Attribute::of_ints({stride, stride})},
                       {"channels_last", ir::Attribute::of_int(1)}};
      if (group > 1) a["group"] = ir::Attribute::of_int(group);
      if (*act) a["activation"] = ir::Attribute::of_string(act);
      if (std::string(act) == "HardSigmoid") a["activation_params"] = ir::Attribute::of_floats({1.f / 6, 0.5f});
      // Weights scaled by 1/sqrt(fan-in), as trained ones are: sums over 440 inputs stay near 1.
      Tensor w = random_tensor({oc, c_per_group, k, k}, rng);
      const float scale = 1.f / std::sqrt(static_cast<float>(c_per_group * k * k));
      for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] *= scale;
      std::vector<ir::Value*> ins{v, g.add_constant(name + "_w", w), g.add_constant(name + "_b", random_tensor({oc}, rng))};
      ins.insert(ins.end(), extra.begin(), extra.end());
      ir::Value* y = g.add_value(name);
      g.add_node("FusedConv", ins, {y}, a, name, "kiln");
      return y;
    };
    ir::Value* e = conv(in, "expand", b.C, b.K, 1, b.act, {});
    ir::Value* d = conv(e, "mid", b.C, b.group_channels, b.taps, b.act, {}, b.C / b.group_channels, b.stride);
    ir::Value* pooled = g.add_value("pooled");
    g.add_node("NhwcGlobalAveragePool", {d}, {pooled}, {}, "pool", "kiln");
    ir::Value* h = conv(pooled, "fc1", b.S, b.C, 1, b.fc1_act, {});
    ir::Value* scale = conv(h, "fc2", b.C, b.S, 1, b.fc2_act, {});
    g.add_output(conv(d, "project", b.OC, b.C, 1, "", {b.residual ? in : nullptr, scale}));
    ops::ShapeInference().run(g);
    ASSERT_EQ(lower::fuse_conv_chains(g, 0, 0, true, 2, true, /*channels=*/true), 1);
    ops::ShapeInference().run(g);
    ir::Node* node = g.nodes().back();
    ASSERT_EQ(node->op_type(), "ConvChain");
    EXPECT_EQ(node->attr_int("split_channels", 0), 1);
    EXPECT_EQ(node->attrs.at("body").g->nodes().size(), 6u);
    const Tensor x = random_tensor({1, b.H, b.H, b.K}, rng);
    const std::vector<Tensor> expected = ops::run_reference(*node, {&x});
    if (!backends::cpu::has_avx512()) continue;
    for (int threads : {2, 3}) {
      const std::string what = "C " + std::to_string(b.C) + " group " + std::to_string(b.group_channels) + " threads " +
                               std::to_string(threads);
      auto backend = backends::make_cpu_backend(threads);
      const backends::SelectedKernel sel = backends::select_kernel(*backend, *node, threads);
      ASSERT_TRUE(sel.kernel) << what;
      EXPECT_EQ(sel.name, "kiln_chain_channels") << what;
      Tensor y(DType::Float, expected[0].dims());
      sel.kernel->run({&x}, {&y});
      expect_near(y, expected[0], what);
      if (b.residual) {
        Tensor inout = x.clone();
        sel.kernel->run({&inout}, {&inout});
        expect_near(inout, expected[0], what + ", in place");
      }
    }
  }
}

// One thread, or a chain the lowering did not mark, runs banded.
TEST(ConvChainChannels, DeclinesWhereTheBandedChainRuns) {
  BlockCase c({7, 7, 8, 64, 8, 3, 1, "Relu", "Relu", "", false});
  auto backend1 = backends::make_cpu_backend(1);
  EXPECT_EQ(backends::select_kernel(*backend1, *c.node, 1).name, "onednn_bands");
  BlockCase wide({7, 7, 8, 64, 8, 3, 1, "Relu", "Relu", "", false});
  wide.node->attrs.erase("split_channels");
  auto backend = backends::make_cpu_backend(2);
  EXPECT_EQ(backends::select_kernel(*backend, *wide.node, 2).name, "onednn_bands");
}

}  // namespace
}  // namespace kiln::testing
