#include "pass_test_util.h"

namespace kiln::passes::testing {

TEST(EliminateNoops, RemovesPassThroughs) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {2, 3, 4});
        ir::Value* v = b.op("Identity", {x});
        v = b.op("Dropout", {v});
        v = b.op("Cast", {v}, {{"to", I(1)}});
        v = b.op("Transpose", {v}, {{"perm", Is({0, 1, 2})}});
        v = b.op("Reshape", {v, b.ints({2, 3, 4})});
        v = b.op("Pad", {v, b.ints({0, 0, 0, 0, 0, 0})});
        v = b.op("Slice", {v, b.ints({0}), b.ints({100}), b.ints({2})});
        v = b.op("Expand", {v, b.ints({2, 3, 4})});
        b.out(b.op("Relu", {v}));
      },
      passes_of(make_eliminate_noops(), make_dce()));
  EXPECT_EQ(g->num_nodes(), 1u);
}

TEST(EliminateNoops, KeepsRealWork) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {2, 3});
        ir::Value* v = b.op("Cast", {x}, {{"to", I(11)}});
        v = b.op("Cast", {v}, {{"to", I(1)}});
        v = b.op("Transpose", {v}, {{"perm", Is({1, 0})}});
        v = b.op("Slice", {v, b.ints({-1}), b.ints({-100}), b.ints({0}), b.ints({-1})});  // reverses
        b.out(v);
      },
      passes_of(make_eliminate_noops(), make_dce()));
  EXPECT_EQ(g->num_nodes(), 4u);
}

TEST(EliminateNoops, DropoutWithUsedMaskStays) {
  Builder b;
  ir::Value* x = b.in("x", {2});
  ir::Value* y = b.g->add_value("y");
  ir::Value* m = b.g->add_value("m");
  b.g->add_node("Dropout", {x}, {y, m});
  b.out(y);
  b.out(m);
  ops::ShapeInference().run(*b.g);
  EXPECT_FALSE(make_eliminate_noops()->run(*b.g));
}

// Exporters write training_mode = true beside a ratio of 0 (swin_t's attention dropouts): that
// Dropout drops nothing and scales by 1, so it goes; a real ratio in training mode stays.
TEST(EliminateNoops, DropoutOfRatioZeroGoesInTrainingModeToo) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {2, 3});
        ir::Value* on = b.c(Tensor::scalar<bool>(true));
        b.out(b.op("Relu", {b.op("Dropout", {x, b.scalar(0.f), on})}));
      },
      passes_of(make_eliminate_noops(), make_dce()));
  EXPECT_EQ(g->num_nodes(), 1u);
  Builder b;
  ir::Value* x = b.in("x", {2});
  b.out(b.op("Dropout", {x, b.scalar(0.5f), b.c(Tensor::scalar<bool>(true))}));
  ops::ShapeInference().run(*b.g);
  EXPECT_FALSE(make_eliminate_noops()->run(*b.g));
}

TEST(EliminateNoops, IdentityOfInputAsOutputKeepsName) {
  auto g = check_rewrite([](Builder& b) { b.out(b.op("Identity", {b.in("x", {3})})); },
                         passes_of(make_eliminate_noops(), make_dce()));
  EXPECT_EQ(g->num_nodes(), 1u);  // the output still needs its own name
}

// torchvision's DenseNet concatenates a list of one tensor for each block's first layer.
TEST(EliminateNoops, ConcatAndSumOfOneInputGo) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {1, 3, 2, 2});
        ir::Value* c = b.op("Concat", {x}, {{"axis", I(1)}});
        b.out(b.op("Relu", {b.op("Sum", {c})}));
      },
      passes_of(make_eliminate_noops(), make_dce()));
  EXPECT_EQ(g->num_nodes(), 1u);
}

}  // namespace kiln::passes::testing
