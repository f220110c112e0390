#include <kiln/error.h>

#include <cmath>

#include "op_test_util.h"

namespace kiln::testing {

namespace {
using A = ir::Attribute;

ir::Attributes red(const char* r) { return {{"reduction", A::of_string(r)}}; }
ir::Attributes red_ii(const char* r, int64_t ii) { return {{"reduction", A::of_string(r)}, {"ignore_index", A::of_int(ii)}}; }
}  // namespace

TEST(NegativeLogLikelihoodLoss, NoneSumMean2D) {
  Tensor x = Tensor::from_vector<float>({2, 3}, {-1, -2, -3, -4, -5, -6});
  Tensor t = Tensor::from_vector<int64_t>({2}, {1, 2});
  auto none = run_op({.op = "NegativeLogLikelihoodLoss", .inputs = {x, t}, .attrs = red("none")});
  expect_near(none[0], Tensor::from_vector<float>({2}, {2, 6}));
  auto sum = run_op({.op = "NegativeLogLikelihoodLoss", .inputs = {x, t}, .attrs = red("sum")});
  expect_near(sum[0], Tensor::scalar<float>(8));
  // Default reduction is mean.
  auto mean = run_op({.op = "NegativeLogLikelihoodLoss", .inputs = {x, t}, .opset = 12});
  expect_near(mean[0], Tensor::scalar<float>(4));
}

TEST(NegativeLogLikelihoodLoss, WeightsAndIgnoreIndex) {
  Tensor x = Tensor::from_vector<float>({3, 3}, {-1, -2, -3, -4, -5, -6, -7, -8, -9});
  Tensor t = Tensor::from_vector<int32_t>({3}, {0, 2, 1});
  Tensor w = Tensor::from_vector<float>({3}, {0.5f, 2, 4});
  // Weighted mean: (1*0.5 + 6*4 + 8*2) / (0.5 + 4 + 2).
  auto mean = run_op({.op = "NegativeLogLikelihoodLoss", .inputs = {x, t, w}});
  expect_near(mean[0], Tensor::scalar<float>((0.5f + 24 + 16) / 6.5f));
  // Ignoring class 2 drops the middle sample from both sums.
  auto ii = run_op({.op = "NegativeLogLikelihoodLoss", .inputs = {x, t, w}, .attrs = red_ii("mean", 2)});
  expect_near(ii[0], Tensor::scalar<float>((0.5f + 16) / 2.5f));
  auto none = run_op({.op = "NegativeLogLikelihoodLoss", .inputs = {x, t, w}, .attrs = red_ii("none", 2)});
  expect_near(none[0], Tensor::from_vector<float>({3}, {0.5f, 0, 16}));
}

TEST(NegativeLogLikelihoodLoss, NDNegativeIgnoreIndexOddShape) {
  // [N=3, C=5, d1=7]: loss[n, d] = -x[n, t[n, d], d].
  Tensor x = random_float({3, 5, 7}, -3, 0);
  std::vector<int64_t> tv(21);
  for (int i = 0; i < 21; ++i) tv[i] = (i * 3) % 5;
  tv[4] = -1;
  tv[11] = -1;
  Tensor t = Tensor::from_vector<int64_t>({3, 7}, tv);
  auto none = run_op({.op = "NegativeLogLikelihoodLoss", .inputs = {x, t}, .attrs = red_ii("none", -1)});
  auto mean = run_op({.op = "NegativeLogLikelihoodLoss", .inputs = {x, t}, .attrs = red_ii("mean", -1)});
  std::vector<float> expect(21, 0.f);
  double sum = 0;
  int count = 0;
  for (int n = 0; n < 3; ++n)
    for (int d = 0; d < 7; ++d) {
      int64_t k = tv[n * 7 + d];
      if (k == -1) continue;
      expect[n * 7 + d] = -x.data<float>()[(n * 5 + k) * 7 + d];
      sum += expect[n * 7 + d];
      ++count;
    }
  expect_near(none[0], Tensor::from_vector<float>({3, 7}, expect));
  expect_near(mean[0], Tensor::scalar<float>(static_cast<float>(sum / count)));
}

TEST(NegativeLogLikelihoodLoss, Double) {
  Tensor x = Tensor::from_vector<double>({1, 2, 1, 2}, {-1, -2, -3, -4});
  Tensor t = Tensor::from_vector<int64_t>({1, 1, 2}, {1, 0});
  auto sum = run_op({.op = "NegativeLogLikelihoodLoss", .inputs = {x, t}, .attrs = red("sum")});
  expect_near(sum[0], Tensor::scalar<double>(3 + 2));
}

TEST(NegativeLogLikelihoodLoss, SymbolicInference) {
  auto none = infer_op("NegativeLogLikelihoodLoss", {T(DType::Float, {S("n"), 5, S("d")}), T(DType::Int64, {S("n"), 7})},
                       red("none"));
  EXPECT_EQ(none[0].str(), "float[n,7]");
  auto mean = infer_op("NegativeLogLikelihoodLoss", {T(DType::Float, {S("n"), 5}), T(DType::Int64, {S("n")})});
  EXPECT_EQ(mean[0].str(), "float[]");
  auto unk = infer_op("NegativeLogLikelihoodLoss", {ir::TensorType::unranked(DType::Float), ir::TensorType::unranked(DType::Int64)},
                      red("none"));
  EXPECT_FALSE(unk[0].rank_known);
}

TEST(NegativeLogLikelihoodLoss, BadInputs) {
  Tensor x = Tensor::from_vector<float>({2, 3}, {-1, -2, -3, -4, -5, -6});
  // Target outside [0, C) and not ignored.
  EXPECT_THROW(run_op({.op = "NegativeLogLikelihoodLoss", .inputs = {x, Tensor::from_vector<int64_t>({2}, {0, 3})}}),
               kiln::Error);
  EXPECT_THROW(run_op({.op = "NegativeLogLikelihoodLoss", .inputs = {x, Tensor::from_vector<int64_t>({2}, {-1, 0})}}),
               kiln::Error);
  // Wrong target shape, rank, dtype; bad weight; bad reduction.
  EXPECT_THROW(run_op({.op = "NegativeLogLikelihoodLoss", .inputs = {x, Tensor::from_vector<int64_t>({3}, {0, 1, 2})}}),
               kiln::Error);
  EXPECT_THROW(infer_op("NegativeLogLikelihoodLoss", {T(DType::Float, {2, 3}), T(DType::Int64, {2, 3})}), kiln::Error);
  EXPECT_THROW(infer_op("NegativeLogLikelihoodLoss", {T(DType::Float, {2, 3}), T(DType::Float, {2})}), kiln::Error);
  EXPECT_THROW(infer_op("NegativeLogLikelihoodLoss", {T(DType::Float, {2, 3}), T(DType::Int64, {2}), T(DType::Float, {4})}),
               kiln::Error);
  EXPECT_THROW(infer_op("NegativeLogLikelihoodLoss", {T(DType::Float, {2, 3}), T(DType::Int64, {2})}, red("avg")),
               kiln::Error);
  EXPECT_THROW(infer_op("NegativeLogLikelihoodLoss", {T(DType::Float, {3}), T(DType::Int64, {})}), kiln::Error);
}

TEST(SoftmaxCrossEntropyLoss, MatchesLogSoftmaxThenNll) {
  Tensor x = random_float({3, 5, 2}, -2, 2);
  Tensor t = Tensor::from_vector<int64_t>({3, 2}, {0, 4, 2, 2, 1, 3});
  Tensor w = Tensor::from_vector<float>({5}, {1, 2, 3, 0.5f, 0.25f});
  auto out = run_op({.op = "SoftmaxCrossEntropyLoss", .inputs = {x, t, w}, .attrs = red_ii("mean", 2), .num_outputs = 2});
  std::vector<float> logp(30);
  const float* xp = x.data<float>();
  for (int n = 0; n < 3; ++n)
    for (int d = 0; d < 2; ++d) {
      double s = 0;
      for (int c = 0; c < 5; ++c) s += std::exp(static_cast<double>(xp[(n * 5 + c) * 2 + d]));
      for (int c = 0; c < 5; ++c) logp[(n * 5 + c) * 2 + d] = static_cast<float>(xp[(n * 5 + c) * 2 + d] - std::log(s));
    }
  expect_near(out[1], Tensor::from_vector<float>({3, 5, 2}, logp));
  double num = 0, den = 0;
  for (int n = 0; n < 3; ++n)
    for (int d = 0; d < 2; ++d) {
      int64_t k = t.data<int64_t>()[n * 2 + d];
      if (k == 2) continue;
      num += -logp[(n * 5 + k) * 2 + d] * w.data<float>()[k];
      den += w.data<float>()[k];
    }
  expect_near(out[0], Tensor::scalar<float>(static_cast<float>(num / den)));
}

TEST(SoftmaxCrossEntropyLoss, UniformScoresGiveLogC) {
  Tensor x(DType::Float, {4, 3});
  Tensor t = Tensor::from_vector<int64_t>({4}, {0, 1, 2, 0});
  auto none = run_op({.op = "SoftmaxCrossEntropyLoss", .inputs = {x, t}, .attrs = red("none")});
  float l = std::log(3.f);
  expect_near(none[0], Tensor::from_vector<float>({4}, {l, l, l, l}));
  auto sum = run_op({.op = "SoftmaxCrossEntropyLoss", .inputs = {x, t}, .attrs = red("sum"), .opset = 12});
  expect_near(sum[0], Tensor::scalar<float>(4 * l));
}

TEST(SoftmaxCrossEntropyLoss, Float16AndStability) {
  Tensor x = Tensor::from_vector<Float16>({1, 2}, {Float16(1000.f), Float16(1000.f)});
  Tensor t = Tensor::from_vector<int64_t>({1}, {1});
  auto out = run_op({.op = "SoftmaxCrossEntropyLoss", .inputs = {x, t}});
  EXPECT_NEAR(static_cast<float>(out[0].data<Float16>()[0]), std::log(2.f), 1e-3);
}

TEST(SoftmaxCrossEntropyLoss, SymbolicInferenceAndLogProb) {
  auto out = infer_op("SoftmaxCrossEntropyLoss", {T(DType::Float, {S("n"), 5, 2, S("w")}), T(DType::Int64, {S("n"), 2, S("w")})},
                      red("none"), 2);
  EXPECT_EQ(out[0].str(), "float[n,2,w]");
  EXPECT_EQ(out[1].str(), "float[n,5,2,w]");
  EXPECT_THROW(infer_op("SoftmaxCrossEntropyLoss", {T(DType::Int32, {2, 3}), T(DType::Int64, {2})}), kiln::Error);
}

}  // namespace kiln::testing
