#include <kiln/error.h>

#include <cmath>

#include "op_test_util.h"

namespace kiln::testing {

namespace {
using A = ir::Attribute;
const char* const kDomain = "ai.onnx.preview.training";

std::vector<Tensor> step(const std::string& op, std::vector<Tensor> ins, ir::Attributes attrs, int outs) {
  return run_op({.op = op, .inputs = std::move(ins), .attrs = std::move(attrs), .num_outputs = outs, .domain = kDomain});
}
Tensor f(float v) { return Tensor::from_vector<float>({1}, {v}); }
Tensor R(float v) { return Tensor::scalar<float>(v); }
Tensor Tn(int64_t v) { return Tensor::scalar<int64_t>(v); }

ir::Attributes momentum(float alpha, float beta, const char* mode, float norm = 0) {
  return {{"alpha", A::of_float(alpha)}, {"beta", A::of_float(beta)}, {"mode", A::of_string(mode)},
          {"norm_coefficient", A::of_float(norm)}};
}
}  // namespace

TEST(Adagrad, SingleStepHandComputed) {
  // g = 2, h = 0 + 4, x = 1 - 0.1 * 2 / 2.
  auto y = step("Adagrad", {R(0.1f), Tn(0), f(1), f(2), f(0)}, {}, 2);
  expect_near(y[0], f(0.9f));
  expect_near(y[1], f(4));
  // Decay, epsilon and the L2 term: r = 0.1 / (1 + 3 * 0.5), g = 0.5 * 1 + 2 = 2.5, h = 1 + 6.25.
  auto z = step("Adagrad", {R(0.1f), Tn(3), f(1), f(2), f(1)},
                {{"decay_factor", A::of_float(0.5f)}, {"epsilon", A::of_float(0.25f)}, {"norm_coefficient", A::of_float(0.5f)}}, 2);
  expect_near(z[0], f(static_cast<float>(1 - 0.04 * 2.5 / (std::sqrt(7.25) + 0.25))));
  expect_near(z[1], f(7.25f));
  // The default epsilon (1e-6) keeps a zero gradient on a zero history from giving 0/0.
  auto zero = step("Adagrad", {R(0.1f), Tn(0), f(1), f(0), f(0)}, {}, 2);
  expect_near(zero[0], f(1));
}

TEST(Adagrad, TwoTensorsOddShape) {
  Tensor x1 = random_float({3, 5}, -1, 1, 1), g1 = random_float({3, 5}, -1, 1, 2), h1 = random_float({3, 5}, 0, 1, 3);
  Tensor x2 = Tensor::from_vector<double>({7}, {1, 2, 3, 4, 5, 6, 7}), g2 = Tensor::from_vector<double>({7}, {1, 1, 1, 1, 1, 1, 1}),
         h2 = Tensor(DType::Double, {7});
  auto y = step("Adagrad", {R(0.5f), Tn(0), x1, x2, g1, g2, h1, h2}, {}, 4);
  ASSERT_EQ(y[0].dims(), x1.dims());
  for (int i = 0; i < 15; ++i) {
    double g = g1.data<float>()[i], h = h1.data<float>()[i] + g * g;
    EXPECT_NEAR(y[0].data<float>()[i], x1.data<float>()[i] - 0.5 * g / (std::sqrt(h) + 1e-6), 1e-5);
    EXPECT_NEAR(y[2].data<float>()[i], h, 1e-5);
  }
  for (int i = 0; i < 7; ++i) EXPECT_NEAR(y[1].data<double>()[i], i + 1 - 0.5 / (1 + 1e-6), 1e-12);
  expect_near(y[3], Tensor::from_vector<double>({7}, {1, 1, 1, 1, 1, 1, 1}));
}

TEST(Momentum, StandardAndNesterov) {
  // T = 0: the gradient enters at full weight: v = 0.9 * 1 + 2.
  auto s0 = step("Momentum", {R(0.1f), Tn(0), f(1), f(2), f(1)}, momentum(0.9f, 0.1f, "standard"), 2);
  expect_near(s0[0], f(1 - 0.1f * 2.9f));
  expect_near(s0[1], f(2.9f));
  // Later steps scale it by beta: v = 0.9 + 0.2.
  auto s1 = step("Momentum", {R(0.1f), Tn(1), f(1), f(2), f(1)}, momentum(0.9f, 0.1f, "standard"), 2);
  expect_near(s1[0], f(1 - 0.1f * 1.1f));
  expect_near(s1[1], f(1.1f));
  auto n1 = step("Momentum", {R(0.1f), Tn(1), f(1), f(2), f(1)}, momentum(0.9f, 0.1f, "nesterov"), 2);
  expect_near(n1[0], f(1 - 0.1f * (2 + 0.9f * 1.1f)));
  // norm_coefficient adds an L2 gradient: g = 0.5 * 1 + 2.
  auto r = step("Momentum", {R(0.1f), Tn(0), f(1), f(2), f(0)}, momentum(0.9f, 0.1f, "standard", 0.5f), 2);
  expect_near(r[1], f(2.5f));
}

TEST(Adam, HandComputed) {
  ir::Attributes a = {{"alpha", A::of_float(0.5f)}, {"beta", A::of_float(0.5f)}, {"epsilon", A::of_float(0)}};
  // T = 0: no bias correction. v = 1, h = 2, x = 1 - 0.1 / sqrt(2).
  auto y0 = step("Adam", {R(0.1f), Tn(0), f(1), f(2), f(0), f(0)}, a, 3);
  expect_near(y0[0], f(static_cast<float>(1 - 0.1 / std::sqrt(2.0))));
  expect_near(y0[1], f(1));
  expect_near(y0[2], f(2));
  // T = 1: r = 0.1 * sqrt(0.5) / 0.5, which cancels the 1/sqrt(2): x = 0.9.
  auto y1 = step("Adam", {R(0.1f), Tn(1), f(1), f(2), f(0), f(0)}, a, 3);
  expect_near(y1[0], f(0.9f));
  // norm_coefficient_post shrinks the result.
  a["norm_coefficient_post"] = A::of_float(0.5f);
  auto y2 = step("Adam", {R(0.1f), Tn(1), f(1), f(2), f(0), f(0)}, a, 3);
  expect_near(y2[0], f(0.45f));
}

TEST(Adam, TwoTensorsAndTheDefaultEpsilon) {
  // Two parameter tensors (one of one element, one of two) in one node; without an epsilon
  // attribute the spec's default 1e-6 applies.
  auto v = [](std::vector<float> e) { return Tensor::from_vector<float>({static_cast<int64_t>(e.size())}, e); };
  const std::vector<Tensor> ins = {R(0.1f), Tn(0), v({1}), v({1, 2}), v({-1}), v({-1, -3}), v({2}), v({4, 1}), v({0.5f}), v({1, 10})};
  const double xs[3] = {1, 1, 2}, gs[3] = {-1, -1, -3}, vs[3] = {2, 4, 1}, hs[3] = {0.5, 1, 10};
  for (float eps : {-1.f, 0.01f}) {
    ir::Attributes a = {{"alpha", A::of_float(0.95f)}, {"beta", A::of_float(0.85f)}, {"norm_coefficient", A::of_float(0.001f)}};
    if (eps >= 0) a["epsilon"] = A::of_float(eps);
    const double e = eps >= 0 ? eps : 1e-6;
    auto y = step("Adam", ins, a, 6);
    ASSERT_EQ(y.size(), 6u);
    for (int i = 0; i < 3; ++i) {
      const int t = i == 0 ? 0 : 1, j = i == 0 ? 0 : i - 1;  // tensor, element
      const double g = 0.001f * xs[i] + gs[i];
      const double vn = 0.95f * vs[i] + (1 - 0.95f) * g, hn = 0.85f * hs[i] + (1 - 0.85f) * g * g;
      EXPECT_NEAR(y[t].data<float>()[j], xs[i] - 0.1f * vn / (std::sqrt(hn) + e), 1e-6) << "eps " << eps << " x " << i;
      EXPECT_NEAR(y[2 + t].data<float>()[j], vn, 1e-6);
      EXPECT_NEAR(y[4 + t].data<float>()[j], hn, 1e-6);
    }
  }
}

TEST(Optimizers, BadInputs) {
  // Groups of unequal size, wrong output count, mismatched shapes, missing attributes.
  EXPECT_THROW(step("Adagrad", {R(0.1f), Tn(0), f(1), f(2)}, {}, 2), kiln::Error);
  EXPECT_THROW(step("Adagrad", {R(0.1f), Tn(0), f(1), f(2), f(0)}, {}, 3), kiln::Error);
  EXPECT_THROW(step("Adagrad", {R(0.1f), Tn(0), f(1), Tensor::from_vector<float>({2}, {1, 2}), f(0)}, {}, 2), kiln::Error);
  EXPECT_THROW(step("Adam", {R(0.1f), Tn(0), f(1), f(2), f(0)}, {}, 3), kiln::Error);
  EXPECT_THROW(step("Momentum", {R(0.1f), Tn(0), f(1), f(2), f(0)}, {{"alpha", A::of_float(0.9f)}}, 2), kiln::Error);
  EXPECT_THROW(step("Momentum", {R(0.1f), Tn(0), f(1), f(2), f(0)}, momentum(0.9f, 0.1f, "heavy"), 2), kiln::Error);
  EXPECT_THROW(step("Adagrad", {R(0.1f), Tensor::scalar<float>(0), f(1), f(2), f(0)}, {}, 2), kiln::Error);
  EXPECT_THROW(step("Adagrad", {Tensor::from_vector<float>({2}, {0.1f, 0.1f}), Tn(0), f(1), f(2), f(0)}, {}, 2), kiln::Error);
}

}  // namespace kiln::testing
