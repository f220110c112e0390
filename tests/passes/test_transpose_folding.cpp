#include "pass_test_util.h"

namespace kiln::passes::testing {

TEST(TransposeFolding, InversePairCancels) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {2, 3, 4, 5});
        ir::Value* t = b.op("Transpose", {x}, {{"perm", Is({0, 2, 3, 1})}});
        b.out(b.op("Relu", {b.op("Transpose", {t}, {{"perm", Is({0, 3, 1, 2})}})}));
      },
      passes_of(make_transpose_folding(), make_dce()));
  EXPECT_EQ(count(*g, "Transpose"), 0);
}

TEST(TransposeFolding, PairComposes) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {2, 3, 4});
        ir::Value* t = b.op("Transpose", {x}, {{"perm", Is({1, 0, 2})}});
        b.out(b.op("Transpose", {t}, {{"perm", Is({0, 2, 1})}}));
      },
      passes_of(make_transpose_folding(), make_dce()));
  EXPECT_EQ(count(*g, "Transpose"), 1);
}

TEST(TransposeFolding, IntoGemmAndMatMul) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* a = b.in("a", {5, 3});
        ir::Value* w = b.in("w", {4, 5});
        ir::Value* at = b.op("Transpose", {a}, {{"perm", Is({1, 0})}});
        ir::Value* y = b.op("Gemm", {at, b.op("Transpose", {w}), b.rand({4})}, {{"alpha", F(0.5f)}});
        ir::Value* k = b.in("k", {2, 4});
        b.out(b.op("MatMul", {y, b.op("Transpose", {k})}));
      },
      passes_of(make_transpose_folding(), make_dce()));
  EXPECT_EQ(count(*g, "Transpose"), 0);
  EXPECT_EQ(count(*g, "Gemm"), 2);
}

}  // namespace kiln::passes::testing
