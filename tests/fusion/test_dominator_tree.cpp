// The post-dominator tree and the forward graph it is built from, on small graphs.
#include <gtest/gtest.h>

#include "fusion/dominator_tree.h"
#include "fusion/indexed_forward_graph.h"
#include "fusion_test_util.h"

namespace kiln::fusion::testing {
namespace {

using ops::PatternKind;

// Name of the post-dominator of `name`, "" for none.
std::string pdom(const Net& n, const IndexedForwardGraph& fg, const DominatorTree& t, const std::string& name) {
  int p = t.node(fg.index_of(n.node(name))).parent;
  return p < 0 ? "" : fg.node(p).ref->name();
}
PatternKind path(const Net& n, const IndexedForwardGraph& fg, const DominatorTree& t, const std::string& name) {
  return t.node(fg.index_of(n.node(name))).pattern;
}

TEST(ForwardGraph, PostDfsOrderEdgesAndExternRefs) {
  Net n;
  auto x = n.in("x", {2, 3});
  auto a = n.op("Relu", "a", {x});
  auto b = n.op("Sigmoid", "b", {a});
  auto c = n.op("Add", "c", {a, n.weight({3})});  // broadcasts its weight
  n.out(n.op("Mul", "d", {b, c}));
  n.out(a);
  n.infer();
  IndexedForwardGraph fg(*n.g);
  ASSERT_EQ(fg.size(), 4);
  // Post-DFS from the output d: d's inputs b (then a under it), then c.
  std::vector<std::string> order;
  for (const auto& node : fg.nodes()) order.push_back(node.ref->name());
  EXPECT_EQ(order, (std::vector<std::string>{"a", "b", "c", "d"}));
  const auto& na = fg.node(fg.index_of(n.node("a")));
  EXPECT_TRUE(na.extern_ref);
  EXPECT_FALSE(fg.node(fg.index_of(n.node("b"))).extern_ref);
  ASSERT_EQ(na.outputs.size(), 2u);
  EXPECT_EQ(fg.node(na.outputs[0].node).ref->name(), "b");
  EXPECT_EQ(na.outputs[0].pattern, PatternKind::ElemWise);
  // c is a Broadcast op, but along a (same shape as its output) the edge is elementwise.
  EXPECT_EQ(fg.node(fg.index_of(n.node("c"))).pattern, PatternKind::Broadcast);
  EXPECT_EQ(na.outputs[1].pattern, PatternKind::ElemWise);
  // d: Mul of two [2,3] values is elementwise outright.
  EXPECT_EQ(fg.node(fg.index_of(n.node("d"))).pattern, PatternKind::ElemWise);
  EXPECT_EQ(fg.node(fg.index_of(n.node("d"))).inputs.size(), 2u);
}

TEST(ForwardGraph, BroadcastIsElementwiseOnlyForEqualShapes) {
  Net n;
  auto x = n.sym_in("x", {ir::Dim::sym("N"), 3});
  auto y = n.sym_in("y", {ir::Dim::sym("N"), 3});
  auto z = n.sym_in("z", {ir::Dim::sym("M"), 3});
  auto u = n.sym_in("u", {ir::Dim::unknown(), 3});
  n.out(n.op("Add", "same_symbol", {x, y}));
  n.out(n.op("Add", "other_symbol", {x, z}));
  n.out(n.op("Add", "unknown_dim", {u, u}));
  n.out(n.op("Add", "bias", {x, n.weight({3})}));
  n.infer();
  EXPECT_EQ(node_pattern(*n.node("same_symbol")), PatternKind::ElemWise);
  EXPECT_EQ(node_pattern(*n.node("other_symbol")), PatternKind::Broadcast);
  EXPECT_EQ(node_pattern(*n.node("bias")), PatternKind::Broadcast);
  // An unknown extent is not known to equal anything, even itself.
  EXPECT_EQ(node_pattern(*n.node("unknown_dim")), PatternKind::Broadcast);
}

TEST(ForwardGraph, UnknownOpsAreOpaque) {
  Net n;
  auto x = n.in("x", {2});
  ir::Value* o = n.g->add_value("o", ir::TensorType::from_dims(DType::Float, {2}));
  n.g->add_node("NoSuchOp", {x}, {o}, {}, "mystery");
  n.out(o);
  EXPECT_EQ(node_pattern(*n.node("mystery")), PatternKind::Opaque);
}

TEST(DominatorTree, Diamond) {
  Net n;
  auto x = n.in("x", {1, 4, 8, 8});
  auto c = n.conv("conv", x, 4);
  auto a = n.op("Relu", "relu", {c});
  auto b = n.op("Sigmoid", "sigmoid", {c});
  n.out(n.op("Add", "add", {a, b}));
  n.infer();
  IndexedForwardGraph fg(*n.g);
  DominatorTree t = DominatorTree::post_dom(fg);
  EXPECT_EQ(pdom(n, fg, t, "conv"), "add");
  EXPECT_EQ(pdom(n, fg, t, "relu"), "add");
  EXPECT_EQ(pdom(n, fg, t, "sigmoid"), "add");
  EXPECT_EQ(pdom(n, fg, t, "add"), "");
  EXPECT_EQ(path(n, fg, t, "conv"), PatternKind::ElemWise);
}

// Nested diamonds: the LCA climbs past the inner join.
//   a → b → c → e → f
//   a ──────→ d ↗     (d reads a; e reads c and d)
//   a ───────────────→ f
TEST(DominatorTree, NestedJoinsAndPatterns) {
  Net n(13);
  auto x = n.in("x", {4, 6, 2});
  auto a = n.op("Relu", "a", {x});
  auto b = n.op("Transpose", "b", {a}, {{"perm", ir::Attribute::of_ints({1, 0, 2})}});
  auto c = n.op("Transpose", "c", {b}, {{"perm", ir::Attribute::of_ints({1, 0, 2})}});
  auto d = n.op("ReduceSum", "d", {a, n.ints({1})});
  auto e = n.op("Add", "e", {c, d});
  n.out(n.op("Mul", "f", {e, a}));
  n.infer();
  IndexedForwardGraph fg(*n.g);
  DominatorTree t = DominatorTree::post_dom(fg);
  EXPECT_EQ(pdom(n, fg, t, "b"), "c");
  EXPECT_EQ(pdom(n, fg, t, "c"), "e");
  EXPECT_EQ(pdom(n, fg, t, "d"), "e");
  EXPECT_EQ(pdom(n, fg, t, "e"), "f");
  EXPECT_EQ(pdom(n, fg, t, "a"), "f");
  // From a to f the paths pass a reduction (d) and transposes.
  EXPECT_EQ(path(n, fg, t, "a"), PatternKind::CommReduce);
  EXPECT_EQ(path(n, fg, t, "b"), PatternKind::Injective);
  // d → e: e broadcasts d ([4,1,2] to [4,6,2]).
  EXPECT_EQ(path(n, fg, t, "d"), PatternKind::Broadcast);
}

// A value used by two outputs has no post-dominator; neither has a graph output.
TEST(DominatorTree, TwoSinksHaveNoCommonPostDominator) {
  Net n;
  auto x = n.in("x", {3});
  auto a = n.op("Relu", "a", {x});
  auto b = n.op("Relu", "b", {a});
  n.out(n.op("Neg", "c", {a}));
  n.out(n.op("Neg", "d", {b}));
  n.infer();
  IndexedForwardGraph fg(*n.g);
  DominatorTree t = DominatorTree::post_dom(fg);
  EXPECT_EQ(pdom(n, fg, t, "a"), "");
  EXPECT_EQ(pdom(n, fg, t, "b"), "d");
  EXPECT_EQ(pdom(n, fg, t, "c"), "");
}

}  // namespace
}  // namespace kiln::fusion::testing
