// MatMul and kiln.FusedMatMul with constant weights on kiln's rows kernel (matmul_rows.cpp)
// against the reference kernel: leading dims folded into rows, odd sizes around the 16-wide
// vectors and 64-wide blocks, bias and activations (Sigmoid applied after the store, the others in registers), two threads
// splitting the rows or, where the weights dominate, the outputs.
#include "kernel_check.h"

#include "backends/cpu/pointwise_conv.h"
#include "backends/cpu/simd.h"

namespace kiln {
namespace {

using kernel_check::Case;
using kernel_check::check;

// The implementation the cpu backend runs a MatMul of A [a] by B [b] on: the first candidate
// that accepts it.
std::string chosen(const std::vector<int64_t>& a, const std::vector<int64_t>& b, bool b_constant) {
  ir::Graph g;
  g.opsets[""] = 17;
  ir::Value* x = g.add_input("a", ir::TensorType::from_dims(DType::Float, a));
  ir::Value* w = b_constant ? g.add_constant("b", Tensor(DType::Float, b))
                            : g.add_input("b", ir::TensorType::from_dims(DType::Float, b));
  ir::Value* y = g.add_value("y");
  ir::Node* n = g.add_node("MatMul", {x, w}, {y}, {}, "mm");
  g.add_output(y);
  ops::ShapeInference().run(g);
  const auto backend = backends::make_cpu_backend(1);  // the candidates refer to it
  for (const auto& c : backend->candidates(*n))
    if (c.make()) return c.spec.impl;
  return "";
}

TEST(MatMulRows, OddShapes) {
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "no AVX-512";
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{2, 1}, {1, 3}}, {{3, 5, 7}, {7, 9}}, {{2, 37}, {37, 70}}, {{1, 13, 100}, {100, 17}}, {{1, 128, 256}, {256, 200}}};
  for (const auto& [a, b] : shapes)
    for (int threads : {1, 2}) {
      SCOPED_TRACE("K " + std::to_string(b[0]) + " N " + std::to_string(b[1]) + " threads " + std::to_string(threads));
      std::vector<int64_t> y = a;
      y.back() = b[1];
      Case c{"MatMul", "", {a, b}, {false, true}, {y}};
      c.threads = threads;
      c.concurrent = threads == 2;
      c.tol = 2e-4f * static_cast<float>(std::max<int64_t>(1, b[0] / 64));
      check(c);
    }
}

TEST(MatMulRows, FusedBiasAndActivations) {
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "no AVX-512";
  const std::pair<const char*, std::vector<float>> acts[] = {
      {"", {}}, {"Relu", {}}, {"Clip", {-0.2f, 0.3f}}, {"Gelu", {}}, {"GeluTanh", {}}, {"Sigmoid", {}}};
  for (const auto& [act, params] : acts)
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::string(act) + " threads " + std::to_string(threads));
      ir::Attributes attrs;
      if (*act) attrs["activation"] = ir::Attribute::of_string(act);
      if (!params.empty()) attrs["activation_params"] = ir::Attribute::of_floats(params);
      Case c{"FusedMatMul", "kiln", {{1, 19, 96}, {96, 131}, {131}}, {false, true, true}, {{1, 19, 131}}, attrs};
      c.threads = threads;
      c.concurrent = threads == 2;
      c.tol = 4e-4f;
      check(c);
    }
}

TEST(MatMulRows, TakesConstantWeightsOfSeveralRows) {
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "no AVX-512";
  EXPECT_EQ(chosen({1, 128, 256}, {256, 256}, true), "kiln_matmul_rows");
  EXPECT_EQ(chosen({4, 3}, {3, 5}, true), "kiln_matmul_rows");
  // Weights computed at run time, a batched B and one row are other kernels' (oneDNN, gemv).
  EXPECT_NE(chosen({1, 128, 256}, {256, 256}, false), "kiln_matmul_rows");
  EXPECT_NE(chosen({2, 4, 3}, {2, 3, 5}, true), "kiln_matmul_rows");
  EXPECT_NE(chosen({1, 256}, {256, 10}, true), "kiln_matmul_rows");
}

// A team splits a linear layer's outputs only where its weights come from beyond the L2 and are
// at least twice its rows (in and out); there each core streams half of them, and the result is
// the reference's.
TEST(MatMulRows, TeamSplitsTheOutputsWhereTheWeightsDominate) {
  using backends::cpu::matmul_rows_split_outputs;
  EXPECT_TRUE(matmul_rows_split_outputs(49, 768, 3072, 2));    // swin_t's and convnext_tiny's last stage
  EXPECT_TRUE(matmul_rows_split_outputs(49, 3072, 768, 2));
  EXPECT_FALSE(matmul_rows_split_outputs(49, 768, 3072, 1));   // one thread
  EXPECT_FALSE(matmul_rows_split_outputs(196, 384, 1536, 2));  // their third stage: rows as large
  EXPECT_FALSE(matmul_rows_split_outputs(128, 256, 1024, 2));  // bert_tiny
  EXPECT_FALSE(matmul_rows_split_outputs(4, 64, 64, 2));       // weights in the L2
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "no AVX-512";
  ir::Graph g;
  g.opsets[""] = 17;
  ir::Value* x = g.add_input("a", ir::TensorType::from_dims(DType::Float, {1, 49, 768}));
  ir::Value* y = g.add_value("y");
  ir::Node* n = g.add_node("MatMul", {x, g.add_constant("b", Tensor(DType::Float, {768, 3072}))}, {y}, {}, "mm");
  g.add_output(y);
  ops::ShapeInference().run(g);
  const auto backend = backends::make_cpu_backend(2);
  const auto c = backend->candidates(*n);
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c[0].spec.impl, "kiln_matmul_rows");
  EXPECT_EQ(c[0].spec.get_string("split"), "outputs");
  Case k{"MatMul", "", {{1, 49, 768}, {768, 3072}}, {false, true}, {{1, 49, 3072}}};
  k.threads = 2;
  k.concurrent = true;
  k.tol = 2e-3f;
  check(k);
}

}  // namespace
}  // namespace kiln
