// The lowering pipelines (lower/pipelines.cpp): the cpu pipeline's passes in order, each one
// skipped by name, pass options, no passes without a backend, and per-pass stats that say
// what changed.
#include "lower/pipelines.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "ops/core/infer_graph.h"

namespace kiln::lower {
namespace {

std::vector<std::string> names(const LoweringStats& st) {
  std::vector<std::string> r;
  for (const passes::PassStats& p : st.passes) r.push_back(p.pass);
  return r;
}

LoweringTarget cpu_like() {
  LoweringTarget t;
  t.backend = "cpu";
  t.channels_last = true;
  t.can_fuse = [](const ir::Node&) { return true; };
  t.takes_conv_prologue = [](const ir::Node&) { return true; };
  return t;
}

// x -> Conv(3x3) -> Relu -> y, with a Constant node feeding an Add.
std::unique_ptr<ir::Graph> conv_relu() {
  auto g = std::make_unique<ir::Graph>();
  g->opsets[""] = 13;
  ir::Value* x = g->add_input("x", ir::TensorType::from_dims(DType::Float, {1, 16, 8, 8}));
  ir::Value* w = g->add_constant("w", Tensor(DType::Float, {16, 16, 3, 3}));
  ir::Value* c = g->add_value("c");
  g->add_node("Constant", {}, {c}, {{"value", ir::Attribute::of_tensor(Tensor::from_vector<float>({1}, {0.5f}))}}, "k");
  ir::Value *t = g->add_value("t"), *r = g->add_value("r"), *y = g->add_value("y");
  g->add_node("Conv", {x, w}, {t}, {{"pads", ir::Attribute::of_ints({1, 1, 1, 1})}}, "conv");
  g->add_node("Relu", {t}, {r}, {}, "relu");
  g->add_node("Add", {r, c}, {y}, {}, "add");
  g->add_output(y);
  ops::ShapeInference().run(*g);
  return g;
}

TEST(LoweringPipelines, CpuPipelineRunsItsPassesInOrderWithStats) {
  auto g = conv_relu();
  LoweringStats st = run_lowering(*g, cpu_like());
  const std::vector<std::string> want = {"materialize_constants", "constant_folding", "dce",
                                         "channels_last",         "channel_shuffle",  "anchor_epilogues",
                                         "collapse_groups",       "channel_scale",    "conv_concat",
                                         "concat_elementwise",    "conv_chain",       "conv_prologue",
                                         "blocked_layout"};
  EXPECT_EQ(names(st), want);
  for (const passes::PassStats& p : st.passes) EXPECT_EQ(p.runs, 1) << p.pass;
  auto changed = [&](const std::string& pass) {
    for (const passes::PassStats& p : st.passes)
      if (p.pass == pass) return p.changed > 0;
    return false;
  };
  EXPECT_TRUE(changed("materialize_constants"));  // the Constant node
  EXPECT_TRUE(changed("channels_last"));          // the conv
  EXPECT_EQ(st.layout.channels_last_ops, 1);
  EXPECT_FALSE(changed("channel_shuffle"));
}

TEST(LoweringPipelines, DisabledPassesAndOptionsAreSkippedByName) {
  for (const std::string& name : lowering_pass_names()) {
    auto g = conv_relu();
    LoweringTarget t = cpu_like();
    t.disabled = {name};
    const std::vector<std::string> ran = names(run_lowering(*g, t));
    EXPECT_EQ(std::count(ran.begin(), ran.end(), name), 0) << name;
  }
  auto g = conv_relu();
  LoweringTarget t = cpu_like();
  t.disabled = {"channels_last"};
  EXPECT_EQ(run_lowering(*g, t).layout.channels_last_ops, 0);
  for (const ir::Node* n : g->nodes()) EXPECT_EQ(n->attr_int("channels_last", 0), 0) << n->describe();
}

TEST(LoweringPipelines, FusionLevelAndTargetDecideThePasses) {
  auto g = conv_relu();
  LoweringTarget t = cpu_like();
  t.fusion_level = 0;
  const std::vector<std::string> ran = names(run_lowering(*g, t));
  for (const char* fused : {"anchor_epilogues", "collapse_groups", "conv_concat", "conv_chain", "conv_prologue"})
    EXPECT_EQ(std::count(ran.begin(), ran.end(), fused), 0) << fused;
  auto h = conv_relu();
  LoweringTarget none;  // no backend: the reference kernels run the graph as it is
  EXPECT_TRUE(run_lowering(*h, none).passes.empty());
  EXPECT_EQ(h->num_nodes(), 4u);
  auto k = conv_relu();
  LoweringTarget rows = cpu_like();
  rows.channels_last = false;  // a backend without layout preferences
  const std::vector<std::string> plain = names(run_lowering(*k, rows));
  EXPECT_EQ(std::count(plain.begin(), plain.end(), "channels_last"), 0);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), "collapse_groups"), 1);
}

// x * s + t -> Relu -> 1x1 Conv -> 2x2 AveragePool on an NHWC image (DenseNet's transition): the conv takes the
// elementwise group as its prologue rather than starting a chain with the pool, which would
// leave the group to write its whole output first; without the prologue pass the chain forms.
TEST(LoweringPipelines, AConvThatTakesItsPrologueStartsNoChain) {
  auto transition = [] {
    auto g = std::make_unique<ir::Graph>();
    g->opsets[""] = 13;
    // An NHWC image, so that the layout keeps the whole graph channels-last.
    ir::Value* image = g->add_input("image", ir::TensorType::from_dims(DType::Float, {1, 56, 56, 64}));
    ir::Value* x = g->add_value("x");
    g->add_node("Transpose", {image}, {x}, {{"perm", ir::Attribute::of_ints({0, 3, 1, 2})}}, "nchw");
    ir::Value* s = g->add_constant("s", Tensor::from_vector<float>({1, 64, 1, 1}, std::vector<float>(64, 0.5f)));
    ir::Value* t = g->add_constant("t", Tensor::from_vector<float>({1, 64, 1, 1}, std::vector<float>(64, 0.25f)));
    ir::Value* w = g->add_constant("w", Tensor(DType::Float, {128, 64, 1, 1}));
    ir::Value *m = g->add_value("m"), *a = g->add_value("a"), *r = g->add_value("r"), *c = g->add_value("c"),
              *y = g->add_value("y");
    g->add_node("Mul", {x, s}, {m}, {}, "mul");
    g->add_node("Add", {m, t}, {a}, {}, "add");
    g->add_node("Relu", {a}, {r}, {}, "relu");
    g->add_node("Conv", {r, w}, {c}, {}, "conv");
    g->add_node("AveragePool", {c}, {y},
                {{"kernel_shape", ir::Attribute::of_ints({2, 2})}, {"strides", ir::Attribute::of_ints({2, 2})}}, "pool");
    g->add_output(y);
    ops::ShapeInference().run(*g);
    return g;
  };
  auto g = transition();
  LoweringStats st = run_lowering(*g, cpu_like());
  EXPECT_EQ(st.layout.conv_prologues, 1);
  EXPECT_EQ(st.layout.conv_chains, 0);
  auto h = transition();
  LoweringTarget t = cpu_like();
  t.disabled = {"conv_prologue"};
  st = run_lowering(*h, t);
  EXPECT_EQ(st.layout.conv_prologues, 0);
  EXPECT_EQ(st.layout.conv_chains, 1);
}

}  // namespace
}  // namespace kiln::lower
