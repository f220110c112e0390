#include <kiln/error.h>

#include <chrono>
#include <cstdio>

#include "op_test_util.h"

namespace kiln::testing {

namespace {

// Timing checks only hold for optimized, uninstrumented builds.
#ifdef __SANITIZE_ADDRESS__
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// Naive reference: out[b][i][j] = sum_k a[b][i][k] * b[b][k][j] for equal batch dims.
Tensor naive_bmm(const Tensor& a, const Tensor& b) {
  const int64_t B = a.rank() == 3 ? a.dim(0) : 1, M = a.dim(a.rank() - 2), K = a.dim(a.rank() - 1),
                N = b.dim(b.rank() - 1);
  std::vector<int64_t> dims = a.dims();
  dims.back() = N;
  Tensor out(DType::Float, dims);
  for (int64_t bi = 0; bi < B; ++bi)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += a.as_double(bi * M * K + i * K + k) * b.as_double((b.rank() == 3 ? bi : 0) * K * N + k * N + j);
        out.data<float>()[bi * M * N + i * N + j] = static_cast<float>(s);
      }
  return out;
}

ir::Attributes attrs(std::initializer_list<std::pair<const std::string, ir::Attribute>> l) { return ir::Attributes(l); }

}  // namespace

TEST(MatMul, TwoByTwoHandComputed) {
  Tensor a = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = Tensor::from_vector<float>({3, 2}, {7, 8, 9, 10, 11, 12});
  auto out = run_op({.op = "MatMul", .inputs = {a, b}});
  expect_near(out[0], Tensor::from_vector<float>({2, 2}, {58, 64, 139, 154}));
}

TEST(MatMul, OddShapesAndBlocking) {
  // Larger than one k/j block of the kernel, with odd extents.
  Tensor a = random_float({3, 5, 301}, -1, 1, 3);
  Tensor b = random_float({3, 301, 613}, -1, 1, 4);
  auto out = run_op({.op = "MatMul", .inputs = {a, b}});
  expect_near(out[0], naive_bmm(a, b), 1e-4, 1e-4);
}

TEST(MatMul, BatchBroadcast) {
  Tensor a = random_float({3, 4, 5}, -1, 1, 5);
  Tensor b = random_float({5, 7}, -1, 1, 6);
  auto out = run_op({.op = "MatMul", .inputs = {a, b}});
  expect_near(out[0], naive_bmm(a, b), 1e-5, 1e-5);

  // [2,1,4,5] x [3,5,2] -> [2,3,4,2]
  Tensor c = random_float({2, 1, 4, 5}, -1, 1, 7);
  Tensor d = random_float({3, 5, 2}, -1, 1, 8);
  auto o2 = run_op({.op = "MatMul", .inputs = {c, d}});
  ASSERT_EQ(o2[0].dims(), (std::vector<int64_t>{2, 3, 4, 2}));
  // Spot check element [1,2,3,1] = sum_k c[1,0,3,k] * d[2,k,1].
  double s = 0;
  for (int k = 0; k < 5; ++k) s += c.as_double(1 * 20 + 3 * 5 + k) * d.as_double(2 * 10 + k * 2 + 1);
  EXPECT_NEAR(o2[0].as_double(((1 * 3 + 2) * 4 + 3) * 2 + 1), s, 1e-5);
}

TEST(MatMul, OneDimensionalPromotion) {
  Tensor v = Tensor::from_vector<float>({3}, {1, 2, 3});
  Tensor m = Tensor::from_vector<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  auto o1 = run_op({.op = "MatMul", .inputs = {v, m}});
  expect_near(o1[0], Tensor::from_vector<float>({2}, {22, 28}));
  Tensor m2 = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto o2 = run_op({.op = "MatMul", .inputs = {m2, v}});
  expect_near(o2[0], Tensor::from_vector<float>({2}, {14, 32}));
  auto o3 = run_op({.op = "MatMul", .inputs = {v, v}});
  expect_near(o3[0], Tensor::scalar<float>(14));
  // Batched matrix times vector: [2,2,3] x [3] -> [2,2]
  Tensor bm = Tensor::from_vector<float>({2, 2, 3}, {1, 2, 3, 4, 5, 6, 1, 0, 0, 0, 0, 1});
  auto o4 = run_op({.op = "MatMul", .inputs = {bm, v}});
  expect_near(o4[0], Tensor::from_vector<float>({2, 2}, {14, 32, 1, 3}));
}

