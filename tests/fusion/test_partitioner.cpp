// The partitioner on the classic cases (TVM's test_pass_fuse_ops): each test asserts the exact
// groups, and every result satisfies the partition invariants.
#include <gtest/gtest.h>

#include "fusion/partitioner.h"
#include "fusion_test_util.h"

namespace kiln::fusion::testing {
namespace {

using ops::PatternKind;

std::vector<Group> run(const Net& net, int level = 3, int max_size = 256) {
  FusionOptions o;
  o.level = level;
  o.max_group_size = max_size;
  auto groups = partition(*net.g, o);
  expect_valid(*net.g, groups, max_size);
  return groups;
}

//        conv
//       ╱    ╲
//    relu   sigmoid
//       ╲    ╱
//        add
Net diamond() {
  Net n;
  auto x = n.in("x", {1, 4, 8, 8});
  auto c = n.conv("conv", x, 4);
  auto a = n.op("Relu", "relu", {c});
  auto b = n.op("Sigmoid", "sigmoid", {c});
  n.out(n.op("Add", "add", {a, b}));
  n.infer();
  return n;
}

TEST(Partitioner, DiamondFusesIntoTheConv) {
  Net n = diamond();
  auto groups = run(n);
  EXPECT_EQ(names(groups), (Names{{"conv", "relu", "sigmoid", "add"}}));
  EXPECT_EQ(groups[0].pattern, PatternKind::OutEWiseFusable);
  EXPECT_EQ(groups[0].anchor, n.node("conv"));
  // conv, relu and sigmoid outputs stay inside: 3 x 1x4x8x8 floats.
  EXPECT_EQ(groups[0].bytes_saved, 3 * 256 * 4);
}

TEST(Partitioner, DiamondPerLevel) {
  Net n = diamond();
  EXPECT_EQ(names(run(n, 0)), (Names{{"conv"}, {"relu"}, {"sigmoid"}, {"add"}}));
  EXPECT_EQ(names(run(n, 1)), (Names{{"conv"}, {"relu", "sigmoid", "add"}}));
  auto l2 = run(n, 2);
  EXPECT_EQ(names(l2), (Names{{"conv"}, {"relu", "sigmoid", "add"}}));
  EXPECT_EQ(l2[0].anchor, nullptr);  // below level 3 a conv runs alone
  EXPECT_EQ(l2[1].pattern, PatternKind::ElemWise);
  EXPECT_EQ(l2[1].bytes_saved, 2 * 256 * 4);
}

// conv → bias add (broadcast [1,C,1,1]) → relu: the bias edge is elementwise from the conv's
// side, so the anchor takes it as epilogue.
TEST(Partitioner, ConvBiasRelu) {
  Net n;
  auto x = n.in("x", {1, 4, 8, 8});
  auto c = n.conv("conv", x, 4);
  auto b = n.op("Add", "bias", {c, n.weight({1, 4, 1, 1})});
  n.out(n.op("Relu", "relu", {b}));
  n.infer();
  auto groups = run(n);
  EXPECT_EQ(names(groups), (Names{{"conv", "bias", "relu"}}));
  EXPECT_EQ(groups[0].anchor, n.node("conv"));
  // Level 1: the broadcasting add is not elementwise, so nothing fuses.
  EXPECT_EQ(names(run(n, 1)), (Names{{"conv"}, {"bias"}, {"relu"}}));
  // Level 2: broadcast + elementwise fuse, the conv stays alone.
  EXPECT_EQ(names(run(n, 2)), (Names{{"conv"}, {"bias", "relu"}}));
}

// Two residual blocks: stem conv+relu, then conv+relu, conv, add(skip), relu.
//   x → conv0 → relu0 ─┬→ conv1 → relu1 → conv2 → add → relu2
//                      └──────────────────────────↗
TEST(Partitioner, ResidualBlock) {
  Net n;
  auto x = n.in("x", {1, 8, 6, 6});
  auto r0 = n.op("Relu", "relu0", {n.conv("conv0", x, 8)});
  auto r1 = n.op("Relu", "relu1", {n.conv("conv1", r0, 8)});
  auto c2 = n.conv("conv2", r1, 8);
  auto add = n.op("Add", "add", {c2, r0});
  n.out(n.op("Relu", "relu2", {add}));
  n.infer();
  auto groups = run(n);
  EXPECT_EQ(names(groups), (Names{{"conv0", "relu0"}, {"conv1", "relu1"}, {"conv2", "add", "relu2"}}));
  for (const Group& g : groups) EXPECT_EQ(g.pattern, PatternKind::OutEWiseFusable);
  EXPECT_EQ(groups[2].anchor, n.node("conv2"));
}

// Two convs meet in one add: only one of them may lead the group (at most one anchor).
TEST(Partitioner, TwoAnchorsNeverShareAGroup) {
  Net n;
  auto x = n.in("x", {1, 4, 5, 5});
  auto a = n.conv("conv_a", x, 4);
  auto b = n.conv("conv_b", x, 4);
  n.out(n.op("Relu", "relu", {n.op("Add", "add", {a, b})}));
  n.infer();
  auto groups = run(n);
  // conv_b runs first: it feeds the add in conv_a's group.
  EXPECT_EQ(names(groups), (Names{{"conv_b"}, {"conv_a", "add", "relu"}}));
  EXPECT_EQ(groups[1].anchor, n.node("conv_a"));
}

// Concat is a Tuple: nothing fuses into a concat whose result goes to an opaque or anchor
// consumer (or out), but once the concat fuses into an injective/elementwise consumer, its
// producers join it in the last phase.
TEST(Partitioner, ConcatAsGraphOutputStaysAlone) {
  Net n;
  auto x = n.in("x", {2, 3});
  auto a = n.op("Relu", "relu", {x});
  auto b = n.op("Sigmoid", "sigmoid", {x});
  n.out(n.op("Concat", "concat", {a, b}, {{"axis", ir::Attribute::of_int(1)}}));
  n.infer();
  EXPECT_EQ(names(run(n)), (Names{{"relu"}, {"sigmoid"}, {"concat"}}));
}

TEST(Partitioner, ConcatSinkWithInjectiveConsumer) {
  Net n;
  auto x = n.in("x", {2, 3});
  auto a = n.op("Relu", "relu", {x});
  auto b = n.op("Sigmoid", "sigmoid", {x});
  auto c = n.op("Concat", "concat", {a, b}, {{"axis", ir::Attribute::of_int(1)}});
  n.out(n.op("Tanh", "tanh", {c}));
  n.infer();
  auto groups = run(n);
  EXPECT_EQ(names(groups), (Names{{"relu", "sigmoid", "concat", "tanh"}}));
  EXPECT_EQ(groups[0].pattern, PatternKind::Injective);
  EXPECT_EQ(groups[0].anchor, nullptr);
  // Level 1: only the elementwise tanh; concat is not elementwise.
  EXPECT_EQ(names(run(n, 1)), (Names{{"relu"}, {"sigmoid"}, {"concat"}, {"tanh"}}));
}

// Inception-like: concat feeding a conv keeps branch epilogues with their own convs.
TEST(Partitioner, ConcatBeforeConv) {
  Net n;
  auto x = n.in("x", {1, 4, 6, 6});
  auto a = n.op("Relu", "relu_a", {n.conv("conv_a", x, 4)});
  auto b = n.op("Relu", "relu_b", {n.conv("conv_b", x, 4)});
  auto c = n.op("Concat", "concat", {a, b}, {{"axis", ir::Attribute::of_int(1)}});
  n.out(n.conv("conv_c", c, 8));
  n.infer();
  EXPECT_EQ(names(run(n)), (Names{{"conv_a", "relu_a"}, {"conv_b", "relu_b"}, {"concat"}, {"conv_c"}}));
}

// Elementwise prologue fuses into a reduction; the reduction is a sink, so what follows it
// starts a new group.
TEST(Partitioner, ReduceThenElementwise) {
  Net n(13);
  auto x = n.in("x", {4, 16});
  auto r = n.op("Relu", "relu", {x});
  auto s = n.op("ReduceSum", "sum", {r, n.ints({-1})});
  n.out(n.op("Sqrt", "sqrt", {s}));
  n.infer();
  auto groups = run(n);
  EXPECT_EQ(names(groups), (Names{{"relu", "sum"}, {"sqrt"}}));
  EXPECT_EQ(groups[0].pattern, PatternKind::CommReduce);
  EXPECT_EQ(groups[0].bytes_saved, 4 * 16 * 4);
  EXPECT_EQ(names(run(n, 1)), (Names{{"relu"}, {"sum"}, {"sqrt"}}));
}

// Softmax by hand: exp feeds both the sum and the divide, so exp's post-dominator is the
// divide and the path runs through a reduction, which may only be a sink: three kernels.
TEST(Partitioner, ReductionOnASideBranchBlocksTheProducer) {
  Net n(13);
  auto x = n.in("x", {4, 16});
  auto e = n.op("Exp", "exp", {x});
  auto s = n.op("ReduceSum", "sum", {e, n.ints({-1})});
  n.out(n.op("Div", "div", {e, s}));
  n.infer();
  EXPECT_EQ(names(run(n)), (Names{{"exp"}, {"sum"}, {"div"}}));
}

// 10 elementwise ops, at most 4 per group.
TEST(Partitioner, ChainLongerThanMaxGroupSize) {
  Net n;
  ir::Value* v = n.in("x", {3, 5});
  for (int i = 0; i < 10; ++i) v = n.op(i % 2 ? "Sigmoid" : "Relu", "op" + std::to_string(i), {v});
  n.out(v);
  n.infer();
  EXPECT_EQ(names(run(n, 3, 4)), (Names{{"op0", "op1", "op2", "op3"}, {"op4", "op5", "op6", "op7"}, {"op8", "op9"}}));
  EXPECT_EQ(run(n).size(), 1u);
  EXPECT_EQ(run(n, 3, 1).size(), 10u);
}

// Long chains: no recursion over the whole graph, groups cut at the default size.
TEST(Partitioner, VeryLongChain) {
  Net n;
  ir::Value* v = n.in("x", {4});
  for (int i = 0; i < 5000; ++i) v = n.op("Relu", "r" + std::to_string(i), {v});
  n.out(v);
  n.infer();
  auto groups = run(n);
  ASSERT_EQ(groups.size(), 20u);  // 19 x 256 + 136
  EXPECT_EQ(groups[0].nodes.size(), 256u);
  EXPECT_EQ(groups[19].nodes.size(), 136u);
}

// A value that is also a graph output must be written, so the chain splits after it.
TEST(Partitioner, ExternalOutputInTheMiddleOfAChain) {
  Net n;
  auto x = n.in("x", {3, 5});
  auto a = n.op("Relu", "relu", {x});
  auto b = n.op("Sigmoid", "sigmoid", {a});
  auto c = n.op("Tanh", "tanh", {b});
  n.out(n.op("Neg", "neg", {c}));
  n.out(b);
  n.infer();
  auto groups = run(n);
  EXPECT_EQ(names(groups), (Names{{"relu", "sigmoid"}, {"tanh", "neg"}}));
  EXPECT_EQ(groups[0].bytes_saved, 15 * 4);  // relu's output only: sigmoid's is written
}

// The same with an anchor: the conv's relu is an output, so the add after it cannot join.
TEST(Partitioner, ExternalOutputAfterAnAnchor) {
  Net n;
  auto x = n.in("x", {1, 4, 5, 5});
  auto r = n.op("Relu", "relu", {n.conv("conv", x, 4)});
  n.out(r);
  n.out(n.op("Add", "add", {r, x}));
  n.infer();
  EXPECT_EQ(names(run(n)), (Names{{"conv", "relu"}, {"add"}}));
}

// Injective ops (transpose, reshape) fuse with their elementwise neighbours in phase 1, after
// anchors have taken their epilogues.
TEST(Partitioner, InjectiveChain) {
  Net n;
  auto x = n.in("x", {2, 3, 4, 5});
  auto r = n.op("Relu", "relu", {x});
  auto t = n.op("Transpose", "transpose", {r}, {{"perm", ir::Attribute::of_ints({0, 2, 1, 3})}});
  auto s = n.op("Reshape", "reshape", {t, n.ints({6, 20})});
  n.out(n.op("Sigmoid", "sigmoid", {s}));
  n.infer();
  auto groups = run(n);
  EXPECT_EQ(names(groups), (Names{{"relu", "transpose", "reshape", "sigmoid"}}));
  EXPECT_EQ(groups[0].pattern, PatternKind::Injective);
  EXPECT_EQ(names(run(n, 1)), (Names{{"relu"}, {"transpose"}, {"reshape"}, {"sigmoid"}}));
}

// A Transpose that moves the innermost axis (NHWC -> NCHW, say) runs as its own kernel: in an
// elementwise loop it would gather every element from another cache line. One that moves only
// unit axes is a reshape and fuses.
TEST(Partitioner, TransposeOfTheInnermostAxisStaysAlone) {
  Net n;
  auto x = n.in("x", {1, 6, 5, 4});
  auto y = n.in("y", {1, 6, 5, 4});
  auto tx = n.op("Transpose", "tx", {x}, {{"perm", ir::Attribute::of_ints({0, 3, 1, 2})}});
  auto ty = n.op("Transpose", "ty", {y}, {{"perm", ir::Attribute::of_ints({0, 3, 1, 2})}});
  auto a = n.op("Add", "add", {tx, ty});
  auto u = n.op("Transpose", "unit", {n.op("Relu", "relu", {a})}, {{"perm", ir::Attribute::of_ints({1, 0, 2, 3})}});
  n.out(n.op("Sigmoid", "sigmoid", {u}));
  n.infer();
  EXPECT_EQ(names(run(n)), (Names{{"tx"}, {"ty"}, {"add", "relu", "unit", "sigmoid"}}));
}

// MatMul + bias + Gelu-ish tail as in a transformer MLP: one anchor group.
TEST(Partitioner, MatMulEpilogue) {
  Net n;
  auto x = n.in("x", {2, 7, 16});
  auto m = n.op("MatMul", "matmul", {x, n.weight({16, 32})});
  auto b = n.op("Add", "bias", {m, n.weight({32})});
  n.out(n.op("Relu", "relu", {b}));
  n.infer();
  auto groups = run(n);
  EXPECT_EQ(names(groups), (Names{{"matmul", "bias", "relu"}}));
  EXPECT_EQ(groups[0].anchor, n.node("matmul"));
}

// Opaque ops never fuse, and nothing fuses across them.
TEST(Partitioner, OpaqueSplits) {
  Net n;
  auto x = n.in("x", {3, 5});
  auto a = n.op("Relu", "relu", {x});
  auto s = n.op("Shape", "shape", {a});
  auto b = n.op("Sigmoid", "sigmoid", {a});
  n.out(s);
  n.out(n.op("Tanh", "tanh", {b}));
  n.infer();
  EXPECT_EQ(names(run(n)), (Names{{"relu"}, {"shape"}, {"sigmoid", "tanh"}}));
}

// A value read inside a subgraph (an If branch) is used outside this graph: its producer
// must write it, so it ends its chain, and the If runs after it.
TEST(Partitioner, ValueReadBySubgraphIsExternal) {
  Net n;
  auto x = n.in("x", {3});
  auto cond = n.g->add_input("cond", ir::TensorType::from_dims(DType::Bool, {}));
  auto f3 = ir::TensorType::from_dims(DType::Float, {3});
  auto a = n.op("Relu", "relu", {x});
  a->type = f3;
  auto b = n.op("Sigmoid", "sigmoid", {a});
  b->type = f3;
  auto branch = [&](const std::string& op) {
    auto sg = std::make_shared<ir::Graph>();
    sg->parent = n.g.get();
    sg->opsets = n.g->opsets;
    ir::Value* o = sg->add_value(op + "_out", f3);
    sg->add_node(op, {a}, {o}, {}, op + "_in_branch");
    sg->add_output(o);
    return sg;
  };
  ir::Value* y = n.op("If", "if", {cond},
                      {{"then_branch", ir::Attribute::of_graph(branch("Neg"))},
                       {"else_branch", ir::Attribute::of_graph(branch("Abs"))}});
  y->type = f3;
  n.out(b);
  n.out(y);
  EXPECT_EQ(names(run(n)), (Names{{"relu"}, {"sigmoid"}, {"if"}}));
}

TEST(Partitioner, EmptyGraphAndBadOptions) {
  Net n;
  n.out(n.in("x", {2}));
  EXPECT_TRUE(partition(*n.g).empty());
  FusionOptions o;
  o.level = 4;
  EXPECT_THROW(partition(*n.g, o), kiln::Error);
  o.level = 3;
  o.max_group_size = 0;
  EXPECT_THROW(partition(*n.g, o), kiln::Error);
}

}  // namespace
}  // namespace kiln::fusion::testing
