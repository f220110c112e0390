#include "pass_test_util.h"

namespace kiln::passes::testing {

TEST(MatMulAddToGemm, TwoDimensional) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {3, 5});
        b.out(b.op("Add", {b.rand({4}), b.op("MatMul", {x, b.rand({5, 4})})}));
      },
      passes_of(make_matmul_add_to_gemm()));
  EXPECT_EQ(count(*g, "Gemm"), 1);
  EXPECT_EQ(g->num_nodes(), 1u);
}

TEST(MatMulAddToGemm, BatchedAndBroadcastingStay) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {2, 3, 5});
        b.out(b.op("Add", {b.op("MatMul", {x, b.rand({5, 4})}), b.rand({4})}));
        ir::Value* y = b.in("y", {1, 5});
        b.out(b.op("Add", {b.op("MatMul", {y, b.rand({5, 4})}), b.rand({3, 4})}));  // grows the output
      },
      passes_of(make_matmul_add_to_gemm()));
  EXPECT_EQ(count(*g, "Gemm"), 0);
}

}  // namespace kiln::passes::testing
