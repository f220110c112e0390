// Concat elimination for channels-last convs: which Concats become kiln.ConvConcat, and the same
// numbers as before (the reference kernel runs the body node by node).
#include "lower/fuse_conv_concat.h"

#include "../passes/pass_test_util.h"

namespace kiln::passes::testing {
namespace {

ir::Attributes conv(int64_t pad, const char* act = "Relu") {
  ir::Attributes a{{"pads", Is({pad, pad, pad, pad})}, {"channels_last", ir::Attribute::of_int(1)}};
  if (*act) a["activation"] = ir::Attribute::of_string(act);
  return a;
}

// x -> squeeze (1x1) -> expand1x1, expand3x3 -> Concat(axis 3) -> a 1x1 conv: squeezenet's fire
// module, with odd channel counts.
void fuse_and_compare(const std::function<void(Builder&)>& build, int expect_fused) {
  auto g = check_lowering(build, [](ir::Graph& g) { return lower::fuse_conv_concat(g); }, expect_fused);
  EXPECT_EQ(count(*g, "ConvConcat"), expect_fused);
}

TEST(FuseConvConcat, FireModule) {
  fuse_and_compare(
      [](Builder& b) {
        ir::Value* x = b.in("x", {1, 7, 6, 8});
        ir::Value* s = b.op("FusedConv", {x, b.rand({6, 8, 1, 1}), b.rand({6})}, conv(0), "kiln");
        ir::Value* e1 = b.op("FusedConv", {s, b.rand({5, 6, 1, 1}), b.rand({5})}, conv(0), "kiln");
        ir::Value* e3 = b.op("FusedConv", {s, b.rand({7, 6, 3, 3}), b.rand({7})}, conv(1), "kiln");
        ir::Value* c = b.op("Concat", {e1, e3}, {{"axis", I(3)}});
        b.out(b.op("FusedConv", {c, b.rand({4, 12, 1, 1})}, conv(0), "kiln"));
      },
      1);
}

TEST(FuseConvConcat, LeavesWhatCannotWriteASlice) {
  // A piece also used elsewhere, a SiLU conv (applied after the primitive over a dense block),
  // a residual conv, a concat along another axis: none fused.
  fuse_and_compare(
      [](Builder& b) {
        ir::Value* x = b.in("x", {1, 5, 5, 4});
        ir::Value* a = b.op("FusedConv", {x, b.rand({3, 4, 1, 1})}, conv(0), "kiln");
        ir::Value* c = b.op("FusedConv", {x, b.rand({3, 4, 1, 1})}, conv(0), "kiln");
        b.out(b.op("Concat", {a, c}, {{"axis", I(3)}}));
        b.out(a);
        ir::Value* d = b.op("FusedConv", {x, b.rand({3, 4, 1, 1})}, conv(0, "SiLU"), "kiln");
        ir::Value* e = b.op("FusedConv", {x, b.rand({3, 4, 1, 1})}, conv(0), "kiln");
        b.out(b.op("Concat", {d, e}, {{"axis", I(3)}}));
        ir::Value* f = b.op("FusedConv", {x, b.rand({4, 4, 1, 1}), b.rand({4}), x}, conv(0), "kiln");
        ir::Value* h = b.op("FusedConv", {x, b.rand({4, 4, 1, 1})}, conv(0), "kiln");
        b.out(b.op("Concat", {f, h}, {{"axis", I(3)}}));
        ir::Value* i = b.op("FusedConv", {x, b.rand({4, 4, 1, 1})}, conv(0), "kiln");
        ir::Value* j = b.op("FusedConv", {x, b.rand({4, 4, 1, 1})}, conv(0), "kiln");
        b.out(b.op("Concat", {i, j}, {{"axis", I(1)}}));
      },
      0);
}

// An Inception-style block: a 1x1 branch, a 1x1 -> 3x3 branch, a 1x1 -> 1x3 -> 3x1 branch and an
// average pool -> 1x1 branch, all reading x (which is also an output, so no branch takes it).
void inception_block(Builder& b) {
  ir::Value* x = b.in("x", {1, 6, 7, 8});
  ir::Attributes pool{{"kernel_shape", Is({3, 3})}, {"pads", Is({1, 1, 1, 1})}, {"strides", Is({1, 1})}};
  ir::Value* a = b.op("FusedConv", {x, b.rand({5, 8, 1, 1}), b.rand({5})}, conv(0), "kiln");
  ir::Value* c1 = b.op("FusedConv", {x, b.rand({4, 8, 1, 1}), b.rand({4})}, conv(0), "kiln");
  ir::Value* c = b.op("FusedConv", {c1, b.rand({6, 4, 3, 3}), b.rand({6})}, conv(1), "kiln");
  ir::Value* d1 = b.op("FusedConv", {x, b.rand({3, 8, 1, 1}), b.rand({3})}, conv(0), "kiln");
  ir::Attributes row = conv(0);
  row["pads"] = Is({0, 1, 0, 1});
  ir::Value* d2 = b.op("FusedConv", {d1, b.rand({4, 3, 1, 3}), b.rand({4})}, row, "kiln");
  ir::Attributes col = conv(0);
  col["pads"] = Is({1, 0, 1, 0});
  ir::Value* d = b.op("FusedConv", {d2, b.rand({7, 4, 3, 1}), b.rand({7})}, col, "kiln");
  ir::Value* p = b.op("NhwcAveragePool", {x}, pool, "kiln");
  ir::Value* e = b.op("FusedConv", {p, b.rand({2, 8, 1, 1})}, conv(0), "kiln");
  b.out(b.op("Concat", {a, c, d, e}, {{"axis", I(3)}}));
  b.out(x);
}

// With a backend that deals the branches, the body holds the whole chains (1 + 2 + 3 + 2 nodes
// and the Concat); asked the chains' steps and ends in order. Without, the four slice convs.
TEST(FuseConvConcat, TakesWholeBranchesWhereTheBackendDealsThem) {
  std::vector<size_t> asked;
  auto deals = [&](const std::vector<std::vector<const ir::Node*>>& branches) {
    asked.clear();
    for (const auto& steps : branches) {
      asked.push_back(steps.size());
      for (size_t i = 1; i < steps.size(); ++i) EXPECT_EQ(steps[i]->input(0), steps[i - 1]->output(0));
    }
    return true;
  };
  auto g = check_lowering(inception_block, [&](ir::Graph& g) { return lower::fuse_conv_concat(g, deals); }, 1);
  EXPECT_EQ(asked, (std::vector<size_t>{1, 2, 3, 2}));
  ASSERT_EQ(count(*g, "ConvConcat"), 1);
  for (const ir::Node* n : g->nodes()) {
    if (n->op_type() == "ConvConcat") {
      EXPECT_EQ(n->attrs.at("body").g->num_nodes(), 9u);
    }
  }
  auto declines = [](const std::vector<std::vector<const ir::Node*>>&) { return false; };
  auto h = check_lowering(inception_block, [&](ir::Graph& g) { return lower::fuse_conv_concat(g, declines); }, 1);
  for (const ir::Node* n : h->nodes()) {
    if (n->op_type() == "ConvConcat") {
      EXPECT_EQ(n->attrs.at("body").g->num_nodes(), 5u);
    }
  }
  EXPECT_EQ(count(*h, "FusedConv"), 3);  // the steps stay outside
  EXPECT_EQ(count(*h, "NhwcAveragePool"), 1);
}

}  // namespace
}  // namespace kiln::passes::testing
