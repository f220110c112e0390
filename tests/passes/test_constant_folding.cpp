#include "pass_test_util.h"

namespace kiln::passes::testing {

TEST(ConstantFolding, ShapeChainBecomesConstantReshape) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {2, 6, 3});
        ir::Value* shape = b.op("Shape", {x});
        ir::Value* d0 = b.op("Gather", {shape, b.c(Tensor::scalar<int64_t>(0))}, {{"axis", I(0)}});
        ir::Value* half = b.op("Div", {b.op("Gather", {shape, b.c(Tensor::scalar<int64_t>(1))}, {{"axis", I(0)}}),
                                       b.c(Tensor::scalar<int64_t>(2))});
        auto u = [&](ir::Value* v) { return b.op("Unsqueeze", {v, b.ints({0})}); };
        ir::Value* target = b.op("Concat", {u(d0), u(half), b.ints({-1})}, {{"axis", I(0)}});
        b.out(b.op("Reshape", {x, target}));
      },
      passes_of(make_constant_folding(), make_dce()));
  EXPECT_EQ(g->num_nodes(), 1u);
  EXPECT_EQ(count(*g, "Reshape"), 1);
  EXPECT_TRUE(g->nodes()[0]->input(1)->is_constant());
}

TEST(ConstantFolding, ConstantNodeAndWeightArithmetic) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {4, 3});
        ir::Attributes a{{"value", ir::Attribute::of_tensor(random_tensor(DType::Float, {3}, 3))}};
        ir::Value* k = b.op("Constant", {}, a);
        ir::Value* w = b.op("Mul", {b.op("Transpose", {b.rand({3, 3})}, {{"perm", Is({1, 0})}}), k});
        b.out(b.op("MatMul", {x, w}));
      },
      passes_of(make_constant_folding(), make_dce()));
  EXPECT_EQ(g->num_nodes(), 1u);
}

TEST(ConstantFolding, KeepsGraphOutputName) {
  auto g = check_rewrite(
      [](Builder& b) {
        b.in("x", {1});
        ir::Value* y = b.op("Neg", {b.scalar(2)});
        b.out(y);
      },
      passes_of(make_constant_folding()));
  EXPECT_EQ(g->num_nodes(), 0u);
  EXPECT_TRUE(g->outputs()[0]->is_constant());
}

TEST(ConstantFolding, CapStopsHugeExpand) {
  Builder b;
  ir::Value* x = b.in("x", {1});
  ir::Value* big = b.op("Expand", {b.scalar(1), b.ints({1000, 1000})});
  b.out(b.op("Add", {x, big}));
  ops::ShapeInference().run(*b.g);
  EXPECT_FALSE(make_constant_folding(1000)->run(*b.g));
  EXPECT_EQ(count(*b.g, "Expand"), 1);
}

// A shifted-window attention mask (swin_t's first stage: 64 windows of 49 x 49) built from small
// constants folds under the default cap, which a run would otherwise recompute every time.
TEST(ConstantFolding, FoldsAWindowMaskUnderTheDefaultCap) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {64, 49, 49});
        ir::Value* diff = b.op("Sub", {b.rand({64, 1, 49}), b.rand({64, 49, 1})});
        ir::Value* nonzero = b.op("Not", {b.op("Equal", {diff, b.scalar(0)})});
        b.out(b.op("Add", {x, b.op("Where", {nonzero, b.scalar(-100), b.scalar(0)})}));
      },
      passes_of(make_constant_folding(), make_dce()));
  EXPECT_EQ(g->num_nodes(), 1u);
  EXPECT_EQ(count(*g, "Where"), 0);
}

TEST(ConstantFolding, ShapeOfSymbolicStays) {
  Builder b;
  ir::Value* x = b.g->add_input("x", ir::TensorType(DType::Float, {ir::Dim::sym("n"), 3}));
  b.out(b.op("Shape", {x}));
  ops::ShapeInference().run(*b.g);
  EXPECT_FALSE(make_constant_folding()->run(*b.g));
}

}  // namespace kiln::passes::testing
