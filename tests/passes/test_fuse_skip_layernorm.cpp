#include "pass_test_util.h"

namespace kiln::passes::testing {

namespace {

ir::Attributes ln_attrs(int64_t axis = -1, float eps = 1e-12f) { return {{"axis", I(axis)}, {"epsilon", F(eps)}}; }

// LayerNormalization with its Mean and InvStdDev outputs, returned in order.
std::vector<ir::Value*> ln3(Builder& b, ir::Value* x, ir::Value* gamma, ir::Value* beta) {
  std::vector<ir::Value*> outs;
  for (const char* s : {"y", "mean", "inv"}) outs.push_back(b.g->add_value(b.g->unique_name(s)));
  b.g->add_node("LayerNormalization", {x, gamma, beta}, outs, ln_attrs());
  return outs;
}

int outputs_of(const ir::Graph& g, const std::string& op) {
  for (const ir::Node* n : g.nodes())
    if (n->op_type() == op) return n->num_outputs();
  return -1;
}

}  // namespace

TEST(FuseSkipLayerNorm, TwoTransformerLayers) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* h = b.in("x", {2, 5, 8});
        for (int layer = 0; layer < 2; ++layer) {
          ir::Value* attn = b.op("Add", {b.op("MatMul", {h, b.rand({8, 8})}), b.rand({8})});
          h = b.op("LayerNormalization", {b.op("Add", {attn, h}), b.rand({8}, 0.5f, 2), b.rand({8})}, ln_attrs());
          ir::Value* ffn = b.op("Add", {b.op("MatMul", {h, b.rand({8, 8})}), b.rand({8})});
          h = b.op("LayerNormalization", {b.op("Add", {h, ffn}), b.rand({8}, 0.5f, 2), b.rand({8})}, ln_attrs());
        }
        b.out(h);
      },
      passes_of(make_fuse_skip_layernorm()));
  EXPECT_EQ(count(*g, "SkipLayerNorm"), 4);
  EXPECT_EQ(count(*g, "LayerNormalization"), 0);
  EXPECT_EQ(count(*g, "Add"), 4);  // the bias adds
  EXPECT_EQ(outputs_of(*g, "SkipLayerNorm"), 1);
  EXPECT_EQ(g->opset("kiln"), 1);
}

TEST(FuseSkipLayerNorm, SumWithOtherReadersUsesTheSecondOutput) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {3, 13});
        ir::Value* s = b.op("Add", {x, b.in("skip", {3, 13})});
        ir::Value* y = b.op("LayerNormalization", {s, b.rand({13}), b.rand({13})}, ln_attrs(1, 1e-5f));
        b.out(b.op("Mul", {s, y}));
        b.out(s);  // and a graph output
      },
      passes_of(make_fuse_skip_layernorm()));
  EXPECT_EQ(count(*g, "SkipLayerNorm"), 1);
  EXPECT_EQ(count(*g, "Add"), 0);
  EXPECT_EQ(outputs_of(*g, "SkipLayerNorm"), 2);
}

TEST(FuseSkipLayerNorm, UnusedStatisticsAndRowScale) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* s = b.op("Add", {b.in("a", {4, 1, 6}), b.in("b", {4, 1, 6})});
        b.out(ln3(b, s, b.rand({1, 6}), b.rand({1, 1, 6}))[0]);  // statistics computed, never read
      },
      passes_of(make_fuse_skip_layernorm()));
  EXPECT_EQ(count(*g, "SkipLayerNorm"), 1);
  for (const ir::Node* n : g->nodes())
    if (n->op_type() == "SkipLayerNorm") {
      EXPECT_EQ(n->input(2)->type.str(), "float[6]");
      EXPECT_EQ(n->input(3)->type.str(), "float[6]");
    }
}

