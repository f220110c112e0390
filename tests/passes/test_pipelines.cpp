#include "frontend/onnx/exporter.h"
#include "frontend/onnx/importer.h"
#include "pass_test_util.h"

namespace kiln::passes::testing {

namespace {
// A little CNN + MLP head with the usual exporter noise.
void model(Builder& b) {
  ir::Value* x = b.in("input", {1, 3, 8, 8});
  ir::Value* v = b.op("Identity", {x});
  v = b.op("Conv", {v, b.rand({4, 3, 3, 3}), b.rand({4})}, {{"pads", Is({1, 1, 1, 1})}});
  v = b.op("BatchNormalization", {v, b.rand({4}, 0.5f, 1.5f), b.rand({4}), b.rand({4}), b.rand({4}, 0.5f, 1.f)});
  v = b.op("Clip", {v, b.scalar(0), b.scalar(6)});
  ir::Value* s = b.op("Shape", {v});
  ir::Value* n = b.op("Gather", {s, b.c(Tensor::scalar<int64_t>(0))});
  ir::Value* shape = b.op("Concat", {b.op("Unsqueeze", {n, b.ints({0})}), b.ints({-1})}, {{"axis", I(0)}});
  v = b.op("Reshape", {v, shape});
  v = b.op("Add", {b.op("MatMul", {v, b.rand({256, 10})}), b.rand({10})});
  v = b.op("Mul", {v, b.op("Sigmoid", {v})});
  b.out(b.op("Dropout", {v}));
}

std::unique_ptr<ir::Graph> optimized(int level, std::vector<PassStats>* stats = nullptr) {
  Builder b;
  model(b);
  OptimizeOptions o;
  o.level = level;
  o.verify = true;
  auto st = optimize(*b.g, o);
  if (stats) *stats = st;
  return std::move(b.g);
}

std::vector<Tensor> reference_outputs() {
  Builder b;
  model(b);
  ops::ShapeInference().run(*b.g);
  return run(*b.g, random_inputs(*b.g));
}
}  // namespace

TEST(Pipelines, EveryLevelKeepsOutputs) {
  std::vector<Tensor> want = reference_outputs();
  for (int level = 0; level <= 3; ++level) {
    SCOPED_TRACE("level " + std::to_string(level));
    auto g = optimized(level);
    Builder names;
    model(names);
    EXPECT_EQ(g->outputs()[0]->name(), names.g->outputs()[0]->name());
    std::vector<Tensor> got = run(*g, random_inputs(*g));
    expect_close(got[0], want[0], 1e-4);
  }
}

TEST(Pipelines, LevelsShrinkTheGraph) {
  std::vector<PassStats> stats;
  auto g0 = optimized(0), g1 = optimized(1, &stats), g3 = optimized(3);
  EXPECT_GT(g0->num_nodes(), g1->num_nodes());
  EXPECT_GE(g1->num_nodes(), g3->num_nodes());
  EXPECT_EQ(count(*g1, "BatchNormalization"), 0);
  EXPECT_EQ(count(*g1, "Shape"), 0);
  EXPECT_EQ(count(*g1, "Identity"), 0);
  EXPECT_EQ(count(*g1, "Dropout"), 0);
  EXPECT_EQ(count(*g1, "Gemm"), 1);
  for (const ir::Node* n : g1->nodes()) EXPECT_EQ(n->domain(), "") << n->describe();
  EXPECT_EQ(count(*g3, "FusedConv"), 1);
  EXPECT_EQ(count(*g3, "FusedGemm"), 1);  // Gemm + SiLU epilogue
  EXPECT_FALSE(stats.empty());
}

TEST(Pipelines, ExportRoundTrip) {
  std::vector<Tensor> want = reference_outputs();
  for (int level : {1, 3}) {
    auto g = optimized(level);
    std::string bytes = onnx_fe::export_model_bytes(*g);
    auto back = onnx_fe::load_model_bytes(bytes, ".");
    ir::verify(*back);
    ops::ShapeInference().run(*back);
    EXPECT_EQ(back->num_nodes(), g->num_nodes());
    EXPECT_EQ(back->opsets.count("kiln"), level == 3 ? 1u : 0u);
    std::vector<Tensor> got = run(*back, random_inputs(*back));
    expect_close(got[0], want[0], 1e-4);
  }
}

TEST(Pipelines, BadLevel) { EXPECT_THROW(make_pipeline(OptimizeOptions{.level = 7}), Error); }

}  // namespace kiln::passes::testing

namespace kiln::passes::testing {

// Level 3 keeps a densenet-style Concat of 13 feature maps whole (every kiln backend takes it, and
// an elementwise reader then gathers the pieces with no copy); a target that bounds its
// kernels' inputs asks for op fission instead.
TEST(Pipelines, WideConcatStaysWholeUnlessFissionIsAsked) {
  auto build = [](Builder& b) {
    std::vector<ir::Value*> maps;
    for (int i = 0; i < 13; ++i) maps.push_back(b.in("m" + std::to_string(i), {1, i == 0 ? 8 : 4, 3, 3}));
    b.out(b.op("Relu", {b.op("Concat", maps, {{"axis", I(1)}})}));
  };
  for (bool wide : {true, false}) {
    SCOPED_TRACE(wide ? "prefer_wide" : "fission");
    Builder b;
    build(b);
    OptimizeOptions o;
    o.level = 3;
    o.verify = true;
    o.prefer_wide = wide;
    optimize(*b.g, o);
    EXPECT_EQ(count(*b.g, "Concat"), wide ? 1 : 3);  // fission: one of the first 8, one of the other 5, one of both
  }
  EXPECT_TRUE(OptimizeOptions{}.prefer_wide);
}

}  // namespace kiln::passes::testing