TEST(MatMul, IntegerAndHalfTypes) {
  Tensor a = Tensor::from_vector<int64_t>({2, 2}, {1, -2, 3, 4});
  Tensor b = Tensor::from_vector<int64_t>({2, 1}, {5, 6});
  auto out = run_op({.op = "MatMul", .inputs = {a, b}});
  ASSERT_EQ(out[0].dtype(), DType::Int64);
  EXPECT_EQ(out[0].to_int64_vector(), (std::vector<int64_t>{-7, 39}));

  Tensor ua = Tensor::from_vector<uint32_t>({1, 2}, {3, 4});
  Tensor ub = Tensor::from_vector<uint32_t>({2, 1}, {5, 6});
  EXPECT_EQ(run_op({.op = "MatMul", .inputs = {ua, ub}})[0].as_int64(0), 39);

  Tensor ha = Tensor::from_vector<Float16>({1, 2}, {Float16(1.5f), Float16(2.f)});
  Tensor hb = Tensor::from_vector<Float16>({2, 1}, {Float16(2.f), Float16(0.25f)});
  auto h = run_op({.op = "MatMul", .inputs = {ha, hb}});
  ASSERT_EQ(h[0].dtype(), DType::Float16);
  EXPECT_FLOAT_EQ(h[0].as_double(0), 3.5);
}

TEST(MatMul, SymbolicInference) {
  auto t = infer_op("MatMul", {T(DType::Float, {S("batch"), S("seq"), 768}), T(DType::Float, {768, 3072})});
  EXPECT_EQ(t[0].str(), "float[batch,seq,3072]");
  auto t2 = infer_op("MatMul", {T(DType::Float, {S("b"), 1, 4, 8}), T(DType::Float, {12, 8, 5})});
  EXPECT_EQ(t2[0].str(), "float[b,12,4,5]");
  auto t3 = infer_op("MatMul", {T(DType::Float, {8}), T(DType::Float, {S("b"), 8, 5})});
  EXPECT_EQ(t3[0].str(), "float[b,5]");
  auto t4 = infer_op("MatMul", {ir::TensorType::unranked(DType::Float), T(DType::Float, {8, 5})});
  EXPECT_FALSE(t4[0].rank_known);
}

TEST(MatMul, BadInputs) {
  EXPECT_THROW(infer_op("MatMul", {T(DType::Float, {2, 3}), T(DType::Float, {4, 5})}), kiln::Error);
  EXPECT_THROW(infer_op("MatMul", {T(DType::Float, {}), T(DType::Float, {4, 5})}), kiln::Error);
  EXPECT_THROW(infer_op("MatMul", {T(DType::Float, {2, 2, 3}), T(DType::Float, {3, 3, 5})}), kiln::Error);
  EXPECT_THROW(run_op({.op = "MatMul", .inputs = {random_float({2, 3}), random_float({4, 5})}}), kiln::Error);
  EXPECT_THROW(infer_op("MatMul", {T(DType::Float, {2, 3}), T(DType::Double, {3, 5})}), kiln::Error);
}

TEST(Gemm, AllAttributes) {
  // A^T is [[1,2],[3,4],[5,6]] (3x2); B^T is [[1,0,1,1],[0,1,1,2]] (2x4).
  Tensor a = Tensor::from_vector<float>({2, 3}, {1, 3, 5, 2, 4, 6});
  Tensor b = Tensor::from_vector<float>({4, 2}, {1, 0, 0, 1, 1, 1, 1, 2});
  Tensor c = Tensor::from_vector<float>({1, 4}, {1, 2, 3, 4});
  auto out = run_op({.op = "Gemm", .inputs = {a, b, c},
                     .attrs = attrs({{"transA", ir::Attribute::of_int(1)}, {"transB", ir::Attribute::of_int(1)},
                                     {"alpha", ir::Attribute::of_float(0.5f)}, {"beta", ir::Attribute::of_float(2.f)}})});
  // A^T B^T rows: [1,2,3,5], [3,4,7,11], [5,6,11,17]; y = 0.5 * that + 2 * c.
  expect_near(out[0], Tensor::from_vector<float>({3, 4}, {2.5f, 5, 7.5f, 10.5f, 3.5f, 6, 9.5f, 13.5f, 4.5f, 7,
                                                          11.5f, 16.5f}));
}

TEST(Gemm, BiasForms) {
  Tensor a = random_float({3, 5}, -1, 1, 11);
  Tensor b = random_float({5, 4}, -1, 1, 12);
  Tensor ref = naive_bmm(a, b);
  // No bias, scalar bias, [N] vector bias, [M,1] column bias.
  expect_near(run_op({.op = "Gemm", .inputs = {a, b}})[0], ref);
  Tensor s = Tensor::scalar<float>(2.f);
  Tensor rs = ref.clone();
  for (int64_t i = 0; i < 12; ++i) rs.data<float>()[i] += 2.f;
  expect_near(run_op({.op = "Gemm", .inputs = {a, b, s}})[0], rs);
  Tensor v = Tensor::from_vector<float>({4}, {1, 2, 3, 4});
  Tensor col = Tensor::from_vector<float>({3, 1}, {10, 20, 30});
  Tensor rv = ref.clone(), rc = ref.clone();
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      rv.data<float>()[i * 4 + j] += static_cast<float>(j + 1);
      rc.data<float>()[i * 4 + j] += 10.f * static_cast<float>(i + 1);
    }
  expect_near(run_op({.op = "Gemm", .inputs = {a, b, v}})[0], rv);
  expect_near(run_op({.op = "Gemm", .inputs = {a, b, col}})[0], rc);
}

