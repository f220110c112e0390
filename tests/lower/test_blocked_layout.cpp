// The blocked-activation pass on small channels-last graphs: which values go nChw16c, and the
// same numbers as before (the reference kernels honour the layout attributes).
#include "lower/blocked_layout.h"

#include "../passes/pass_test_util.h"
#include "ir/verifier.h"

#include <cmath>

namespace kiln::passes::testing {
namespace {

ir::Attributes conv(int64_t stride = 1) {
  return {{"pads", Is({1, 1, 1, 1})},
          {"strides", Is({stride, stride})},
          {"channels_last", ir::Attribute::of_int(1)},
          {"activation", ir::Attribute::of_string("Relu")}};
}

// Attribute `name` of the i-th node (in the order build() adds them).
int64_t attr(const ir::Graph& g, size_t i, const std::string& name) { return g.nodes().at(i)->attr_int(name, 0); }

// (with 32 channels: 16 would be one block, the same order as NHWC)
// x -> a (3x3) -> b (3x3, residual a) -> c (3x3 stride 2)    b's output feeds a strided conv,
//                 \-> e (3x3, 8 channels)                    and e's has 8 channels: both NHWC.
void build(Builder& b) {
  b.g->opsets["kiln"] = 1;
  ir::Value* x = b.in("x", {1, 9, 8, 16});
  ir::Value* a = b.op("FusedConv", {x, b.rand({32, 16, 3, 3}), b.rand({32})}, conv(), "kiln");
  ir::Value* y = b.op("FusedConv", {a, b.rand({32, 32, 3, 3}), b.rand({32}), a}, conv(), "kiln");
  b.out(b.op("FusedConv", {y, b.rand({16, 32, 3, 3})}, conv(2), "kiln"));
  ir::Value* e = b.op("FusedConv", {a, b.rand({8, 32, 3, 3})}, conv(), "kiln");
  b.out(b.op("FusedConv", {e, b.rand({16, 8, 3, 3})}, conv(), "kiln"));
}

TEST(BlockedLayout, OnlyBetweenWinogradConvs) {
  Builder ref, opt;
  build(ref);
  build(opt);
  ops::ShapeInference().run(*ref.g);
  ops::ShapeInference().run(*opt.g);
  ASSERT_EQ(opt.g->nodes().size(), 5u);
  EXPECT_EQ(lower::assign_blocked_activations(*opt.g), 1);  // a's output only
  ops::ShapeInference().run(*opt.g);
  ir::verify(*opt.g);
  EXPECT_EQ(attr(*opt.g, 0, "y_blocked"), 1);
  EXPECT_EQ(attr(*opt.g, 1, "x_blocked"), 1);
  EXPECT_EQ(attr(*opt.g, 1, "z_blocked"), 1);
  EXPECT_EQ(attr(*opt.g, 1, "y_blocked"), 0);  // read by the stride-2 conv
  EXPECT_EQ(attr(*opt.g, 3, "x_blocked"), 1);
  EXPECT_EQ(attr(*opt.g, 3, "y_blocked"), 0);  // 8 channels
  EXPECT_EQ(attr(*opt.g, 4, "x_blocked"), 0);
  std::vector<Tensor> ins = random_inputs(*ref.g);
  std::vector<Tensor> a = run(*ref.g, ins), b = run(*opt.g, ins);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) expect_close(b[i], a[i], 1e-5);
  // The attributes matter: a consumer that forgot its input is blocked reads other numbers.
  for (ir::Node* n : opt.g->nodes())
    if (n->output(0)->type.dims[3].value == 8) n->attrs.erase("x_blocked");
  std::vector<Tensor> c = run(*opt.g, ins);
  double diff = 0;
  for (int64_t i = 0; i < c[1].numel(); ++i) diff = std::max(diff, double(std::fabs(c[1].data<float>()[i] - a[1].data<float>()[i])));
  EXPECT_GT(diff, 1e-3);
}

// The backend says which convs compute blocked (Backend::runs_blocked): a value goes nChw16c
// only when its producer and every reader do.
TEST(BlockedLayout, OnlyConvsTheBackendRunsBlocked) {
  Builder b;
  build(b);
  ops::ShapeInference().run(*b.g);
  const ir::Node* e = b.g->nodes().at(3);
  EXPECT_EQ(lower::assign_blocked_activations(*b.g, [](const ir::Node&) { return false; }), 0);
  EXPECT_EQ(lower::assign_blocked_activations(*b.g, [e](const ir::Node& n) { return &n != e; }), 0);
  EXPECT_EQ(lower::assign_blocked_activations(*b.g, [](const ir::Node&) { return true; }), 1);
}

TEST(BlockedLayout, GraphOutputsStayNhwc) {
  Builder b;
  b.g->opsets["kiln"] = 1;
  ir::Value* x = b.in("x", {1, 6, 6, 32});
  ir::Value* a = b.op("FusedConv", {x, b.rand({32, 32, 3, 3})}, conv(), "kiln");
  b.out(a);
  b.out(b.op("FusedConv", {a, b.rand({32, 32, 3, 3})}, conv(), "kiln"));
  ops::ShapeInference().run(*b.g);
  EXPECT_EQ(lower::assign_blocked_activations(*b.g), 0);
}

}  // namespace
}  // namespace kiln::passes::testing
