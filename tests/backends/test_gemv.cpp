// The one-row Gemm kernel (gemv.cpp) against the reference kernel: transposes, alpha/beta, bias
// shapes, row counts off the 4- and 16-row blocks, two threads (splitting the outputs, or the
// inputs when there are fewer output blocks than threads), and kiln.FusedGemm's activations.
#include "kernel_check.h"

namespace kiln {
namespace {

using kernel_check::Case;
using kernel_check::check;

ir::Attributes gemm_attrs(int64_t ta, int64_t tb, float alpha = 1.f, float beta = 1.f) {
  return {{"transA", ir::Attribute::of_int(ta)},
          {"transB", ir::Attribute::of_int(tb)},
          {"alpha", ir::Attribute::of_float(alpha)},
          {"beta", ir::Attribute::of_float(beta)}};
}

TEST(Gemv, IsTheFirstCandidateForOneRow) {
  auto backend = backends::make_cpu_backend(1);
  ir::Graph g;
  g.opsets[""] = 17;
  ir::Value* a = g.add_input("a", ir::TensorType::from_dims(DType::Float, {1, 19}));
  ir::Value* y = g.add_value("y");
  ir::Node* n = g.add_node("Gemm", {a, g.add_constant("b", Tensor(DType::Float, {19, 37}))}, {y}, {}, "gemm");
  g.add_output(y);
  ops::ShapeInference().run(g);
  auto c = backend->candidates(*n);
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c[0].spec.impl, "gemv");
  EXPECT_TRUE(c[0].make());
}

TEST(Gemv, TransposesAndOddSizes) {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (int64_t k : {1, 19, 16, 1283})
        for (int64_t n : {1, 3, 37, 1000}) {
          SCOPED_TRACE(std::to_string(ta) + std::to_string(tb) + " k" + std::to_string(k) + " n" + std::to_string(n));
          std::vector<int64_t> a = ta ? std::vector<int64_t>{k, 1} : std::vector<int64_t>{1, k};
          std::vector<int64_t> b = tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n};
          Case c{"Gemm", "", {a, b, {n}}, {false, true, true}, {{1, n}}, gemm_attrs(ta, tb)};
          c.tol = 1e-4f * static_cast<float>(std::max<int64_t>(1, k / 64));
          check(c);
        }
}

TEST(Gemv, BiasShapesAlphaBeta) {
  for (std::vector<int64_t> c : {std::vector<int64_t>{37}, {1, 37}, {1}, {}}) {
    SCOPED_TRACE(std::to_string(c.size()));
    check({"Gemm", "", {{1, 29}, {29, 37}, c}, {false, true, true}, {{1, 37}}, gemm_attrs(0, 0, 0.5f, 2.f)});
  }
  check({"Gemm", "", {{1, 29}, {37, 29}}, {false, true}, {{1, 37}}, gemm_attrs(0, 1, -1.5f)});
  check({"Gemm", "", {{1, 29}, {37, 29}, {37}}, {false, true, true}, {{1, 37}}, gemm_attrs(0, 1, 1.f, 0.f)});
}

TEST(Gemv, TwoThreads) {
  Case c{"Gemm", "", {{1, 1280}, {1000, 1280}, {1000}}, {false, true, true}, {{1, 1000}}, gemm_attrs(0, 1)};
  c.threads = 2;
  c.concurrent = true;
  c.tol = 1e-3f;
  check(c);
}

// Fewer output blocks than threads (a squeeze-excitation's first FC, 1152 -> 48, and an odd
// 701 -> 30): the threads split the inputs and add their shares.
TEST(Gemv, TwoThreadsSplitTheInputs) {
  for (auto [k, n] : {std::pair<int64_t, int64_t>{1152, 48}, {701, 30}}) {
    SCOPED_TRACE("k " + std::to_string(k) + " n " + std::to_string(n));
    Case c{"Gemm", "", {{1, k}, {n, k}, {n}}, {false, true, true}, {{1, n}}, gemm_attrs(0, 1)};
    c.threads = 2;
    c.concurrent = true;
    c.tol = 1e-3f;
    check(c);
  }
}

// kiln.FusedGemm (a Gemm and its activation: an MLP's hidden layers at batch 1) on gemv, the
// activation applied per block of outputs, at 1 and 2 threads.
TEST(Gemv, FusedGemmActivations) {
  const std::pair<const char*, std::vector<float>> acts[] = {
      {"Relu", {}}, {"Clip", {-0.2f, 0.3f}}, {"Sigmoid", {}}, {"LeakyRelu", {0.1f}}};
  for (const auto& [act, params] : acts)
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::string(act) + " threads " + std::to_string(threads));
      ir::Attributes a = gemm_attrs(0, 1, 0.5f);
      a["activation"] = ir::Attribute::of_string(act);
      if (!params.empty()) a["activation_params"] = ir::Attribute::of_floats(params);
      Case c{"FusedGemm", "kiln", {{1, 256}, {517, 256}, {517}}, {false, true, true}, {{1, 517}}, a};
      c.threads = threads;
      c.concurrent = threads == 2;
      c.tol = 1e-4f * 4;
      check(c);
      ir::Graph g;
      g.opsets[""] = 17;
      g.opsets["kiln"] = 1;
      ir::Value* x = g.add_input("x", ir::TensorType::from_dims(DType::Float, {1, 256}));
      ir::Value* y = g.add_value("y");
      ir::Node* n = g.add_node("FusedGemm", {x, g.add_constant("w", Tensor(DType::Float, {517, 256}))}, {y}, a, "n",
                               "kiln");
      g.add_output(y);
      ops::ShapeInference().run(g);
      const auto cands = backends::make_cpu_backend(threads)->candidates(*n);
      ASSERT_FALSE(cands.empty());
      EXPECT_EQ(cands[0].spec.impl, "gemv");
    }
}

}  // namespace
}  // namespace kiln
