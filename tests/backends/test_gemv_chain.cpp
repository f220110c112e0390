// kiln.GemvChain (src/lower/fuse_gemv_chain.cpp, src/backends/cpu/gemv_chain.cpp): two one-row
// products in a row, formed by the cpu lowering pipeline where the second is too small to split,
// and run against its body on the reference kernels: odd sizes (a last block of the first
// product's outputs partly filled), both layouts of B, alpha and beta, activations on either
// product, 1 to 3 threads and two callers at once.
#include "kernel_check.h"

#include "lower/pipelines.h"

namespace kiln {
namespace {

using kernel_check::random_tensor;

struct Product {
  int64_t n;                 // outputs
  bool trans_b = true;       // B as [n, k] (a PyTorch Linear's weight), else [k, n]
  float alpha = 1.f, beta = 1.f;
  const char* act = "";      // "" = a plain Gemm, else a kiln.FusedGemm with this activation
};

// x [1, k] -> first -> second; returns the graph lowered for `threads` threads.
std::unique_ptr<ir::Graph> mlp(int64_t k, const Product& first, const Product& second, std::mt19937& rng,
                               bool second_reader = false) {
  auto g = std::make_unique<ir::Graph>();
  g->opsets[""] = 17;
  g->opsets["kiln"] = 1;
  ir::Value* x = g->add_input("x", ir::TensorType::from_dims(DType::Float, {1, k}));
  auto product = [&](ir::Value* a, int64_t in, const Product& p, const std::string& name) {
    ir::Value* y = g->add_value(name);
    ir::Attributes attrs{{"transB", ir::Attribute::of_int(p.trans_b ? 1 : 0)},
                         {"alpha", ir::Attribute::of_float(p.alpha)},
                         {"beta", ir::Attribute::of_float(p.beta)}};
    if (*p.act) attrs["activation"] = ir::Attribute::of_string(p.act);
    const std::vector<int64_t> wd = p.trans_b ? std::vector<int64_t>{p.n, in} : std::vector<int64_t>{in, p.n};
    g->add_node(*p.act ? "FusedGemm" : "Gemm",
                {a, g->add_constant(name + "_w", random_tensor(wd, rng)), g->add_constant(name + "_b", random_tensor({p.n}, rng))},
                {y}, attrs, name, *p.act ? "kiln" : "");
    return y;
  };
  ir::Value* h = product(x, k, first, "first");
  g->add_output(product(h, first.n, second, "second"));
  if (second_reader) g->add_output(product(h, first.n, second, "other"));
  ops::ShapeInference().run(*g);
  return g;
}

int lower_for(ir::Graph& g, int threads, const std::vector<std::string>& disabled = {}) {
  auto backend = backends::make_cpu_backend(threads);
  backend->set_disabled_kernels(disabled);
  lower::LoweringTarget t;
  t.backend = "cpu";
  t.channels_last = true;
  t.threads = threads;
  t.can_fuse = [&](const ir::Node& n) { return backend->can_fuse(n); };
  t.chains_gemvs = [&](const ir::Node& a, const ir::Node& b) { return backend->chains_gemvs(a, b); };
  return lower::run_lowering(g, t).layout.gemv_chains;
}

void check_chain(int64_t k, const Product& first, const Product& second) {
  SCOPED_TRACE("k " + std::to_string(k) + " -> " + std::to_string(first.n) + " -> " + std::to_string(second.n));
  std::mt19937 rng(7);
  auto g = mlp(k, first, second, rng);
  ASSERT_EQ(lower_for(*g, 2), 1);
  const ir::Node* n = nullptr;
  for (const ir::Node* c : g->nodes())
    if (c->op_type() == "GemvChain") n = c;
  ASSERT_TRUE(n);
  ASSERT_EQ(n->num_inputs(), 1);
  const Tensor x = random_tensor({1, k}, rng);
  const Tensor expected = ops::run_reference(*n, {&x})[0];
  ASSERT_EQ(expected.dims(), (std::vector<int64_t>{1, second.n}));
  const float tol = 1e-4f * static_cast<float>(std::max<int64_t>(4, (k + first.n) / 64));
  for (int threads : {1, 2, 3}) {
    auto cpu = backends::make_cpu_backend(threads);
    auto kernel = cpu->create(*n);
    ASSERT_TRUE(kernel);
    EXPECT_EQ(kernel->spec().impl, "kiln_gemv_chain");
    auto run_and_compare = [&] {
      Tensor actual(DType::Float, expected.dims());
      kernel->run({&x}, {&actual});
      for (int64_t i = 0; i < expected.numel(); ++i) {
        const float e = expected.data<float>()[i];
        ASSERT_NEAR(actual.data<float>()[i], e, tol * std::max(1.f, std::fabs(e))) << "threads " << threads << " at " << i;
      }
    };
    run_and_compare();
    run_and_compare();  // a second run over the same scratch
    std::thread other(run_and_compare);  // two callers at once
    run_and_compare();
    other.join();
  }
}

// An MLP's last layers (mlp_small: 512 -> 512 -> 10), then odd sizes: 203 outputs (a last block
// of 11), 65 (two blocks, the second of one output), and the second product 64 wide.
TEST(GemvChain, MatchesTheReference) {
  check_chain(256, {512, true, 1.f, 1.f, "Relu"}, {10});
  check_chain(97, {203, false, 0.5f, 2.f, "Relu"}, {7, false});
  check_chain(300, {130, true, 1.f, 0.f, ""}, {64, true, -1.5f, 1.f, "Sigmoid"});
  check_chain(1283, {65, true, 1.f, 1.f, "Tanh"}, {1, true, 2.f, 0.5f});
}

// Not chained: at one thread; a second product as wide as two blocks of outputs (64 each); a
// first product too small to split (under 16K multiply-adds); a first output read twice; the
// kernel disabled.
TEST(GemvChain, FormsOnlyWhereItPays) {
  std::mt19937 rng(3);
  EXPECT_EQ(lower_for(*mlp(256, {512, true, 1.f, 1.f, "Relu"}, {10}, rng), 1), 0);
  EXPECT_EQ(lower_for(*mlp(256, {512, true, 1.f, 1.f, "Relu"}, {100}, rng), 2), 0);
  EXPECT_EQ(lower_for(*mlp(16, {128, true, 1.f, 1.f, "Relu"}, {10}, rng), 2), 0);
  EXPECT_EQ(lower_for(*mlp(256, {512, true, 1.f, 1.f, "Relu"}, {10}, rng, true), 2), 0);
  EXPECT_EQ(lower_for(*mlp(256, {512, true, 1.f, 1.f, "Relu"}, {10}, rng), 2, {"kiln_gemv_chain"}), 0);
}

}  // namespace
}  // namespace kiln
