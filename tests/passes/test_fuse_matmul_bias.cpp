#include "pass_test_util.h"

namespace kiln::passes::testing {

TEST(FuseMatMulBias, TransformerProjectionWithGelu) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {2, 5, 8});
        ir::Value* h = b.op("Add", {b.op("MatMul", {x, b.rand({8, 6})}), b.rand({6})});
        ir::Value* r = b.op("Relu", {b.op("Add", {b.rand({1, 1, 6}), b.op("MatMul", {h, b.rand({6, 6})})})});
        b.out(r);
      },
      passes_of(make_fuse_matmul_bias(), make_fuse_activation()), 1e-5);
  EXPECT_EQ(count(*g, "FusedMatMul"), 2);
  EXPECT_EQ(count(*g, "Add"), 0);
  EXPECT_EQ(count(*g, "Relu"), 0);
}

TEST(FuseMatMulBias, OtherAddsStay) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {2, 5, 8});
        b.out(b.op("Add", {b.op("MatMul", {x, b.rand({8, 6})}), b.rand({5, 6})}));  // not a vector
        b.out(b.op("Add", {b.op("MatMul", {x, b.in("w", {8, 6})}), b.rand({6})}));  // runtime weights
        b.out(b.op("Add", {b.op("MatMul", {x, b.rand({8, 1})}), b.rand({3})}));     // widens the output
      },
      passes_of(make_fuse_matmul_bias()));
  EXPECT_EQ(count(*g, "FusedMatMul"), 0);
}

}  // namespace kiln::passes::testing
