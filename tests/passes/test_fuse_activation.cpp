#include "pass_test_util.h"

namespace kiln::passes::testing {

TEST(FuseActivation, ConvGemmMatMulEpilogues) {
  auto g = check_rewrite(
      [](Builder& b) {
        b.g->opsets["kiln"] = 1;
        ir::Value* x = b.in("x", {1, 2, 5, 5});
        ir::Value* c = b.op("Relu", {b.op("Conv", {x, b.rand({3, 2, 3, 3}), b.rand({3})})});
        c = b.op("HardSigmoid", {b.op("Conv", {c, b.rand({3, 3, 1, 1})})}, {{"alpha", F(0.3f)}});
        ir::Value* f = b.op("Flatten", {c});
        ir::Value* gm = b.op("Clip", {b.op("Gemm", {f, b.rand({27, 6}), b.rand({6})}), b.scalar(-0.5f), b.scalar(0.5f)});
        ir::Value* mm = b.op("LeakyRelu", {b.op("MatMul", {gm, b.rand({6, 4})})}, {{"alpha", F(0.1f)}});
        ir::Value* t = b.op("Gelu", {b.op("MatMul", {mm, b.rand({4, 4})})}, {{"approximate", S("tanh")}});
        b.out(b.op("SiLU", {b.op("MatMul", {t, b.rand({4, 2})})}, {}, "kiln"));
      },
      passes_of(make_fuse_activation()), 1e-4);
  EXPECT_EQ(count(*g, "FusedConv"), 2);
  EXPECT_EQ(count(*g, "FusedGemm"), 1);
  EXPECT_EQ(count(*g, "FusedMatMul"), 3);
  EXPECT_EQ(g->num_nodes(), 7u);
}

TEST(FuseActivation, SharedOutputStays) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {2, 3});
        ir::Value* y = b.op("MatMul", {x, b.rand({3, 3})});
        b.out(b.op("Relu", {y}));
        b.out(y);
      },
      passes_of(make_fuse_activation()));
  EXPECT_EQ(count(*g, "FusedMatMul"), 0);
}

// HardSwish as exporters write it before opset 14 (MobileNetV3): x * HardSigmoid(x; 1/6, 1/2),
// in either order; other HardSigmoid parameters, or a HardSigmoid read elsewhere, stay.
TEST(FuseActivation, HardSigmoidTimesItsInputIsHardSwish) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {1, 3, 6, 5});
        ir::Value* y = b.op("Conv", {x, b.rand({4, 3, 3, 3}), b.rand({4})}, {{"pads", Is({1, 1, 1, 1})}});
        ir::Value* hs = b.op("HardSigmoid", {y}, {{"alpha", F(1.f / 6)}, {"beta", F(0.5f)}});
        ir::Value* z = b.op("Conv", {b.op("Mul", {hs, y}), b.rand({4, 4, 1, 1})});
        ir::Value* hz = b.op("HardSigmoid", {z}, {{"alpha", F(0.2f)}, {"beta", F(0.5f)}});
        b.out(b.op("Mul", {z, hz}));
      },
      passes_of(make_fuse_activation()), 1e-5);
  EXPECT_EQ(count(*g, "FusedConv"), 1);
  EXPECT_EQ(count(*g, "HardSigmoid"), 1);  // the second, alpha 0.2, is not HardSwish
  for (const ir::Node* n : g->nodes()) {
    if (n->op_type() == "FusedConv") {
      EXPECT_EQ(n->attr_string("activation", ""), "HardSwish");
    }
  }
}

TEST(FuseActivation, BadActivationIsAnError) {
  Builder b;
  b.g->opsets["kiln"] = 1;
  ir::Value* x = b.in("x", {2, 2});
  b.out(b.op("FusedMatMul", {x, x}, {{"activation", S("Swish9")}}, "kiln"));
  EXPECT_THROW(ops::ShapeInference().run(*b.g), Error);
}

}  // namespace kiln::passes::testing
