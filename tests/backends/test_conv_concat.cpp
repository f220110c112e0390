// conv_concat_deals (src/backends/cpu/conv_concat.cpp): which Inception blocks' branches are
// dealt whole to two threads. The cases are blocks whose 2-thread times were measured both
// ways (bench/results/experiments-20261207-session48.md): a 5x5/3x3 block on a 17x17 image
// (dealt faster) and on 35x35 (split 9% faster), a 1x7/7x1 block on 8x8 x 768 (dealt 7% faster)
// and on 17x17 x 768 with 128 middle channels (split 5% faster); and where a branch's data
// outgrows the L2 (session 49).
#include <gtest/gtest.h>

#include <array>
#include <kiln/tensor.h>

#include "backends/cpu/conv_concat.h"
#include "ops/core/infer_graph.h"

namespace kiln::backends::cpu {
namespace {

Tensor zeros(std::vector<int64_t> dims) { return Tensor(DType::Float, dims); }

struct Block {
  ir::Graph g;
  ir::Value* x = nullptr;
  std::vector<std::vector<const ir::Node*>> branches;
  int made = 0;

  Block(int64_t hw, int64_t c) {
    g.opsets[""] = 17;
    g.opsets["kiln"] = 1;
    x = g.add_input("x", ir::TensorType::from_dims(DType::Float, {1, hw, hw, c}));
  }
  // A chain of channels-last convs from x, each {out channels, kernel h, kernel w}; a pool first
  // when `pooled`.
  void branch(std::vector<std::array<int64_t, 3>> convs, bool pooled = false) {
    std::vector<const ir::Node*> steps;
    ir::Value* v = x;
    if (pooled) {
      ir::Value* p = g.add_value("pool" + std::to_string(made++));
      steps.push_back(g.add_node("NhwcAveragePool", {v}, {p},
                                 {{"kernel_shape", ir::Attribute::of_ints({3, 3})},
                                  {"pads", ir::Attribute::of_ints({1, 1, 1, 1})},
                                  {"strides", ir::Attribute::of_ints({1, 1})}},
                                 "pool", "kiln"));
      ops::ShapeInference().run(g);
      v = p;
    }
    for (const auto& [oc, kh, kw] : convs) {
      const int64_t ic = v->type.static_dims()[3];
      const std::string name = "conv" + std::to_string(made++);
      ir::Value* w = g.add_constant(name + "_w", zeros({oc, ic, kh, kw}));
      ir::Value* b = g.add_constant(name + "_b", zeros({oc}));
      ir::Value* y = g.add_value(name);
      ir::Attributes a{{"pads", ir::Attribute::of_ints({kh / 2, kw / 2, kh / 2, kw / 2})},
                       {"strides", ir::Attribute::of_ints({1, 1})},
                       {"channels_last", ir::Attribute::of_int(1)},
                       {"activation", ir::Attribute::of_string("Relu")}};
      steps.push_back(g.add_node("FusedConv", {v, w, b}, {y}, a, name, "kiln"));
      v = y;
      ops::ShapeInference().run(g);
    }
    branches.push_back(steps);
  }
};

// The L2 of the host where the blocks were measured (2 MiB a core).
constexpr int64_t kMeasuredL2 = 2 << 20;

// Inception's Mixed_5b-5d: 1x1; 1x1 -> 5x5; 1x1 -> 3x3 -> 3x3; pool -> 1x1 (5b: 192 channels in,
// 32 out of the pool branch; 5d: 288 and 64).
bool deals_mixed_5(int64_t hw, int64_t channels = 192, int64_t pooled = 32, int64_t l2 = kMeasuredL2) {
  Block b(hw, channels);
  b.branch({{64, 1, 1}});
  b.branch({{48, 1, 1}, {64, 5, 5}});
  b.branch({{64, 1, 1}, {96, 3, 3}, {96, 3, 3}});
  b.branch({{pooled, 1, 1}}, true);
  return conv_concat_deals(b.branches, 2, l2);
}

// Mixed_6b-6d: 1x1; 1x1 -> 1x7 -> 7x1; 1x1 -> 7x1 -> 1x7 -> 7x1 -> 1x7; pool -> 1x1.
bool deals_mixed_6(int64_t hw, int64_t mid) {
  Block b(hw, 768);
  b.branch({{192, 1, 1}});
  b.branch({{mid, 1, 1}, {mid, 1, 7}, {192, 7, 1}});
  b.branch({{mid, 1, 1}, {mid, 7, 1}, {mid, 1, 7}, {mid, 7, 1}, {192, 1, 7}});
  b.branch({{192, 1, 1}}, true);
  return conv_concat_deals(b.branches, 2, kMeasuredL2);
}

TEST(ConvConcatDeals, InceptionBlocksWhereDealingMeasuredFaster) {
  EXPECT_TRUE(deals_mixed_5(17));
  EXPECT_FALSE(deals_mixed_5(35));
  EXPECT_TRUE(deals_mixed_6(8, 160));
  EXPECT_TRUE(deals_mixed_6(17, 160));  // Mixed_6c at 299 pixels: 3.08 against 3.14 ms split
  EXPECT_FALSE(deals_mixed_6(17, 128));
}

// Mixed_5d at 35x35 (299 pixels): its branches' costs deal out evenly, but its pool branch works
// through 2.8 MB (the block input and its pooled copy), more than the L2: split, 1.74 against
// 1.93 ms dealt (bench/results/experiments-20261207-session49.md). With twice the L2 it is dealt.
TEST(ConvConcatDeals, BranchesBeyondTheL2StaySplit) {
  EXPECT_FALSE(deals_mixed_5(35, 288, 64));
  EXPECT_TRUE(deals_mixed_5(35, 288, 64, 2 * kMeasuredL2));
  Block b(35, 288);
  b.branch({{64, 1, 1}}, true);
  EXPECT_DOUBLE_EQ(conv_concat_branch_bytes(b.branches[0]), 2.0 * 35 * 35 * 288 * 4);
}

TEST(ConvConcatDeals, NeedsTwoThreadsAndStepsItRuns) {
  Block b(8, 64);
  b.branch({{32, 1, 1}, {32, 3, 3}});
  b.branch({{32, 1, 1}, {32, 3, 3}});
  EXPECT_TRUE(conv_concat_deals(b.branches, 2, kMeasuredL2));
  EXPECT_FALSE(conv_concat_deals(b.branches, 1, kMeasuredL2));
  // A step with a residual input is not one the kernel runs.
  Block r(8, 64);
  r.branch({{32, 1, 1}, {32, 3, 3}});
  r.branch({{32, 1, 1}, {32, 3, 3}});
  ir::Node* first = const_cast<ir::Node*>(r.branches[0][0]);
  const std::vector<ir::Value*> ins = first->inputs();
  r.g.add_node("FusedConv", {ins[0], ins[1], ins[2], first->output(0)}, {r.g.add_value("z")}, first->attrs, "res",
               "kiln");
  ops::ShapeInference().run(r.g);
  ASSERT_TRUE(r.g.nodes().back()->output(0)->type.is_static());
  std::vector<std::vector<const ir::Node*>> with_residual = r.branches;
  with_residual[0][0] = r.g.nodes().back();
  EXPECT_FALSE(conv_concat_deals(with_residual, 2, kMeasuredL2));
}

}  // namespace
}  // namespace kiln::backends::cpu
