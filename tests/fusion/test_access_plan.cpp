// plan_access(): the strides a fused loop reads each source with, through Reshape/Transpose
// members, and the cases with no single-loop plan.
#include <gtest/gtest.h>

#include "fusion/access_plan.h"
#include "fusion_test_util.h"

namespace kiln::fusion::testing {
namespace {

std::vector<const ir::Node*> all_nodes(const ir::Graph& g) {
  std::vector<const ir::Node*> r;
  for (const ir::Node* n : g.nodes()) r.push_back(n);
  return r;
}

std::optional<AccessPlan> plan(const Net& n) {
  return plan_access(all_nodes(*n.g), std::vector<const ir::Value*>(n.g->outputs().begin(), n.g->outputs().end()));
}

const Access& read_of(const AccessPlan& p, const Net& n, const std::string& node, int input) {
  return p.operands.at(p.reads.at({n.node(node), input})).access;
}

ir::Attributes perm(std::vector<int64_t> p) { return {{"perm", ir::Attribute::of_ints(std::move(p))}}; }

// BERT's head split: (x + bias) viewed as [B,S,H,D], then heads moved before the sequence.
TEST(AccessPlan, HeadSplitAfterBiasAdd) {
  Net n;
  auto x = n.in("x", {2, 5, 12});
  auto a = n.op("Add", "add", {x, n.weight({12})});
  auto r = n.op("Reshape", "reshape", {a, n.ints({2, 5, 3, 4})});
  n.out(n.op("Transpose", "transpose", {r}, perm({0, 2, 1, 3})));
  n.infer();
  auto p = plan(n);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->dims, (std::vector<int64_t>{2, 3, 5, 4}));
  EXPECT_EQ(read_of(*p, n, "add", 0).strides, (std::vector<int64_t>{60, 4, 12, 1}));
  EXPECT_EQ(read_of(*p, n, "add", 1).strides, (std::vector<int64_t>{0, 4, 0, 1}));
  EXPECT_EQ(p->outputs[0].strides, (std::vector<int64_t>{60, 20, 4, 1}));
}

// The heads merged back: the output's last dim splits into two atoms.
TEST(AccessPlan, HeadMergeSplitsAnAtom) {
  Net n;
  auto x = n.in("x", {2, 3, 5, 4});
  auto t = n.op("Transpose", "transpose", {x}, perm({0, 2, 1, 3}));
  auto r = n.op("Reshape", "reshape", {t, n.ints({2, 5, 12})});
  n.out(n.op("Relu", "relu", {r}));
  n.infer();
  auto p = plan(n);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->dims, (std::vector<int64_t>{2, 5, 3, 4}));
  EXPECT_EQ(read_of(*p, n, "transpose", 0).strides, (std::vector<int64_t>{60, 4, 20, 1}));
  EXPECT_EQ(p->outputs[0].strides, (std::vector<int64_t>{60, 12, 4, 1}));
}

TEST(AccessPlan, ASourceReadTwoWaysIsTwoOperands) {
  Net n;
  auto x = n.in("x", {4, 4});
  n.out(n.op("Add", "add", {x, n.op("Transpose", "transpose", {x})}));
  n.infer();
  auto p = plan(n);
  ASSERT_TRUE(p);
  ASSERT_EQ(p->operands.size(), 2u);
  EXPECT_EQ(read_of(*p, n, "add", 0).strides, (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(read_of(*p, n, "transpose", 0).strides, (std::vector<int64_t>{1, 4}));
}

TEST(AccessPlan, ExpandAndUnsqueezeBroadcast) {
  Net n;
  auto x = n.in("x", {3, 4});
  auto m = n.in("m", {4});
  auto u = n.op("Unsqueeze", "unsqueeze", {m, n.ints({0})});
  auto e = n.op("Expand", "expand", {u, n.ints({3, 4})});
  n.out(n.op("Mul", "mul", {x, e}));
  n.infer();
  auto p = plan(n);
  ASSERT_TRUE(p);
  EXPECT_EQ(read_of(*p, n, "unsqueeze", 0).strides, (std::vector<int64_t>{0, 1}));
}

TEST(AccessPlan, AComputedValueReadTwoWaysHasNoPlan) {
  Net n;
  auto x = n.in("x", {4, 4});
  auto t = n.op("Exp", "exp", {x});
  n.out(n.op("Add", "add", {t, n.op("Transpose", "transpose", {t})}));
  n.infer();
  EXPECT_FALSE(plan(n));
}

// [6,4] read as [4,6]: 4 does not divide 6, so the atoms cannot line up.
TEST(AccessPlan, MisalignedReshapeHasNoPlan) {
  Net n;
  auto x = n.in("x", {6, 4});
  auto r = n.op("Reshape", "reshape", {n.op("Relu", "relu", {x}), n.ints({4, 6})});
  n.out(n.op("Transpose", "transpose", {r}));
  n.infer();
  EXPECT_FALSE(plan(n));
}

TEST(AccessPlan, OutputsOfDifferentShapesHaveNoPlan) {
  Net n;
  auto x = n.in("x", {2, 3});
  auto a = n.op("Relu", "relu", {x});
  n.out(a);
  n.out(n.op("Transpose", "transpose", {a}));
  n.infer();
  EXPECT_FALSE(plan(n));
}

}  // namespace
}  // namespace kiln::fusion::testing
