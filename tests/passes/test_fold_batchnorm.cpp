#include "pass_test_util.h"

namespace kiln::passes::testing {

TEST(FoldBatchNorm, Conv) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {1, 3, 7, 5});
        ir::Value* y = b.op("Conv", {x, b.rand({6, 3, 3, 3}), b.rand({6})}, {{"pads", Is({1, 1, 1, 1})}});
        b.out(b.op("Relu", {batchnorm(b, y, 6)}));
      },
      passes_of(make_fold_batchnorm()), 1e-4);
  EXPECT_EQ(count(*g, "BatchNormalization"), 0);
  EXPECT_EQ(count(*g, "Conv"), 1);
}

TEST(FoldBatchNorm, GroupedConvTransposeWithoutBias) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {1, 4, 3, 3});
        ir::Value* y = b.op("ConvTranspose", {x, b.rand({4, 3, 2, 2})}, {{"group", I(2)}});
        b.out(batchnorm(b, y, 6));
      },
      passes_of(make_fold_batchnorm()), 1e-4);
  EXPECT_EQ(count(*g, "BatchNormalization"), 0);
}

TEST(FoldBatchNorm, GemmTransBAndMatMul) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {3, 5});
        ir::Value* y = b.op("Gemm", {x, b.rand({4, 5}), b.rand({4})}, {{"transB", I(1)}, {"beta", F(0.5f)}});
        ir::Value* z = b.op("MatMul", {batchnorm(b, y, 4), b.rand({4, 7})});
        b.out(batchnorm(b, z, 7));
      },
      passes_of(make_fold_batchnorm()), 1e-4);
  EXPECT_EQ(count(*g, "BatchNormalization"), 0);
}

TEST(FoldBatchNorm, SharedConvOutputStays) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {1, 2, 4, 4});
        ir::Value* y = b.op("Conv", {x, b.rand({2, 2, 1, 1})});
        b.out(b.op("Add", {batchnorm(b, y, 2), y}));
      },
      passes_of(make_fold_batchnorm()));
  EXPECT_EQ(count(*g, "BatchNormalization"), 1);
}

}  // namespace kiln::passes::testing
