#include <kiln/error.h>

#include "op_test_util.h"

namespace kiln::testing {

namespace {
using A = ir::Attribute;

std::vector<Tensor> einsum(const std::string& eq, std::vector<Tensor> ins) {
  return run_op({.op = "Einsum", .inputs = std::move(ins), .attrs = {{"equation", A::of_string(eq)}}, .opset = 12});
}

ir::Attributes eqn(const char* e) { return {{"equation", A::of_string(e)}}; }
}  // namespace

TEST(Einsum, MatMulOddShape) {
  Tensor a = random_float({3, 5}, -1, 1, 1), b = random_float({5, 7}, -1, 1, 2);
  std::vector<float> c(21, 0.f);
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 7; ++k)
      for (int j = 0; j < 5; ++j) c[i * 7 + k] += a.data<float>()[i * 5 + j] * b.data<float>()[j * 7 + k];
  expect_near(einsum("ij,jk->ik", {a, b})[0], Tensor::from_vector<float>({3, 7}, c));
  // Implicit output: letters used once, sorted: "ik".
  expect_near(einsum("ij,jk", {a, b})[0], Tensor::from_vector<float>({3, 7}, c));
  // Spaces are allowed anywhere.
  expect_near(einsum(" ij , jk -> ik ", {a, b})[0], Tensor::from_vector<float>({3, 7}, c));
}

TEST(Einsum, TransposeSumTraceDiagonal) {
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_near(einsum("ij->ji", {x})[0], Tensor::from_vector<float>({3, 2}, {1, 4, 2, 5, 3, 6}));
  expect_near(einsum("ij->i", {x})[0], Tensor::from_vector<float>({2}, {6, 15}));
  expect_near(einsum("ij->", {x})[0], Tensor::scalar<float>(21));
  // Implicit mode sorts letters: "ba" becomes "ab", a transpose.
  expect_near(einsum("ba", {x})[0], Tensor::from_vector<float>({3, 2}, {1, 4, 2, 5, 3, 6}));
  Tensor m = Tensor::from_vector<float>({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  expect_near(einsum("ii", {m})[0], Tensor::scalar<float>(15));
  expect_near(einsum("ii->i", {m})[0], Tensor::from_vector<float>({3}, {1, 5, 9}));
}

TEST(Einsum, EllipsisBatchDiagonalAndBroadcast) {
  Tensor x = random_float({2, 3, 3});
  auto d = einsum("...ii->...i", {x})[0];
  ASSERT_EQ(d.dims(), (std::vector<int64_t>{2, 3}));
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(d.data<float>()[b * 3 + i], x.data<float>()[b * 9 + i * 3 + i]);
  // Batched matmul whose batch dims broadcast: [2, 1, 3, 4] x [5, 4, 2] -> [2, 5, 3, 2].
  Tensor a = random_float({2, 1, 3, 4}, -1, 1, 3), b = random_float({5, 4, 2}, -1, 1, 4);
  auto y = einsum("...ij,...jk->...ik", {a, b})[0];
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, 5, 3, 2}));
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 5; ++q)
      for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 2; ++k) {
          float s = 0;
          for (int j = 0; j < 4; ++j) s += a.data<float>()[(p * 3 + i) * 4 + j] * b.data<float>()[(q * 4 + j) * 2 + k];
          EXPECT_NEAR(y.data<float>()[((p * 5 + q) * 3 + i) * 2 + k], s, 1e-5);
        }
  // Implicit output keeps the ellipsis dims in front.
  auto z = einsum("i...->...", {Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4})})[0];
  expect_near(z, Tensor::from_vector<float>({2}, {4, 6}));
}

TEST(Einsum, ThreeOperandsAndIntegers) {
  Tensor a = Tensor::from_vector<int64_t>({2}, {1, 2}), b = Tensor::from_vector<int64_t>({2}, {3, 4}),
         c = Tensor::from_vector<int64_t>({3}, {1, 10, 100});
  // Outer product of an inner product with c.
  auto y = einsum("i,i,k->k", {a, b, c})[0];
  expect_near(y, Tensor::from_vector<int64_t>({3}, {11, 110, 1100}));
  auto outer = einsum("i,k", {a, c})[0];
  expect_near(outer, Tensor::from_vector<int64_t>({2, 3}, {1, 10, 100, 2, 20, 200}));
  Tensor d = Tensor::from_vector<double>({2}, {0.5, 0.25});
  expect_near(einsum("i,i", {d, d})[0], Tensor::scalar<double>(0.3125));
}

TEST(Einsum, SymbolicInference) {
  auto t = infer_op("Einsum", {T(DType::Float, {S("b"), 3, 4}), T(DType::Float, {S("b"), 4, S("k")})}, eqn("bij,bjk->bik"));
  EXPECT_EQ(t[0].str(), "float[b,3,k]");
  auto e = infer_op("Einsum", {T(DType::Float, {S("n"), 1, 3, 4}), T(DType::Float, {5, 4, 2})}, eqn("...ij,...jk"));
  EXPECT_EQ(e[0].str(), "float[n,5,3,2]");
  auto u = infer_op("Einsum", {ir::TensorType::unranked(DType::Float)}, eqn("...ii->...i"));
  EXPECT_FALSE(u[0].rank_known);
  auto k = infer_op("Einsum", {ir::TensorType::unranked(DType::Float), T(DType::Float, {3, S("m")})}, eqn("ij,jk->ik"));
  EXPECT_EQ(k[0].rank(), 2);
  EXPECT_EQ(k[0].dims[1].str(), "m");
}

TEST(Einsum, BadEquations) {
  Tensor x = random_float({2, 3});
  EXPECT_THROW(einsum("ij,jk->ik", {x}), kiln::Error);            // term count
  EXPECT_THROW(einsum("ijk->i", {x}), kiln::Error);               // rank mismatch
  EXPECT_THROW(einsum("ij->iz", {x}), kiln::Error);               // unknown output letter
  EXPECT_THROW(einsum("ij->ii", {x}), kiln::Error);               // repeated output letter
  EXPECT_THROW(einsum("i1->i", {x}), kiln::Error);                // bad character
  EXPECT_THROW(einsum("......->", {x}), kiln::Error);             // two ellipses
  EXPECT_THROW(einsum("ij,ij->i", {x, random_float({3, 3})}), kiln::Error);  // extents disagree
  EXPECT_THROW(einsum("ij,ij->i", {x, Tensor::from_vector<double>({2, 3}, {})}), kiln::Error);  // dtypes
  EXPECT_THROW(infer_op("Einsum", {T(DType::Float, {2, 3}), T(DType::Float, {4, 5})}, eqn("ij,jk->ik")), kiln::Error);
}

}  // namespace kiln::testing
