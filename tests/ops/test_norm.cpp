#include <kiln/error.h>

#include <cmath>

#include "op_test_util.h"

namespace kiln::testing {

namespace {
using A = ir::Attribute;
Tensor F(std::vector<int64_t> dims, std::vector<float> v) { return Tensor::from_vector<float>(std::move(dims), v); }
}  // namespace

TEST(BatchNormalization, InferenceMode) {
  Tensor x = F({1, 2, 1, 2}, {1, 2, 3, 4});
  auto out = run_op({.op = "BatchNormalization",
                     .inputs = {x, F({2}, {1, 2}), F({2}, {0, 1}), F({2}, {1.5f, 3.5f}), F({2}, {0.25f, 0.25f})},
                     .attrs = {{"epsilon", A::of_float(0)}}});
  expect_near(out[0], F({1, 2, 1, 2}, {-1, 1, -1, 3}));
  // Opset 7 and 9 forms agree.
  for (int opset : {7, 9}) {
    auto o = run_op({.op = "BatchNormalization",
                     .inputs = {x, F({2}, {1, 2}), F({2}, {0, 1}), F({2}, {1.5f, 3.5f}), F({2}, {0.25f, 0.25f})},
                     .attrs = {{"epsilon", A::of_float(0)}}, .opset = opset});
    expect_near(o[0], F({1, 2, 1, 2}, {-1, 1, -1, 3}));
  }
}

TEST(BatchNormalization, OddShapeAgainstLoop) {
  Tensor x = random_float({3, 5, 7});
  Tensor scale = random_float({5}, 0.5f, 2, 2), b = random_float({5}, -1, 1, 3), mean = random_float({5}, -1, 1, 4),
         var = random_float({5}, 0.1f, 2, 5);
  auto out = run_op({.op = "BatchNormalization", .inputs = {x, scale, b, mean, var}});
  Tensor e(DType::Float, {3, 5, 7});
  for (int n = 0; n < 3; ++n)
    for (int c = 0; c < 5; ++c)
      for (int s = 0; s < 7; ++s) {
        int i = (n * 5 + c) * 7 + s;
        e.data<float>()[i] = (x.data<float>()[i] - mean.data<float>()[c]) / std::sqrt(var.data<float>()[c] + 1e-5f) *
                                 scale.data<float>()[c] + b.data<float>()[c];
      }
  expect_near(out[0], e, 1e-5, 1e-4);
}

TEST(BatchNormalization, TrainingMode) {
  Tensor x = F({2, 2}, {1, 10, 3, 20});
  auto out = run_op({.op = "BatchNormalization",
                     .inputs = {x, F({2}, {1, 1}), F({2}, {0, 0}), F({2}, {0, 0}), F({2}, {1, 1})},
                     .attrs = {{"epsilon", A::of_float(0)}, {"training_mode", A::of_int(1)}},
                     .num_outputs = 3,
                     .opset = 15});
  expect_near(out[0], F({2, 2}, {-1, -1, 1, 1}));
  expect_near(out[1], F({2}, {0.2f, 1.5f}));
  expect_near(out[2], F({2}, {1.0f, 3.4f}));
}

TEST(BatchNormalization, ShapesAndErrors) {
  auto t = infer_op("BatchNormalization", {T(DType::Float, {S("n"), 3, S("h"), S("w")}), T(DType::Float, {3}),
                                            T(DType::Float, {3}), T(DType::Float, {3}), T(DType::Float, {3})});
  EXPECT_EQ(t[0].str(), "float[n,3,h,w]");
  EXPECT_THROW(infer_op("BatchNormalization", {T(DType::Float, {1, 3, 4}), T(DType::Float, {4}), T(DType::Float, {3}),
                                               T(DType::Float, {3}), T(DType::Float, {3})}),
               kiln::Error);
  EXPECT_THROW(run_op({.op = "BatchNormalization",
                       .inputs = {F({1, 2}, {1, 2}), F({3}, {1, 1, 1}), F({2}, {0, 0}), F({2}, {0, 0}), F({2}, {1, 1})}}),
               kiln::Error);
  // Statistics outputs without training_mode.
  EXPECT_THROW(infer_op("BatchNormalization", {T(DType::Float, {1, 3}), T(DType::Float, {3}), T(DType::Float, {3}),
                                               T(DType::Float, {3}), T(DType::Float, {3})},
                        {}, 3, 15),
               kiln::Error);
}

TEST(LayerNormalization, HandComputedWithStats) {
  Tensor x = F({2, 3}, {1, 2, 3, 2, 4, 6});
  auto out = run_op({.op = "LayerNormalization", .inputs = {x, F({3}, {1, 1, 2}), F({3}, {0, 0, 1})},
                     .attrs = {{"epsilon", A::of_float(0)}}, .num_outputs = 3});
  const float a = std::sqrt(1.5f), b = std::sqrt(3.f / 8);
  expect_near(out[0], F({2, 3}, {-a, 0, 2 * a + 1, -2 * b, 0, 4 * b + 1}));
  expect_near(out[1], F({2, 1}, {2, 4}));
  expect_near(out[2], F({2, 1}, {a, b}));
}

TEST(LayerNormalization, LeadingAxisOddShapeNoBias) {
  Tensor x = random_float({3, 5, 7});
  Tensor scale = random_float({5, 7}, 0.5f, 2, 7);
  auto out = run_op({.op = "LayerNormalization", .inputs = {x, scale}, .attrs = {{"axis", A::of_int(-2)}}});
  Tensor e(DType::Float, {3, 5, 7});
  for (int n = 0; n < 3; ++n) {
    const float* r = x.data<float>() + n * 35;
    double m = 0, v = 0;
    for (int j = 0; j < 35; ++j) m += r[j];
    m /= 35;
    for (int j = 0; j < 35; ++j) v += (r[j] - m) * (r[j] - m);
    v /= 35;
    for (int j = 0; j < 35; ++j) e.data<float>()[n * 35 + j] = float((r[j] - m) / std::sqrt(v + 1e-5) * scale.data<float>()[j]);
  }
  expect_near(out[0], e, 1e-5, 1e-4);
}

TEST(LayerNormalization, SymbolicShapes) {
  auto t = infer_op("LayerNormalization", {T(DType::Float, {S("batch"), S("seq"), 256}), T(DType::Float, {256})}, {},
                    3);
  EXPECT_EQ(t[0].str(), "float[batch,seq,256]");
  EXPECT_EQ(t[1].str(), "float[batch,seq,1]");
  EXPECT_EQ(t[2].str(), "float[batch,seq,1]");
  // Available at old opsets too, for graph rewrites.
  t = infer_op("LayerNormalization", {T(DType::Float, {2, 4}), T(DType::Float, {4})}, {{"axis", A::of_int(0)}}, 2, 11);
  EXPECT_EQ(t[1].str(), "float[1,1]");
  EXPECT_THROW(infer_op("LayerNormalization", {T(DType::Float, {2, 4}), T(DType::Float, {4})}, {{"axis", A::of_int(2)}}),
               kiln::Error);
  EXPECT_THROW(run_op({.op = "LayerNormalization", .inputs = {F({2, 4}, {}), F({3}, {})}}), kiln::Error);
}

TEST(InstanceNormalization, HandComputed) {
  auto out = run_op({.op = "InstanceNormalization", .inputs = {F({1, 2, 2}, {1, 3, 0, 4}), F({2}, {1, 2}), F({2}, {0, 1})},
                     .attrs = {{"epsilon", A::of_float(0)}}});
  expect_near(out[0], F({1, 2, 2}, {-1, 1, -1, 3}));
  EXPECT_THROW(infer_op("InstanceNormalization", {T(DType::Float, {1, 2, 2}), T(DType::Float, {3}), T(DType::Float, {2})}),
               kiln::Error);
}

TEST(GroupNormalization, PerGroupAndPerChannelScale) {
  Tensor x = F({1, 4, 1}, {1, 3, 0, 4});
  auto out = run_op({.op = "GroupNormalization", .inputs = {x, F({2}, {1, 2}), F({2}, {0, 1})},
                     .attrs = {{"num_groups", A::of_int(2)}, {"epsilon", A::of_float(0)}}, .opset = 18});
  expect_near(out[0], F({1, 4, 1}, {-1, 1, -1, 3}));
  out = run_op({.op = "GroupNormalization", .inputs = {x, F({4}, {1, 1, 2, 2}), F({4}, {0, 0, 1, 1})},
                .attrs = {{"num_groups", A::of_int(2)}, {"epsilon", A::of_float(0)}}, .opset = 18});
  expect_near(out[0], F({1, 4, 1}, {-1, 1, -1, 3}));
  EXPECT_THROW(infer_op("GroupNormalization", {T(DType::Float, {1, 3}), T(DType::Float, {2}), T(DType::Float, {2})},
                        {{"num_groups", A::of_int(2)}}, 1, 18),
               kiln::Error);
}

TEST(LpNormalization, P1AndP2) {
  auto out = run_op({.op = "LpNormalization", .inputs = {F({2, 2}, {3, 4, 0, 0})}});
  expect_near(out[0], F({2, 2}, {0.6f, 0.8f, 0, 0}));
  out = run_op({.op = "LpNormalization", .inputs = {F({2, 2}, {1, 2, 3, -2})},
                .attrs = {{"p", A::of_int(1)}, {"axis", A::of_int(0)}}});
  expect_near(out[0], F({2, 2}, {0.25f, 0.5f, 0.75f, -0.5f}));
  EXPECT_THROW(infer_op("LpNormalization", {T(DType::Float, {2})}, {{"p", A::of_int(3)}}), kiln::Error);
}

TEST(LRN, OddAndEvenWindows) {
  Tensor x = F({1, 3, 1, 1}, {1, 2, 3});
  auto out = run_op({.op = "LRN", .inputs = {x},
                     .attrs = {{"size", A::of_int(3)}, {"alpha", A::of_float(3)}, {"beta", A::of_float(1)}}});
  expect_near(out[0], F({1, 3, 1, 1}, {1.f / 6, 2.f / 15, 3.f / 14}));
  out = run_op({.op = "LRN", .inputs = {x},
                .attrs = {{"size", A::of_int(2)}, {"alpha", A::of_float(2)}, {"beta", A::of_float(1)}}});
  expect_near(out[0], F({1, 3, 1, 1}, {1.f / 6, 2.f / 14, 3.f / 10}));
  EXPECT_THROW(infer_op("LRN", {T(DType::Float, {1, 3, 2, 2})}), kiln::Error);
}

TEST(MeanVarianceNormalization, DefaultAxes) {
  auto out = run_op({.op = "MeanVarianceNormalization", .inputs = {F({1, 2, 1, 2}, {1, 3, 0, 4})}});
  expect_near(out[0], F({1, 2, 1, 2}, {-1, 1, -1, 1}), 1e-6);
  out = run_op({.op = "MeanVarianceNormalization", .inputs = {F({2, 2}, {1, 3, 0, 4})}, .attrs = {{"axes", A::of_ints({-1})}}});
  expect_near(out[0], F({2, 2}, {-1, 1, -1, 1}), 1e-6);
  EXPECT_THROW(infer_op("MeanVarianceNormalization", {T(DType::Float, {2, 2})}), kiln::Error);
}

// RMSNormalization (opset 23): x / sqrt(mean(x^2) + eps) * scale over [axis, rank).
TEST(RMSNormalization, HandComputedAndOddShapes) {
  auto out = run_op({.op = "RMSNormalization", .inputs = {F({2, 2}, {3, 4, 1, -1}), F({2}, {1, 2})},
                     .attrs = {{"epsilon", A::of_float(0)}}, .opset = 23});
  const float r0 = std::sqrt(12.5f);
  expect_near(out[0], F({2, 2}, {3 / r0, 8 / r0, 1, -2}));
  // Leading axis, scale broadcast over the normalized dims [5, 7] from [7].
  Tensor x = random_float({3, 5, 7}, -2, 2, 11);
  Tensor scale = random_float({7}, 0.5f, 2, 12);
  out = run_op({.op = "RMSNormalization", .inputs = {x, scale}, .attrs = {{"axis", A::of_int(1)}}, .opset = 23});
  Tensor e(DType::Float, {3, 5, 7});
  for (int n = 0; n < 3; ++n) {
    const float* r = x.data<float>() + n * 35;
    double sq = 0;
    for (int j = 0; j < 35; ++j) sq += double(r[j]) * r[j];
    const double inv = 1 / std::sqrt(sq / 35 + 1e-5);
    for (int j = 0; j < 35; ++j) e.data<float>()[n * 35 + j] = float(r[j] * inv * scale.data<float>()[j % 7]);
  }
  expect_near(out[0], e, 1e-5, 1e-5);
  EXPECT_THROW(run_op({.op = "RMSNormalization", .inputs = {x, random_float({4})}, .opset = 23}), kiln::Error);
  EXPECT_THROW(run_op({.op = "RMSNormalization", .inputs = {x, scale}, .attrs = {{"axis", A::of_int(3)}}, .opset = 23}),
               kiln::Error);
}

}  // namespace kiln::testing

namespace kiln::testing {

// Opset 6's BatchNormalization: is_test = 1 is inference with the given statistics.
TEST(BatchNormalization, Opset6IsTest) {
  Tensor x = Tensor::from_vector<float>({1, 2, 1, 1}, {3, 5});
  auto ones = Tensor::from_vector<float>({2}, {1, 1});
  auto zeros = Tensor::from_vector<float>({2}, {0, 0});
  auto mean = Tensor::from_vector<float>({2}, {1, 1});
  auto out = run_op({.op = "BatchNormalization", .inputs = {x, ones, zeros, mean, ones},
                     .attrs = {{"is_test", ir::Attribute::of_int(1)}, {"epsilon", ir::Attribute::of_float(0)}}, .opset = 6});
  expect_near(out[0], Tensor::from_vector<float>({1, 2, 1, 1}, {2, 4}));
}

}  // namespace kiln::testing
