#include "pass_test_util.h"

namespace kiln::passes::testing {

// A ResNet basic block's tail: Relu(Add(Conv(x), skip)) becomes one FusedConv.
TEST(FuseResidualAdd, ResidualBlockBecomesOneConv) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {1, 4, 6, 6});
        ir::Value* h = b.op("Relu", {b.op("Conv", {x, b.rand({4, 4, 3, 3}), b.rand({4})}, {{"pads", Is({1, 1, 1, 1})}})});
        ir::Value* c = b.op("Conv", {h, b.rand({4, 4, 3, 3}), b.rand({4})}, {{"pads", Is({1, 1, 1, 1})}});
        b.out(b.op("Relu", {b.op("Add", {x, c})}));  // the skip is the Add's first input
      },
      passes_of(make_fuse_residual_add(), make_fuse_activation()), 1e-5);
  EXPECT_EQ(count(*g, "FusedConv"), 2);
  EXPECT_EQ(count(*g, "Add"), 0);
  EXPECT_EQ(count(*g, "Relu"), 0);
  EXPECT_EQ(g->num_nodes(), 2u);
  for (const ir::Node* n : g->nodes()) EXPECT_EQ(n->attr_string("activation", ""), "Relu");
}

TEST(FuseResidualAdd, BroadcastAddAndSharedOutputStay) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {1, 4, 6, 6});
        // Per-channel bias-like add: a broadcast, not a residual.
        b.out(b.op("Add", {b.op("Conv", {x, b.rand({4, 4, 1, 1})}), b.rand({4, 1, 1})}));
        // The conv output is also a graph output: the sum cannot replace it.
        ir::Value* c = b.op("Conv", {x, b.rand({4, 4, 1, 1})});
        b.out(c);
        b.out(b.op("Add", {c, x}));
      },
      passes_of(make_fuse_residual_add()));
  EXPECT_EQ(count(*g, "FusedConv"), 0);
  EXPECT_EQ(count(*g, "Add"), 2);
}

TEST(FuseResidualAdd, ConvWithActivationKeepsItsOrder) {
  // act(conv) + z is not act(conv + z): a conv that already has an activation is left alone.
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {1, 4, 6, 6});
        b.out(b.op("Add", {b.op("Relu", {b.op("Conv", {x, b.rand({4, 4, 1, 1})})}), x}));
      },
      passes_of(make_fuse_activation(), make_fuse_residual_add()));
  EXPECT_EQ(count(*g, "Add"), 1);
}

}  // namespace kiln::passes::testing
