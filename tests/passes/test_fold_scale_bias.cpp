#include "pass_test_util.h"

namespace kiln::passes::testing {

TEST(FoldScaleBias, ConvMulAdd) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {1, 3, 5, 5});
        ir::Value* y = b.op("Conv", {x, b.rand({4, 3, 3, 3}), b.rand({4})});
        y = b.op("Mul", {b.rand({1, 4, 1, 1}), y});
        y = b.op("Add", {y, b.rand({4, 1, 1})});
        b.out(b.op("Add", {y, b.scalar(0.25f)}));
      },
      passes_of(make_fold_scale_bias()), 1e-4);
  EXPECT_EQ(g->num_nodes(), 1u);
}

TEST(FoldScaleBias, SpatialConstantIsNotPerChannel) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {1, 2, 3, 3});
        ir::Value* y = b.op("Conv", {x, b.rand({2, 2, 1, 1})});
        b.out(b.op("Mul", {y, b.rand({3, 3})}));
      },
      passes_of(make_fold_scale_bias()));
  EXPECT_EQ(g->num_nodes(), 2u);
}

TEST(FoldScaleBias, GemmBias) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {2, 3});
        ir::Value* y = b.op("Gemm", {x, b.rand({3, 4})});
        b.out(b.op("Mul", {b.op("Add", {y, b.rand({4})}), b.rand({1, 4})}));
      },
      passes_of(make_fold_scale_bias()), 1e-4);
  EXPECT_EQ(g->num_nodes(), 1u);
}

}  // namespace kiln::passes::testing
