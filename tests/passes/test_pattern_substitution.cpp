#include "pass_test_util.h"
#include "passes/pattern.h"

namespace kiln::passes::testing {

namespace {
ir::Value* layer_norm(Builder& b, ir::Value* x, int64_t d) {
  ir::Value* mean = b.op("ReduceMean", {x}, {{"axes", Is({-1})}});
  ir::Value* dev = b.op("Sub", {x, mean});
  ir::Value* var = b.op("ReduceMean", {b.op("Pow", {dev, b.scalar(2)})}, {{"axes", Is({-1})}});
  ir::Value* norm = b.op("Div", {dev, b.op("Sqrt", {b.op("Add", {var, b.scalar(1e-5f)})})});
  return b.op("Add", {b.op("Mul", {norm, b.rand({d})}), b.rand({d})});
}
}  // namespace

TEST(PatternSubstitution, LayerNorm) {
  auto g = check_rewrite([](Builder& b) { b.out(layer_norm(b, b.in("x", {2, 3, 8}), 8)); },
                         passes_of(make_pattern_substitution()), 1e-4);
  EXPECT_EQ(count(*g, "LayerNormalization"), 1);
  EXPECT_EQ(g->num_nodes(), 1u);
}

TEST(PatternSubstitution, LayerNormAtOpset18WithAxesAsInputs) {
  auto g = check_rewrite(
      [](Builder& b) {
        b.g->opsets[""] = 18;
        ir::Value* x = b.in("x", {3, 5, 11});
        ir::Value* mean = b.op("ReduceMean", {x, b.ints({-1})});
        ir::Value* dev = b.op("Sub", {x, mean});
        ir::Value* var = b.op("ReduceMean", {b.op("Mul", {dev, dev}), b.ints({2})});
        ir::Value* norm = b.op("Div", {dev, b.op("Sqrt", {b.op("Add", {var, b.scalar(1e-6f)})})});
        b.out(b.op("Add", {b.op("Mul", {norm, b.rand({11})}), b.rand({11})}));
      },
      passes_of(make_pattern_substitution()), 1e-4);
  EXPECT_EQ(count(*g, "LayerNormalization"), 1);
  EXPECT_EQ(g->num_nodes(), 1u);
  // Axes that are not the last one are left alone, as in the attribute form.
  g = check_rewrite(
      [](Builder& b) {
        b.g->opsets[""] = 18;
        ir::Value* x = b.in("x", {3, 5, 11});
        ir::Value* dev = b.op("Sub", {x, b.op("ReduceMean", {x, b.ints({1})})});
        ir::Value* var = b.op("ReduceMean", {b.op("Mul", {dev, dev}), b.ints({1})});
        b.out(b.op("Div", {dev, b.op("Sqrt", {b.op("Add", {var, b.scalar(1e-6f)})})}));
      },
      passes_of(make_pattern_substitution()), 1e-4);
  EXPECT_EQ(count(*g, "LayerNormalization"), 0);
}

TEST(PatternSubstitution, LayerNormWithSharedMeanIsLeftAlone) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {2, 8});
        ir::Value* y = layer_norm(b, x, 8);
        b.out(y);
        // The first ReduceMean is also read outside the pattern.
        b.out(b.g->nodes()[0]->output(0));
      },
      passes_of(make_pattern_substitution()));
  EXPECT_EQ(count(*g, "LayerNormalization"), 0);
}

TEST(PatternSubstitution, GeluErfAndTanhAndSiLU) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {3, 7});
        ir::Value* erf = b.op("Add", {b.op("Erf", {b.op("Div", {x, b.scalar(1.4142135f)})}), b.scalar(1)});
        ir::Value* g1 = b.op("Mul", {b.op("Mul", {x, erf}), b.scalar(0.5f)});
        ir::Value* y = b.in("y", {3, 7});
        ir::Value* cube = b.op("Mul", {b.op("Pow", {y, b.scalar(3)}), b.scalar(0.044715f)});
        ir::Value* th = b.op("Tanh", {b.op("Mul", {b.op("Add", {y, cube}), b.scalar(0.7978845608f)})});
        ir::Value* g2 = b.op("Mul", {b.op("Mul", {b.scalar(0.5f), y}), b.op("Add", {b.scalar(1), th})});
        ir::Value* s = b.op("Mul", {b.op("Sigmoid", {g2}), g2});
        b.out(b.op("Add", {g1, s}));
      },
      passes_of(make_pattern_substitution()), 1e-4);
  EXPECT_EQ(count(*g, "Gelu"), 2);
  EXPECT_EQ(count(*g, "SiLU"), 1);
  EXPECT_EQ(g->num_nodes(), 4u);
}