TEST(Gemm, IntegerGemm) {
  Tensor a = Tensor::from_vector<int32_t>({1, 2}, {2, 3});
  Tensor b = Tensor::from_vector<int32_t>({2, 2}, {1, 2, 3, 4});
  Tensor c = Tensor::from_vector<int32_t>({2}, {100, 200});
  auto out = run_op({.op = "Gemm", .inputs = {a, b, c}});
  EXPECT_EQ(out[0].to_int64_vector(), (std::vector<int64_t>{111, 216}));
}

TEST(Gemm, InferenceAndErrors) {
  auto t = infer_op("Gemm", {T(DType::Float, {S("batch"), 512}), T(DType::Float, {1000, 512}), T(DType::Float, {1000})},
                    attrs({{"transB", ir::Attribute::of_int(1)}}));
  EXPECT_EQ(t[0].str(), "float[batch,1000]");
  EXPECT_THROW(infer_op("Gemm", {T(DType::Float, {2, 3}), T(DType::Float, {4, 5})}), kiln::Error);
  EXPECT_THROW(infer_op("Gemm", {T(DType::Float, {2, 3, 1}), T(DType::Float, {3, 5})}), kiln::Error);
  EXPECT_THROW(infer_op("Gemm", {T(DType::Float, {2, 3}), T(DType::Float, {3, 5}), T(DType::Float, {3})}), kiln::Error);
  EXPECT_THROW(run_op({.op = "Gemm", .inputs = {random_float({2, 3}), random_float({3, 5}), random_float({2, 4})}}),
               kiln::Error);
}

TEST(MatMulInteger, ZeroPoints) {
  Tensor a = Tensor::from_vector<uint8_t>({2, 3}, {11, 7, 3, 10, 6, 2});
  Tensor b = Tensor::from_vector<uint8_t>({3, 2}, {1, 4, 2, 5, 3, 6});
  Tensor azp = Tensor::scalar<uint8_t>(12);
  Tensor bzp = Tensor::scalar<uint8_t>(0);
  auto out = run_op({.op = "MatMulInteger", .inputs = {a, b, azp, bzp}});
  ASSERT_EQ(out[0].dtype(), DType::Int32);
  // a - 12 = [[-1,-5,-9],[-2,-6,-10]]
  EXPECT_EQ(out[0].to_int64_vector(), (std::vector<int64_t>{-38, -83, -44, -98}));

  // Per-row A zero point and per-column B zero point, int8.
  Tensor a8 = Tensor::from_vector<int8_t>({2, 2}, {1, 2, 3, 4});
  Tensor b8 = Tensor::from_vector<int8_t>({2, 2}, {-1, 5, 2, 6});
  Tensor az = Tensor::from_vector<int8_t>({2}, {1, 3});
  Tensor bz = Tensor::from_vector<int8_t>({2}, {0, 5});
  auto o2 = run_op({.op = "MatMulInteger", .inputs = {a8, b8, az, bz}});
  // A' = [[0,1],[0,1]], B' = [[-1,0],[2,1]]
  EXPECT_EQ(o2[0].to_int64_vector(), (std::vector<int64_t>{2, 1, 2, 1}));

  // Mixed uint8 x int8.
  Tensor mb = Tensor::from_vector<int8_t>({3, 1}, {-1, 2, -3});
  EXPECT_EQ(run_op({.op = "MatMulInteger", .inputs = {a, mb}})[0].to_int64_vector(), (std::vector<int64_t>{-6, -4}));
  auto t = infer_op("MatMulInteger", {T(DType::UInt8, {S("n"), 3}), T(DType::UInt8, {3, 7})});
  EXPECT_EQ(t[0].str(), "int32[n,7]");
  EXPECT_THROW(infer_op("MatMulInteger", {T(DType::Float, {2, 3}), T(DType::UInt8, {3, 7})}), kiln::Error);
  EXPECT_THROW(run_op({.op = "MatMulInteger", .inputs = {a, b, Tensor::from_vector<uint8_t>({3}, {1, 2, 3})}}),
               kiln::Error);
}

}  // namespace kiln::testing

namespace kiln::testing {

TEST(MatMul, BertSizedIsFast) {
  Tensor a = random_float({1, 128, 768}, -1, 1, 90);
  Tensor b = random_float({768, 768}, -1, 1, 91);
  auto t0 = std::chrono::steady_clock::now();
  auto out = run_op({.op = "MatMul", .inputs = {a, b}});
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("128x768x768 matmul: %.3f s\n", secs);
  if (!kSanitized) {
    EXPECT_LT(secs, 0.5);
  }
  double s = 0;
  for (int64_t k = 0; k < 768; ++k) s += a.as_double(77 * 768 + k) * b.as_double(k * 768 + 500);
  EXPECT_NEAR(out[0].as_double(77 * 768 + 500), s, 1e-3);
}

}  // namespace kiln::testing
