#include "pass_test_util.h"

namespace kiln::passes::testing {

// DenseNet's pre-activation: BN -> ReLU on a Concat, which no conv weight can absorb.
TEST(DecomposeBatchNorm, AfterConcatBecomesMulAdd) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {2, 3, 5, 4});
        ir::Value* z = b.in("z", {2, 2, 5, 4});
        ir::Value* c = b.op("Concat", {x, z}, {{"axis", I(1)}});
        b.out(b.op("Relu", {batchnorm(b, c, 5)}));
      },
      passes_of(make_decompose_batchnorm()), 1e-4);
  EXPECT_EQ(count(*g, "BatchNormalization"), 0);
  EXPECT_EQ(count(*g, "Mul"), 1);
  EXPECT_EQ(count(*g, "Add"), 1);
}

TEST(DecomposeBatchNorm, RankTwoAndRankFive) {
  auto g = check_rewrite(
      [](Builder& b) {
        b.out(batchnorm(b, b.in("x", {3, 6}), 6));
        b.out(batchnorm(b, b.in("v", {1, 2, 3, 2, 4}), 2));
      },
      passes_of(make_decompose_batchnorm()), 1e-4);
  EXPECT_EQ(count(*g, "BatchNormalization"), 0);
}

TEST(DecomposeBatchNorm, TrainingModeAndUsedStatisticsStay) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {1, 2, 3, 3});
        b.out(b.op("BatchNormalization", {x, b.rand({2}), b.rand({2}), b.rand({2}), b.rand({2}, 0.2f, 2.f)},
                   {{"training_mode", I(1)}}));
      },
      passes_of(make_decompose_batchnorm()), 1e-4);
  EXPECT_EQ(count(*g, "BatchNormalization"), 1);
}

// The basic pipeline: a BN after a shared conv output cannot fold into the conv, and goes as a Mul and an Add.
TEST(DecomposeBatchNorm, InTheBasicPipeline) {
  auto build = [](Builder& b) {
    ir::Value* x = b.in("x", {1, 2, 4, 4});
    ir::Value* y = b.op("Conv", {x, b.rand({2, 2, 1, 1})});
    b.out(b.op("Add", {batchnorm(b, y, 2), y}));
  };
  Builder ref, opt;
  build(ref);
  build(opt);
  ops::ShapeInference().run(*ref.g);
  optimize(*opt.g, OptimizeOptions{.level = 1, .verify = true});
  EXPECT_EQ(count(*opt.g, "BatchNormalization"), 0);
  EXPECT_EQ(count(*opt.g, "Conv"), 1);
  expect_same_outputs(*ref.g, *opt.g, 1e-4);
}

}  // namespace kiln::passes::testing
