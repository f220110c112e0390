#include "pass_test_util.h"

namespace kiln::passes::testing {

TEST(ReshapeFolding, ChainBecomesOneReshape) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {2, 3, 4});
        ir::Value* v = b.op("Unsqueeze", {x, b.ints({0})});
        v = b.op("Reshape", {v, b.ints({6, 4})});
        v = b.op("Flatten", {v}, {{"axis", I(0)}});
        v = b.op("Squeeze", {v, b.ints({0})});
        b.out(b.op("Relu", {v}));
      },
      passes_of(make_reshape_folding(), make_dce()));
  EXPECT_EQ(count(*g, "Reshape"), 1);
  EXPECT_EQ(g->num_nodes(), 2u);
}

TEST(ReshapeFolding, SymbolicReshapeAfterReshape) {
  Builder b;
  ir::Value* x = b.g->add_input("x", ir::TensorType(DType::Float, {ir::Dim::sym("n"), 4}));
  ir::Value* v = b.op("Reshape", {x, b.ints({-1, 2, 2})});
  b.out(b.op("Reshape", {v, b.ints({-1, 4})}));
  ops::ShapeInference().run(*b.g);
  EXPECT_TRUE(make_reshape_folding()->run(*b.g));
  remove_dead_nodes(*b.g);
  EXPECT_EQ(count(*b.g, "Reshape"), 1);
  std::vector<Tensor> out = run(*b.g, {random_tensor(DType::Float, {3, 4}, 1)});
  EXPECT_EQ(out[0].dims(), (std::vector<int64_t>{3, 4}));
}

TEST(ReshapeFolding, ZeroInShapeIsNotFolded) {
  Builder b;
  ir::Value* x = b.g->add_input("x", ir::TensorType(DType::Float, {ir::Dim::sym("n"), 4}));
  ir::Value* v = b.op("Reshape", {x, b.ints({0, 2, 2})});
  b.out(b.op("Reshape", {v, b.ints({0, -1})}));
  ops::ShapeInference().run(*b.g);
  EXPECT_FALSE(make_reshape_folding()->run(*b.g));
}

}  // namespace kiln::passes::testing
