// kiln.PrologueConv (src/lower/fuse_conv_prologue.cpp, src/backends/cpu/prologue_conv.cpp): a
// 1x1 conv that computes its elementwise input a chunk of pixels at a time, formed by the cpu
// lowering pipeline and run against its body on the reference kernels: DenseNet's form (a
// Concat of odd-width pieces, a per-channel scale and shift, Relu) and a normalized tensor before
// a conv with a residual, on 1 and 2 threads.
#include "kernel_check.h"

#include "backends/cpu/simd.h"
#include "lower/pipelines.h"

namespace kiln {
namespace {

using kernel_check::random_tensor;

// Per-channel scales in [0.2, 1]: a normalization that keeps every channel.
Tensor random_scale(int64_t channels, std::mt19937& rng) {
  Tensor t = random_tensor({channels}, rng);
  for (int64_t i = 0; i < channels; ++i) t.data<float>()[i] = 0.6f + 0.4f * t.data<float>()[i];
  return t;
}

// pieces: the channel widths of the Concat (one piece: no Concat), scaled and shifted per channel
// and through Relu; with `residual`, the conv adds a graph input. Pixels 2 x 5 x 7.
void check_prologue_conv(const std::vector<int64_t>& pieces, bool residual, int64_t outputs) {
  std::mt19937 rng(23);
  ir::Graph g;
  g.opsets[""] = 17;
  g.opsets["kiln"] = 1;
  std::vector<ir::Value*> xs;
  std::vector<Tensor> feeds;
  int64_t K = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    xs.push_back(g.add_input("p" + std::to_string(i), ir::TensorType::from_dims(DType::Float, {2, 5, 7, pieces[i]})));
    feeds.push_back(random_tensor({2, 5, 7, pieces[i]}, rng));
    K += pieces[i];
  }
  ir::Value* h = xs[0];
  if (xs.size() > 1) {
    h = g.add_value("cat");
    g.add_node("Concat", xs, {h}, {{"axis", ir::Attribute::of_int(3)}}, "cat");
  }
  ir::Value *m = g.add_value("m"), *a = g.add_value("a"), *r = g.add_value("r");
  g.add_node("Mul", {h, g.add_constant("s", random_scale(K, rng))}, {m}, {}, "mul");
  g.add_node("Add", {m, g.add_constant("t", random_tensor({K}, rng))}, {a}, {}, "add");
  g.add_node("Relu", {a}, {r}, {}, "relu");
  std::vector<ir::Value*> conv_in = {r, g.add_constant("w", random_tensor({outputs, K, 1, 1}, rng)),
                                     g.add_constant("b", random_tensor({outputs}, rng))};
  if (residual) {
    conv_in.push_back(g.add_input("z", ir::TensorType::from_dims(DType::Float, {2, 5, 7, outputs})));
    feeds.push_back(random_tensor({2, 5, 7, outputs}, rng));
  }
  ir::Value* y = g.add_value("y");
  g.add_node("FusedConv", conv_in, {y},
             {{"channels_last", ir::Attribute::of_int(1)}, {"activation", ir::Attribute::of_string("Relu")}}, "conv",
             "kiln");
  g.add_output(y);
  ops::ShapeInference().run(g);

  auto backend = backends::make_cpu_backend(2);
  lower::LoweringTarget t;
  t.backend = "cpu";
  t.channels_last = true;
  t.threads = 2;
  t.can_fuse = [&](const ir::Node& n) { return backend->can_fuse(n); };
  t.takes_conv_prologue = [&](const ir::Node& n) { return backend->takes_conv_prologue(n); };
  const lower::LoweringStats st = lower::run_lowering(g, t);
  ASSERT_EQ(st.layout.conv_prologues, 1);
  const ir::Node* n = nullptr;
  for (const ir::Node* c : g.nodes())
    if (c->op_type() == "PrologueConv") n = c;
  ASSERT_TRUE(n);
  // The node's inputs in its order, from the graph inputs they are.
  std::vector<const Tensor*> in;
  for (const ir::Value* v : n->inputs()) {
    const auto& gi = g.inputs();
    const size_t k = std::find(gi.begin(), gi.end(), v) - gi.begin();
    ASSERT_LT(k, feeds.size()) << v->name();
    in.push_back(&feeds[k]);
  }
  const Tensor expected = ops::run_reference(*n, in)[0];
  ASSERT_EQ(expected.dims(), (std::vector<int64_t>{2, 5, 7, outputs}));
  for (int threads : {1, 2}) {
    auto cpu = backends::make_cpu_backend(threads);
    auto kernel = cpu->create(*n);
    ASSERT_TRUE(kernel);
    kernel->wait_ready();
    Tensor actual(DType::Float, expected.dims());
    kernel->run(in, {&actual});
    for (int64_t i = 0; i < expected.numel(); ++i) {
      const float e = expected.data<float>()[i];
      ASSERT_NEAR(actual.data<float>()[i], e, 1e-4 * std::max(1.f, std::fabs(e))) << "threads " << threads << " at " << i;
    }
  }
}

TEST(PrologueConv, DenseNetsNormalizedConcat) {
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "kiln's 1x1 kernel needs AVX-512";
  check_prologue_conv({13, 19, 6}, false, 21);
  check_prologue_conv({64, 32, 32, 32}, false, 128);
}

TEST(PrologueConv, NormalizedTensorBeforeAResidualConv) {
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "kiln's 1x1 kernel needs AVX-512";
  check_prologue_conv({24}, true, 40);
  check_prologue_conv({300}, true, 70);
}

}  // namespace
}  // namespace kiln
