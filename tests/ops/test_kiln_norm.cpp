// kiln.SkipLayerNorm against Add + LayerNormalization written out by hand (this binary links
// only the kiln_norm family, so the ai.onnx kernels are not there to compare with).
#include <kiln/error.h>

#include <cmath>

#include "op_test_util.h"
#include "ops/core/infer_graph.h"

namespace kiln::testing {

namespace {

using A = ir::Attribute;

// LayerNormalization(x + skip + bias) over the last axis, in double; also returns the sum.
std::pair<Tensor, Tensor> expected(const Tensor& x, const Tensor& skip, const Tensor& gamma, const Tensor* beta,
                                   const Tensor* bias, double eps) {
  const int64_t h = x.dims().back(), rows = x.numel() / h;
  Tensor y(DType::Float, x.dims()), s(DType::Float, x.dims());
  for (int64_t r = 0; r < rows; ++r) {
    float* sr = s.data<float>() + r * h;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < h; ++j) {
      sr[j] = x.data<float>()[r * h + j] + skip.data<float>()[r * h + j];
      if (bias) sr[j] += bias->data<float>()[j];
      mean += sr[j];
    }
    mean /= h;
    for (int64_t j = 0; j < h; ++j) var += (sr[j] - mean) * (sr[j] - mean);
    var /= h;
    for (int64_t j = 0; j < h; ++j)
      y.data<float>()[r * h + j] = static_cast<float>((sr[j] - mean) / std::sqrt(var + eps) * gamma.data<float>()[j] +
                                                      (beta ? beta->data<float>()[j] : 0.0));
  }
  return {y, s};
}

OpCall call(std::vector<Tensor> inputs, int num_outputs = 1, float eps = 1e-5f) {
  return {.op = "SkipLayerNorm",
          .inputs = std::move(inputs),
          .attrs = {{"epsilon", A::of_float(eps)}},
          .num_outputs = num_outputs,
          .domain = "kiln"};
}

// Shape inference alone on (possibly symbolic) input types.
std::vector<ir::TensorType> infer(const std::vector<ir::TensorType>& ins, int num_outputs = 1) {
  ir::Graph g;
  g.opsets[""] = 17;
  g.opsets["kiln"] = 1;
  std::vector<ir::Value*> in_values, outs;
  for (size_t i = 0; i < ins.size(); ++i) in_values.push_back(g.add_input("in" + std::to_string(i), ins[i]));
  for (int i = 0; i < num_outputs; ++i) outs.push_back(g.add_value("out" + std::to_string(i)));
  ir::Node* n = g.add_node("SkipLayerNorm", in_values, outs, {}, "sln", "kiln");
  ops::ShapeInference(0).infer_node(*n);
  std::vector<ir::TensorType> types;
  for (ir::Value* o : outs) types.push_back(o->type);
  return types;
}

}  // namespace

TEST(SkipLayerNorm, MatchesAddThenLayerNorm) {
  for (std::vector<int64_t> dims : {std::vector<int64_t>{2, 7, 13}, {5}, {3, 1, 1, 9}, {4, 128}}) {
    const int64_t h = dims.back();
    Tensor x = random_float(dims, -2, 2, 1), skip = random_float(dims, -2, 2, 2);
    Tensor gamma = random_float({h}, 0.5f, 2, 3), beta = random_float({h}, -1, 1, 4);
    auto out = run_op(call({x, skip, gamma, beta}, 2));
    auto [y, s] = expected(x, skip, gamma, &beta, nullptr, 1e-5);
    expect_near(out[0], y, 1e-5, 1e-5);
    expect_near(out[1], s, 0, 0);
  }
}

TEST(SkipLayerNorm, BiasWithoutBetaAndEpsilon) {
  Tensor x = random_float({3, 11}, -1, 1, 5), skip = random_float({3, 11}, -1, 1, 6);
  Tensor gamma = random_float({11}, 0.5f, 2, 7), bias = random_float({11}, -1, 1, 8);
  auto out = run_op(call({x, skip, gamma, Tensor(), bias}, 2, 1e-2f));
  auto [y, s] = expected(x, skip, gamma, nullptr, &bias, 1e-2f);
  expect_near(out[0], y, 1e-5, 1e-5);
  expect_near(out[1], s, 1e-6, 1e-6);
  // Without beta and bias, one output.
  auto plain = run_op(call({x, skip, gamma}));
  ASSERT_EQ(plain.size(), 1u);
  expect_near(plain[0], expected(x, skip, gamma, nullptr, nullptr, 1e-5).first, 1e-5, 1e-5);
}

