// The kiln-domain ops against their decomposed ai.onnx forms, in one graph with both.
#include "pass_test_util.h"

namespace kiln::passes::testing {

namespace {
void expect_outputs_equal(Builder& b, double tol) {
  ops::ShapeInference().run(*b.g);
  std::vector<Tensor> out = run(*b.g, random_inputs(*b.g));
  ASSERT_EQ(out.size(), 2u);
  expect_close(out[0], out[1], tol);
  EXPECT_EQ(b.g->outputs()[0]->type.str(), b.g->outputs()[1]->type.str());
}
}  // namespace

TEST(KilnFused, AttentionBroadcastsBatchAndMask) {
  Builder b;
  b.g->opsets["kiln"] = 1;
  ir::Value* q = b.in("q", {2, 1, 3, 4});
  ir::Value* kt = b.in("kt", {1, 3, 4, 5});
  ir::Value* v = b.in("v", {3, 5, 2});
  ir::Value* mask = b.rand({3, 1}, -2, 0);  // per query row, broadcast over keys
  b.out(b.op("Attention", {q, kt, v, mask}, {{"scale", F(0.3f)}}, "kiln"));
  ir::Value* s = b.op("Add", {b.op("Mul", {b.op("MatMul", {q, kt}), b.scalar(0.3f)}), mask});
  b.out(b.op("MatMul", {b.op("Softmax", {s}, {{"axis", I(-1)}}), v}));
  expect_outputs_equal(b, 1e-5);
}

TEST(KilnFused, FusedConvResidualAndChannelsLast) {
  for (int nhwc = 0; nhwc <= 1; ++nhwc) {
    SCOPED_TRACE(nhwc);
    Builder b(17);
    b.g->opsets["kiln"] = 1;
    ir::Value* x = b.in("x", {2, 3, 7, 6});  // NCHW
    ir::Value* z = b.in("z", {2, 4, 4, 6});
    ir::Value* w = b.rand({4, 3, 3, 3});
    ir::Value* bias = b.rand({4});
    ir::Attributes a{{"pads", Is({1, 1, 1, 1})}, {"strides", Is({2, 1})}};
    ir::Attributes fa = a;
    fa["activation"] = S("Relu");
    ir::Value* y;
    if (nhwc) {
      fa["channels_last"] = I(1);
      ir::Value* xt = b.op("Transpose", {x}, {{"perm", Is({0, 2, 3, 1})}});
      ir::Value* zt = b.op("Transpose", {z}, {{"perm", Is({0, 2, 3, 1})}});
      y = b.op("Transpose", {b.op("FusedConv", {xt, w, bias, zt}, fa, "kiln")}, {{"perm", Is({0, 3, 1, 2})}});
    } else {
      y = b.op("FusedConv", {x, w, bias, z}, fa, "kiln");
    }
    b.out(y);
    b.out(b.op("Relu", {b.op("Add", {b.op("Conv", {x, w, bias}, a), z})}));
    expect_outputs_equal(b, 1e-5);
  }
}

TEST(KilnFused, NhwcPoolingMatchesPooling) {
  const std::vector<std::pair<std::string, ir::Attributes>> pools = {
      {"MaxPool", {{"kernel_shape", Is({3, 3})}, {"strides", Is({2, 2})}, {"pads", Is({1, 1, 1, 1})}}},
      {"AveragePool", {{"kernel_shape", Is({2, 3})}, {"ceil_mode", I(1)}, {"strides", Is({2, 2})}}},
      {"GlobalAveragePool", {}},
      {"GlobalMaxPool", {}}};
  for (const auto& [op, attrs] : pools) {
    SCOPED_TRACE(op);
    Builder b(17);
    b.g->opsets["kiln"] = 1;
    ir::Value* x = b.in("x", {2, 5, 9, 8});
    ir::Value* xt = b.op("Transpose", {x}, {{"perm", Is({0, 2, 3, 1})}});
    b.out(b.op("Transpose", {b.op("Nhwc" + op, {xt}, attrs, "kiln")}, {{"perm", Is({0, 3, 1, 2})}}));
    b.out(b.op(op, {x}, attrs));
    expect_outputs_equal(b, 1e-6);
  }
}

TEST(KilnFused, ResidualWithWrongShapeIsAnError) {
  Builder b;
  b.g->opsets["kiln"] = 1;
  ir::Value* x = b.in("x", {1, 2, 5, 5});
  b.out(b.op("FusedConv", {x, b.rand({3, 2, 3, 3}), b.rand({3}), b.in("z", {1, 3, 5, 5})}, {}, "kiln"));
  EXPECT_THROW(ops::ShapeInference().run(*b.g), Error);
}

TEST(KilnFused, FusedConvMatchesConvThenActivation) {
  for (const char* act : {"Relu", "Sigmoid", "Tanh", "HardSwish", "Gelu"}) {
    SCOPED_TRACE(act);
    Builder b(17);  // HardSwish is opset 14+
    b.g->opsets["kiln"] = 1;
    ir::Value* x = b.in("x", {1, 2, 5, 4});
    ir::Value* w = b.rand({3, 2, 3, 3});
    ir::Attributes a{{"pads", Is({1, 0, 1, 0})}, {"strides", Is({2, 1})}};
    ir::Attributes fa = a;
    fa["activation"] = S(act);
    b.out(b.op("FusedConv", {x, w}, fa, "kiln"));
    b.out(b.op(act, {b.op("Conv", {x, w}, a)}));
    expect_outputs_equal(b, 1e-5);
  }
}

TEST(KilnFused, SiLUAndBadInputs) {
  Builder b;
  b.g->opsets["kiln"] = 1;
  ir::Value* x = b.in("x", {7});
  b.out(b.op("SiLU", {x}, {}, "kiln"));
  b.out(b.op("Mul", {x, b.op("Sigmoid", {x})}));
  expect_outputs_equal(b, 1e-6);

  Builder bad;
  bad.g->opsets["kiln"] = 1;
  ir::Value* q = bad.in("q", {2, 3});
  bad.out(bad.op("Attention", {q, bad.in("k", {4, 2}), bad.in("v", {2, 2})}, {}, "kiln"));
  EXPECT_THROW(ops::ShapeInference().run(*bad.g), Error);  // Q's 3 != K_T's 4

  // Perms that are not permutations of the operand's axes, and one that is (Q read as [3, 2]).
  for (std::vector<int64_t> p : {std::vector<int64_t>{0, 0}, {0, 1, 2}, {1, 2}}) {
    Builder perm;
    perm.g->opsets["kiln"] = 1;
    perm.out(perm.op("Attention", {perm.in("q", {2, 3}), perm.in("k", {3, 4}), perm.in("v", {4, 2})},
                     {{"q_perm", Is(p)}}, "kiln"));
    EXPECT_THROW(ops::ShapeInference().run(*perm.g), Error) << p.size();
  }
  // An index past the selected axis, and one on a matrix (no batch axis to take).
  for (auto [dims, index] : {std::pair{std::vector<int64_t>{3, 2, 3}, int64_t{3}}, {{2, 3}, 0}}) {
    Builder idx;
    idx.g->opsets["kiln"] = 1;
    idx.out(idx.op("Attention", {idx.in("q", dims), idx.in("k", {3, 4}), idx.in("v", {4, 2})},
                   {{"q_index", I(index)}}, "kiln"));
    EXPECT_THROW(ops::ShapeInference().run(*idx.g), Error) << index;
  }
  Builder ok;
  ok.g->opsets["kiln"] = 1;
  ok.out(ok.op("Attention", {ok.in("q", {2, 3}), ok.in("k", {2, 4}), ok.in("v", {4, 5})},
               {{"q_perm", Is({1, 0})}, {"out_perm", Is({1, 0})}}, "kiln"));
  ops::ShapeInference().run(*ok.g);
  EXPECT_EQ(ok.g->outputs()[0]->type.static_dims(), (std::vector<int64_t>{5, 3}));

  Builder clip;
  clip.g->opsets["kiln"] = 1;
  ir::Value* y = clip.in("y", {2, 2});
  clip.out(clip.op("FusedMatMul", {y, y}, {{"activation", S("Clip")}}, "kiln"));  // needs [min, max]
  EXPECT_THROW(ops::ShapeInference().run(*clip.g), Error);
}

}  // namespace kiln::passes::testing
