#include "pass_test_util.h"

namespace kiln::passes::testing {

namespace {

// Every node of `op` in g has a rank-4 output.
bool all_2d(const ir::Graph& g, const std::string& op) {
  for (const ir::Node* n : g.nodes())
    if (n->op_type() == op && n->output(0)->type.rank() != 4) return false;
  return true;
}

}  // namespace

// An M5-style audio CNN: a strided wide-kernel conv, convs with padding, dilation and groups,
// the pools, an unfolded BatchNorm, activations and a scalar Mul between them. Every conv and
// pool becomes 2-D, with the elementwise ops that alone read their results; with reshape
// folding only the Reshapes at the ends are left, and where a result has several readers
// (the last conv's: an output, a Sigmoid, a pool) those readers see it 1-D.
TEST(Lift1dSpatial, ConvsAndPoolsBecomeTwoDAndTheReshapesBetweenThemFold) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {2, 3, 101});
        ir::Value* y = b.op("Conv", {x, b.rand({8, 3, 9}), b.rand({8})}, {{"strides", Is({2})}, {"pads", Is({3, 1})}});
        y = b.op("Relu", {y});
        y = b.op("MaxPool", {y}, {{"kernel_shape", Is({3})}, {"strides", Is({2})}, {"ceil_mode", I(1)}});
        y = b.op("Conv", {y, b.rand({8, 4, 3})}, {{"group", I(2)}, {"dilations", Is({2})}, {"pads", Is({2, 2})}});
        y = batchnorm(b, y, 8);
        y = b.op("Mul", {b.op("Clip", {y, b.scalar(-0.5f), b.scalar(0.5f)}), b.scalar(3.f)});
        y = b.op("AveragePool", {y}, {{"kernel_shape", Is({2})}, {"pads", Is({1, 0})}, {"count_include_pad", I(0)}});
        y = b.op("Conv", {y, b.rand({6, 8, 1})}, {{"auto_pad", S("SAME_UPPER")}});
        b.out(y);
        b.out(b.op("GlobalMaxPool", {b.op("Sigmoid", {y})}));
        b.out(b.op("GlobalAveragePool", {y}));
      },
      passes_of(make_lift_1d_spatial(), make_reshape_folding(), make_eliminate_noops(), make_dce()), 1e-5);
  for (const char* op : {"Conv", "MaxPool", "AveragePool", "GlobalMaxPool", "GlobalAveragePool", "Relu",
                         "BatchNormalization", "Clip", "Mul"})
    EXPECT_TRUE(all_2d(*g, op)) << op;
  EXPECT_FALSE(all_2d(*g, "Sigmoid"));
  // The input's; the last conv's result back to 1-D (its readers'); the Sigmoid's up to 2-D for
  // its pool; the two global pools' results.
  EXPECT_EQ(count(*g, "Reshape"), 5);
}

// A 1-D residual block as exporters write one without folding: a conv without bias, a separate
// per-channel bias [C,1], the residual Add of the block's input, ReLU. The Add's other operand (the
// block's input, itself a lifted pool's result) is read through a Reshape that folds away: the
// block is 2-D from the pool to the last ReLU.
TEST(Lift1dSpatial, ABiasAndAResidualAddMoveAlong) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {1, 6, 40});
        ir::Value* p = b.op("MaxPool", {x}, {{"kernel_shape", Is({2})}, {"strides", Is({2})}});
        ir::Value* y = b.op("Conv", {p, b.rand({6, 6, 3})}, {{"pads", Is({1, 1})}});
        y = b.op("Relu", {b.op("Add", {y, b.rand({6, 1})})});
        y = b.op("Conv", {y, b.rand({6, 6, 3}), b.rand({6})}, {{"pads", Is({1, 1})}});
        y = b.op("Relu", {b.op("Add", {y, p})});
        b.out(y);
      },
      passes_of(make_lift_1d_spatial(), make_reshape_folding(), make_eliminate_noops(), make_dce()), 1e-5);
  for (const char* op : {"Conv", "MaxPool", "Add", "Relu"}) EXPECT_TRUE(all_2d(*g, op)) << op;
  EXPECT_EQ(count(*g, "Reshape"), 2);  // the input's and the output's
}

// A 1-D decoder's transposed convs: strided with output padding, and one with output_shape and
// groups.
TEST(Lift1dSpatial, TransposedConvsToo) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {2, 4, 9});
        ir::Value* y = b.op("ConvTranspose", {x, b.rand({4, 3, 4}), b.rand({3})},
                            {{"strides", Is({2})}, {"pads", Is({1, 0})}, {"output_padding", Is({1})}});
        y = b.op("Relu", {y});
        b.out(b.op("ConvTranspose", {y, b.rand({3, 2, 3})},
                   {{"strides", Is({3})}, {"group", I(3)}, {"output_shape", Is({61})}}));
      },
      passes_of(make_lift_1d_spatial(), make_reshape_folding(), make_eliminate_noops(), make_dce()), 1e-5);
  for (const char* op : {"ConvTranspose", "Relu"}) EXPECT_TRUE(all_2d(*g, op)) << op;
  EXPECT_EQ(count(*g, "Reshape"), 2);
}

// What is not a static float 1-D conv or pool stays: 2-D ones, a MaxPool with indices, a conv
// whose weights are computed, a symbolic length.
TEST(Lift1dSpatial, OtherFormsStay) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {1, 4, 10});
        ir::Value* w = b.op("Mul", {b.in("w", {4, 4, 3}), b.scalar(2.f)});
        b.out(b.op("Conv", {x, w}));
        ir::Value* img = b.in("img", {1, 4, 6, 6});
        b.out(b.op("MaxPool", {img}, {{"kernel_shape", Is({2, 2})}}));
      },
      passes_of(make_lift_1d_spatial()), 1e-6);
  EXPECT_EQ(count(*g, "Reshape"), 0);
  Builder b;
  ir::Value* x = b.in("x", {1, 4, 10});
  ir::Value* y = b.g->add_value("y"), *idx = b.g->add_value("idx");
  b.g->add_node("MaxPool", {x}, {y, idx}, {{"kernel_shape", Is({2})}}, "pool");
  b.out(y);
  b.out(idx);
  ir::Value* s = b.g->add_input("s", ir::TensorType(DType::Float, {ir::Dim(1), ir::Dim(4), ir::Dim::sym("len")}));
  b.out(b.op("MaxPool", {s}, {{"kernel_shape", Is({2})}}));
  ops::ShapeInference().run(*b.g);
  EXPECT_FALSE(make_lift_1d_spatial()->run(*b.g));
}

}  // namespace kiln::passes::testing