TEST(FuseSkipLayerNorm, SymbolicBatchAndSequence) {
  Builder b;
  const ir::TensorType t(DType::Float, {ir::Dim::sym("batch"), ir::Dim::sym("seq"), 8});
  ir::Value* s = b.op("Add", {b.g->add_input("a", t), b.g->add_input("b", t)});
  b.out(b.op("LayerNormalization", {s, b.rand({8}), b.rand({8})}, ln_attrs()));
  // Unknown dims (no symbol) may differ at run time: a broadcast in disguise.
  const ir::TensorType u(DType::Float, {ir::Dim(), 8});
  ir::Value* su = b.op("Add", {b.g->add_input("c", u), b.g->add_input("d", u)});
  b.out(b.op("LayerNormalization", {su, b.rand({8}), b.rand({8})}, ln_attrs()));
  ops::ShapeInference().run(*b.g);
  PassManager pm(PassManager::Options{.verify = true});
  pm.add_stage(passes_of(make_fuse_skip_layernorm()));
  pm.run(*b.g);
  remove_dead_nodes(*b.g);
  EXPECT_EQ(count(*b.g, "SkipLayerNorm"), 1);
  EXPECT_EQ(count(*b.g, "LayerNormalization"), 1);
  EXPECT_EQ(b.g->outputs()[0]->type.str(), "float[batch,seq,8]");
}

TEST(FuseSkipLayerNorm, OtherFormsStay) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {2, 5, 8});
        auto ln = [&](ir::Value* v, ir::Value* gamma, ir::Attributes attrs = ln_attrs()) {
          return b.op("LayerNormalization", {v, gamma, b.rand({8})}, std::move(attrs));
        };
        b.out(ln(b.op("Add", {x, b.rand({8})}), b.rand({8})));                   // a bias, broadcast
        b.out(ln(b.op("Add", {x, b.in("row", {1, 5, 8})}), b.rand({8})));        // broadcasts over batch
        b.out(ln(b.op("Add", {x, b.in("y", {2, 5, 8})}), b.in("gamma", {8})));   // runtime scale
        b.out(ln(b.op("Add", {x, b.in("z", {2, 5, 8})}), b.rand({8}), {{"axis", I(1)}}));  // not the last axis
        b.out(ln(b.op("Sub", {x, b.in("w", {2, 5, 8})}), b.rand({8})));          // not an Add
        ir::Value* s = b.op("Add", {x, b.in("v", {2, 5, 8})});
        auto outs = ln3(b, s, b.rand({8}), b.rand({8}));
        b.out(outs[0]);
        b.out(outs[1]);  // the mean is read
      },
      passes_of(make_fuse_skip_layernorm()));
  EXPECT_EQ(count(*g, "SkipLayerNorm"), 0);
  EXPECT_EQ(count(*g, "LayerNormalization"), 6);
}

TEST(FuseSkipLayerNorm, Level3Pipeline) {
  auto build = [](Builder& b) {
    ir::Value* x = b.in("x", {2, 5, 8});
    ir::Value* attn = b.op("Add", {b.op("MatMul", {x, b.rand({8, 8})}), b.rand({8})});
    ir::Value* h = b.op("LayerNormalization", {b.op("Add", {x, attn}), b.rand({8}), b.rand({8})}, ln_attrs());
    b.out(b.op("Relu", {h}));
  };
  Builder ref, opt;
  build(ref);
  build(opt);
  ops::ShapeInference().run(*ref.g);
  OptimizeOptions o;
  o.level = 3;
  o.verify = true;
  optimize(*opt.g, o);
  EXPECT_EQ(count(*opt.g, "SkipLayerNorm"), 1);
  EXPECT_EQ(count(*opt.g, "FusedMatMul"), 1);
  EXPECT_EQ(count(*opt.g, "Add"), 0);
  std::vector<Tensor> ins = random_inputs(*ref.g);
  expect_close(run(*opt.g, ins)[0], run(*ref.g, ins)[0], 1e-5);
}

}  // namespace kiln::passes::testing
