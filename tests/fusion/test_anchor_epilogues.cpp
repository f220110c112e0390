#include "fusion/anchor_epilogues.h"

#include <gtest/gtest.h>

#include "fusion_test_util.h"

namespace kiln::fusion::testing {
namespace {

int count(const ir::Graph& g, const std::string& op) {
  int n = 0;
  for (const ir::Node* node : g.nodes()) n += node->op_type() == op;
  return n;
}

TEST(AnchorEpilogues, ResidualBlockBecomesOneConv) {
  Net n;
  auto x = n.in("x", {1, 4, 8, 8});
  auto c = n.conv("conv", x, 4);
  auto s = n.op("Add", "add", {c, x});
  n.out(n.op("Relu", "relu", {s}));
  n.infer();
  EXPECT_TRUE(fold_anchor_epilogues(*n.g));
  EXPECT_EQ(n.g->num_nodes(), 1u);
  EXPECT_EQ(count(*n.g, "FusedConv"), 1);
  EXPECT_EQ(n.g->outputs()[0]->name(), "relu_out");
}

TEST(AnchorEpilogues, NothingToFold) {
  Net n;
  auto x = n.in("x", {1, 4, 8, 8});
  n.out(n.op("Sigmoid", "s", {n.op("Relu", "r", {x})}));
  n.infer();
  EXPECT_FALSE(fold_anchor_epilogues(*n.g));
  EXPECT_EQ(n.g->num_nodes(), 2u);
}

}  // namespace
}  // namespace kiln::fusion::testing
