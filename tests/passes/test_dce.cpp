#include "pass_test_util.h"

namespace kiln::passes::testing {

TEST(Dce, RemovesUnreadChainsKeepsOutputs) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {3, 5});
        ir::Value* dead = b.op("Exp", {b.op("Relu", {x})});  // nobody reads it
        (void)dead;
        b.out(b.op("Sigmoid", {x}));
      },
      passes_of(make_dce()));
  EXPECT_EQ(g->num_nodes(), 1u);
  EXPECT_EQ(count(*g, "Sigmoid"), 1);
}

TEST(Dce, NothingToDoIsUnchanged) {
  Builder b;
  b.out(b.op("Relu", {b.in("x", {2})}));
  EXPECT_FALSE(make_dce()->run(*b.g));
}

}  // namespace kiln::passes::testing
