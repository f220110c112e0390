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

namespace kiln::passes::testing {

TEST(Dce, ValuesReadOnlyBySubgraphsStay) {
  Builder b;
  ir::Value* x = b.in("x", {2});
  ir::Value* pre = b.op("Neg", {x});
  auto body = std::make_shared<ir::Graph>();
  body->parent = b.g.get();
  ir::Value* o = body->add_value("o");
  body->add_node("Relu", {pre}, {o});
  body->add_output(o);
  b.op("Exp", {x});  // dead
  b.out(b.op("If", {b.in("c", {}, DType::Bool)},
             {{"then_branch", ir::Attribute::of_graph(body)}, {"else_branch", ir::Attribute::of_graph(body)}}));
  EXPECT_TRUE(make_dce()->run(*b.g));
  EXPECT_EQ(count(*b.g, "Neg"), 1);
  EXPECT_EQ(count(*b.g, "Exp"), 0);
  ir::verify(*b.g);
}

}  // namespace kiln::passes::testing