TEST(PatternSubstitution, GatedSigmoidIsNotSiLU) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {4});
        b.out(b.op("Mul", {x, b.op("Sigmoid", {b.in("y", {4})})}));
      },
      passes_of(make_pattern_substitution()));
  EXPECT_EQ(count(*g, "SiLU"), 0);
}

TEST(PatternSubstitution, AttentionWithScaleAndMask) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* q = b.in("q", {1, 2, 5, 4});
        ir::Value* k = b.in("k", {1, 2, 5, 4});
        ir::Value* v = b.in("v", {1, 2, 5, 3});
        ir::Value* kt = b.op("Transpose", {k}, {{"perm", Is({0, 1, 3, 2})}});
        ir::Value* s = b.op("Div", {b.op("MatMul", {q, kt}), b.scalar(2)});
        s = b.op("Add", {s, b.rand({1, 1, 1, 5}, -3, 0)});
        b.out(b.op("MatMul", {b.op("Softmax", {s}, {{"axis", I(-1)}}), v}));
        // And the unscaled, unmasked form over 3-D tensors.
        ir::Value* p = b.in("p", {3, 6, 4});
        ir::Value* pt = b.in("pt", {3, 4, 6});
        b.out(b.op("MatMul", {b.op("Softmax", {b.op("MatMul", {p, pt})}, {{"axis", I(2)}}), p}));
      },
      passes_of(make_pattern_substitution()), 1e-5);
  EXPECT_EQ(count(*g, "Attention"), 2);
  EXPECT_EQ(count(*g, "Softmax"), 0);
}

TEST(PatternSubstitution, SoftmaxOverAnotherAxisIsNotAttention) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* q = b.in("q", {4, 4});
        b.out(b.op("MatMul", {b.op("Softmax", {b.op("MatMul", {q, q})}, {{"axis", I(0)}}), q}));
      },
      passes_of(make_pattern_substitution()));
  EXPECT_EQ(count(*g, "Attention"), 0);
}

TEST(Pattern, ParsesAndRejects) {
  EXPECT_NO_THROW(Pattern("(Add (Mul:m $x #c) 1.5)"));
  EXPECT_THROW(Pattern("(Add $x"), Error);
  EXPECT_THROW(Pattern("$x"), Error);
  EXPECT_THROW(Pattern("(Add $x) extra"), Error);
  EXPECT_THROW(Pattern("(Add 1.5x)"), Error);
  EXPECT_NO_THROW(Pattern("(ReduceMean $x #axes?)"));
  EXPECT_THROW(Pattern("(Clip $x #lo? #hi)"), Error);  // only trailing operands are optional
}

TEST(Pattern, OptionalTrailingOperand) {
  Builder b(18);
  ir::Value* x = b.in("x", {2, 3});
  ir::Value* with = b.op("ReduceMean", {x, b.ints({1})});
  ir::Value* without = b.op("ReduceMean", {x}, {{"axes", Is({1})}});
  b.out(b.op("Add", {with, without}));
  Pattern p("(ReduceMean $x #axes?)");
  auto m = p.match(*b.g, with->producer());
  ASSERT_TRUE(m);
  EXPECT_EQ(m->value("x"), x);
  EXPECT_TRUE(m->value("axes")->is_constant());
  m = p.match(*b.g, without->producer());
  ASSERT_TRUE(m);
  EXPECT_THROW(m->value("axes"), Error);
  EXPECT_FALSE(Pattern("(ReduceMean $x)").match(*b.g, with->producer()));  // an extra input still fails
}

TEST(Pattern, RepeatedNameMustBeSameValue) {
  Builder b;
  ir::Value* x = b.in("x", {2});
  ir::Value* y = b.in("y", {2});
  b.out(b.op("Mul", {x, b.op("Sigmoid", {y})}));
  Pattern p("(Mul $x (Sigmoid $x))");
  EXPECT_FALSE(p.match(*b.g, b.g->nodes().back()));
  Pattern q("(Mul (Sigmoid $s) $x)");  // commutative: matches with the inputs swapped
  auto m = q.match(*b.g, b.g->nodes().back());
  ASSERT_TRUE(m);
  EXPECT_EQ(m->value("x"), x);
  EXPECT_EQ(m->value("s"), y);
}

}  // namespace kiln::passes::testing
