// The cpu backend's kiln.SkipLayerNorm against the reference kernel.
#include "kernel_check.h"

namespace kiln {
namespace {

using kernel_check::Case;
using kernel_check::check;

ir::Attributes eps(float e = 1e-5f) { return {{"epsilon", ir::Attribute::of_float(e)}}; }

Case sln(std::vector<int64_t> dims, int params, bool with_sum) {
  const int64_t h = dims.back();
  Case c{"SkipLayerNorm", "kiln", {dims, dims}, {false, false}, {dims}, eps()};
  for (int i = 0; i < params; ++i) {
    c.in_dims.push_back({h});
    c.constant.push_back(true);
  }
  if (with_sum) c.out_dims.push_back(dims);
  return c;
}

TEST(CpuSkipLayerNorm, OddShapesWithAndWithoutSum) {
  for (bool with_sum : {false, true}) {
    for (std::vector<int64_t> dims : {std::vector<int64_t>{2, 7, 13}, {3, 1000}, {5}, {4, 16}, {2, 3, 31}}) {
      check(sln(dims, 2, with_sum));  // gamma, beta
      check(sln(dims, 1, with_sum));  // gamma only
    }
  }
}

TEST(CpuSkipLayerNorm, BiasAndAbsentBeta) {
  // The optional inputs are positional: beta absent, bias present.
  ir::Graph g;
  g.opsets[""] = 17;
  g.opsets["kiln"] = 1;
  std::mt19937 rng(3);
  const std::vector<int64_t> d{3, 37};
  ir::Value* x = g.add_input("x", ir::TensorType::from_dims(DType::Float, d));
  ir::Value* s = g.add_input("s", ir::TensorType::from_dims(DType::Float, d));
  Tensor gamma = kernel_check::random_tensor({37}, rng), bias = kernel_check::random_tensor({37}, rng);
  ir::Value* y = g.add_value("y", ir::TensorType::from_dims(DType::Float, d));
  ir::Value* sum = g.add_value("sum", ir::TensorType::from_dims(DType::Float, d));
  ir::Node* n = g.add_node("SkipLayerNorm", {x, s, g.add_constant("gamma", gamma), nullptr, g.add_constant("bias", bias)},
                           {y, sum}, eps(1e-12f), "n", "kiln");
  Tensor xt = kernel_check::random_tensor(d, rng), st = kernel_check::random_tensor(d, rng);
  const std::vector<Tensor> want = ops::run_reference(*n, {&xt, &st, &gamma, nullptr, &bias});
  auto kernel = backends::make_cpu_backend(1)->create(*n);
  ASSERT_NE(kernel, nullptr);
  Tensor yt(DType::Float, d), sumt(DType::Float, d);
  kernel->run({&xt, &st, &gamma, nullptr, &bias}, {&yt, &sumt});
  for (int64_t i = 0; i < yt.numel(); ++i) {
    EXPECT_NEAR(yt.data<float>()[i], want[0].data<float>()[i], 1e-4f) << i;
    EXPECT_EQ(sumt.data<float>()[i], want[1].data<float>()[i]) << i;
  }
}

TEST(CpuSkipLayerNorm, ThreadsOffsetRowsAndRuntimeParams) {
  Case c = sln({96, 512}, 2, true);  // big enough for a team of two
  c.threads = 2;
  c.concurrent = true;
  c.constant = {false, false, false, false};  // gamma and beta as runtime inputs
  c.fill = [](size_t i, Tensor& t) {  // sums far from zero: the variance must not cancel
    if (i == 0)
      for (int64_t k = 0; k < t.numel(); ++k) t.data<float>()[k] += 100.f;
  };
  c.tol = 1e-3f;
  check(c);
}

TEST(CpuSkipLayerNorm, Declines) {
  // float64 and run-time shapes stay on the reference kernel.
  auto declined = [](DType dt, ir::Dim batch) {
    ir::Graph g;
    g.opsets[""] = 17;
    g.opsets["kiln"] = 1;
    const ir::TensorType t(dt, {batch, 8});
    ir::Value* y = g.add_value("y", t);
    ir::Node* n = g.add_node("SkipLayerNorm", {g.add_input("x", t), g.add_input("s", t), g.add_constant("g", Tensor(dt, {8}))},
                             {y}, eps(), "n", "kiln");
    return backends::make_cpu_backend(1)->create(*n) == nullptr;
  };
  EXPECT_FALSE(declined(DType::Float, 3));
  EXPECT_TRUE(declined(DType::Double, 3));
  EXPECT_TRUE(declined(DType::Float, ir::Dim::sym("batch")));
}

}  // namespace
}  // namespace kiln