TEST(SkipLayerNorm, ConstantRowsAndOffsetRows) {
  // A row whose sum is constant normalizes to beta; rows far from zero keep their variance.
  Tensor x(DType::Float, {2, 6}), skip(DType::Float, {2, 6});
  for (int j = 0; j < 6; ++j) {
    x.data<float>()[j] = 3.f;
    skip.data<float>()[j] = -1.f;
    x.data<float>()[6 + j] = 1000.f + j;
    skip.data<float>()[6 + j] = 0.5f * j;
  }
  Tensor gamma = random_float({6}, 0.5f, 2, 9), beta = random_float({6}, -1, 1, 10);
  auto out = run_op(call({x, skip, gamma, beta}));
  expect_near(out[0], expected(x, skip, gamma, &beta, nullptr, 1e-5).first, 1e-4, 1e-4);
  for (int j = 0; j < 6; ++j) EXPECT_NEAR(out[0].data<float>()[j], beta.data<float>()[j], 1e-6);
}

TEST(SkipLayerNorm, InfersSymbolicShapes) {
  auto t = infer({T(DType::Float, {S("batch"), S("seq"), 8}), T(DType::Float, {S("batch"), S("seq"), 8}),
                  T(DType::Float, {8}), T(DType::Float, {8})},
                 2);
  EXPECT_EQ(t[0].str(), "float[batch,seq,8]");
  EXPECT_EQ(t[1].str(), "float[batch,seq,8]");
  // Skip's static dims fill in X's unknown ones.
  auto u = infer({T(DType::Float, {ir::Dim(), S("seq"), 8}), T(DType::Float, {4, S("seq"), 8}), T(DType::Float, {8})});
  EXPECT_EQ(u[0].str(), "float[4,seq,8]");
  // Unknown rank stays unknown.
  auto r = infer({ir::TensorType::unranked(DType::Float), ir::TensorType::unranked(DType::Float), T(DType::Float, {8})});
  EXPECT_FALSE(r[0].rank_known);
  EXPECT_EQ(r[0].dtype, DType::Float);
}

TEST(SkipLayerNorm, RejectsBadShapes) {
  const Tensor x = random_float({2, 7, 13}), g13 = random_float({13});
  // Skip must not broadcast.
  EXPECT_THROW(run_op(call({x, random_float({13}), g13})), Error);
  EXPECT_THROW(run_op(call({x, random_float({1, 7, 13}), g13})), Error);
  EXPECT_THROW(run_op(call({x, random_float({2, 7, 12}), g13})), Error);
  // Parameters are [H].
  EXPECT_THROW(run_op(call({x, x, random_float({12})})), Error);
  EXPECT_THROW(run_op(call({x, x, random_float({1, 13})})), Error);
  EXPECT_THROW(run_op(call({x, x, g13, random_float({7})})), Error);
  EXPECT_THROW(run_op(call({x, x, g13, Tensor(), random_float({14})})), Error);
  // A scalar has no axis to normalize; integers are not normalized.
  EXPECT_THROW(run_op(call({Tensor::scalar<float>(1), Tensor::scalar<float>(2), random_float({1})})), Error);
  Tensor ints = Tensor::from_vector<int64_t>({2}, {1, 2});
  EXPECT_THROW(run_op(call({ints, ints, random_float({2})})), Error);
  // Symbolic inference catches a static clash too.
  EXPECT_THROW(infer({T(DType::Float, {S("b"), 8}), T(DType::Float, {S("b"), 9}), T(DType::Float, {8})}), Error);
  EXPECT_THROW(infer({T(DType::Float, {S("b"), 8}), T(DType::Float, {8}), T(DType::Float, {8})}), Error);
}

}  // namespace kiln::testing
