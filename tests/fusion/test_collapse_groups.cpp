// Fusion groups collapsed into kiln.FusedElementwise nodes: which nodes fold, that the graph
// computes the same values, and that the CPU backend runs each fused node as one kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backends/backend.h"
#include "fusion/collapse_groups.h"
#include "fusion_test_util.h"
#include "ir/verifier.h"
#include "runtime/reference_executor.h"

namespace kiln::fusion::testing {
namespace {

std::vector<Tensor> run_graph(const ir::Graph& g, const std::vector<Tensor>& ins) {
  return runtime::ReferenceExecutor(g).run(ins);
}

Tensor random(std::vector<int64_t> dims, uint32_t seed) {
  Tensor t(DType::Float, dims);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

int count(const ir::Graph& g, const std::string& op) {
  int n = 0;
  for (const ir::Node* node : g.nodes()) n += node->op_type() == op;
  return n;
}

// Collapses with the cpu backend's rule, checks the outputs against the uncollapsed graph and
// each fused node's cpu kernel against its reference kernel.
CollapseStats collapse_and_check(Net& ref_net, Net& net, int level = 3) {
  auto backend = backends::make_cpu_backend(1);
  FusionOptions o;
  o.level = level;
  CollapseStats st = collapse_groups(*net.g, o, [&](const ir::Node& n) { return backend->can_fuse(n); });
  ops::ShapeInference().run(*net.g);
  ir::verify(*net.g);
  std::vector<Tensor> ins;
  for (size_t i = 0; i < ref_net.g->inputs().size(); ++i)
    ins.push_back(random(ref_net.g->inputs()[i]->type.static_dims(), 11 + static_cast<uint32_t>(i)));
  auto a = run_graph(*ref_net.g, ins), b = run_graph(*net.g, ins);
  EXPECT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size() && k < b.size(); ++k)
    for (int64_t i = 0; i < a[k].numel(); ++i) EXPECT_NEAR(b[k].data<float>()[i], a[k].data<float>()[i], 1e-5);
  for (const ir::Node* n : net.g->nodes()) {
    if (n->op_type() != "FusedElementwise" && n->op_type() != "FusedReduce") continue;
    auto kernel = backend->create(*n);
    EXPECT_TRUE(kernel) << n->name();
    if (!kernel) continue;
    std::vector<Tensor> args;
    for (const ir::Value* v : n->inputs()) args.push_back(random(v->type.static_dims(), 5));
    std::vector<const Tensor*> ptrs;
    for (auto& t : args) ptrs.push_back(&t);
    auto expected = ops::run_reference(*n, ptrs);
    std::vector<Tensor> actual;
    std::vector<Tensor*> out_ptrs;
    for (const ir::Value* v : n->outputs()) actual.emplace_back(DType::Float, v->type.static_dims());
    for (auto& t : actual) out_ptrs.push_back(&t);
    kernel->run(ptrs, out_ptrs);
    for (size_t k = 0; k < actual.size(); ++k)
      for (int64_t i = 0; i < actual[k].numel(); ++i)
        EXPECT_NEAR(actual[k].data<float>()[i], expected[k].data<float>()[i], 2e-6 * std::max(1.f, std::fabs(expected[k].data<float>()[i])));
  }
  return st;
}

// x -> Mul(const) -> Add(y, broadcast) -> Sigmoid -> Mul(x): one group, one kernel.
void chain(Net& n) {
  auto x = n.in("x", {2, 3, 5, 7});
  auto y = n.in("y", {3, 1, 7});
  auto m = n.op("Mul", "scale", {x, n.weight({7})});
  auto a = n.op("Add", "shift", {m, y});
  auto s = n.op("Sigmoid", "gate", {a});
  n.out(n.op("Mul", "glu", {s, x}));
  n.infer();
}

TEST(CollapseGroups, ElementwiseChainBecomesOneNode) {
  Net ref, net;
  chain(ref);
  chain(net);
  CollapseStats st = collapse_and_check(ref, net);
  EXPECT_EQ(st.fused_nodes, 1);
  EXPECT_EQ(st.nodes_folded, 4);
  EXPECT_EQ(net.g->num_nodes(), 1u);
  EXPECT_EQ(net.g->outputs()[0]->name(), ref.g->outputs()[0]->name());
}

// A long chain (more steps than the evaluator has tiles) with a value kept alive across it and
// two outputs: the cpu kernel reuses tiles of dead values.
void long_chain(Net& n) {
  auto x = n.in("x", {3, 40});
  auto y = n.in("y", {3, 40});
  ir::Value* v = x;
  ir::Value* early = nullptr;
  for (int i = 0; i < 70; ++i) {
    v = n.op(i % 3 == 0 ? "Mul" : i % 3 == 1 ? "Add" : "Sub", "step" + std::to_string(i), {v, i % 2 ? y : x});
    if (i % 7 == 6) v = n.op("Tanh", "squash" + std::to_string(i), {v});
    if (i == 10) early = v;
  }
  n.out(n.op("Mul", "square", {v, v}));
  n.out(n.op("Add", "late", {v, early}));
  n.infer();
}

TEST(CollapseGroups, LongChainRunsOnTheCpuKernel) {
  Net ref, net;
  long_chain(ref);
  long_chain(net);
  collapse_and_check(ref, net);  // every fused node gets its cpu kernel
  size_t longest = 0;
  for (const ir::Node* n : net.g->nodes())
    if (n->op_type() == "FusedElementwise") longest = std::max(longest, n->attr_graph("body")->num_nodes());
  EXPECT_GT(longest, 48u);  // more values than tiles
}

TEST(CollapseGroups, LevelZeroKeepsEveryNode) {
  Net ref, net;
  chain(ref);
  chain(net);
  CollapseStats st = collapse_and_check(ref, net, 0);
  EXPECT_EQ(st.fused_nodes, 0);
  EXPECT_EQ(net.g->num_nodes(), 4u);
}

// conv -> Relu -> Add(conv2 out): the anchor keeps its kernel, the epilogue fuses.
TEST(CollapseGroups, AnchorEpilogueAndExternalOutput) {
  auto build = [](Net& n) {
    auto x = n.in("x", {1, 4, 6, 6});
    auto c = n.conv("conv", x, 4);
    auto r = n.op("Relu", "relu", {c});
    auto t = n.op("Tanh", "tanh", {r});
    n.out(r);  // an intermediate that is also a graph output
    n.out(n.op("Add", "add", {t, x}));
    n.infer();
  };
  Net ref, net;
  build(ref);
  build(net);
  collapse_and_check(ref, net);
  EXPECT_EQ(count(*net.g, "Conv"), 1);
}

TEST(CollapseGroups, UnsupportedOpsStayApart) {
  // Softmax is not elementwise; Floor is not one the cpu evaluator computes.
  auto build = [](Net& n) {
    auto x = n.in("x", {4, 9});
    auto f = n.op("Floor", "floor", {n.op("Exp", "exp", {x})});
    n.out(n.op("Relu", "relu", {n.op("Softmax", "softmax", {f})}));
    n.infer();
  };
  Net ref, net;
  build(ref);
  build(net);
  CollapseStats st = collapse_and_check(ref, net);
  EXPECT_EQ(st.fused_nodes, 0);
}


// Bias add, head split and transpose: the views fold into the loop's strides.
TEST(CollapseGroups, ViewsJoinTheLoop) {
  auto build = [](Net& n) {
    auto x = n.in("x", {2, 5, 12});
    auto a = n.op("Add", "add", {x, n.weight({12})});
    auto r = n.op("Reshape", "reshape", {a, n.ints({2, 5, 3, 4})});
    auto t = n.op("Transpose", "transpose", {r}, {{"perm", ir::Attribute::of_ints({0, 2, 1, 3})}});
    n.out(n.op("Relu", "relu", {t}));
    n.infer();
  };
  Net ref, net;
  build(ref);
  build(net);
  CollapseStats st = collapse_and_check(ref, net);
  EXPECT_EQ(st.fused_nodes, 1);
  EXPECT_EQ(st.nodes_folded, 4);
  EXPECT_EQ(net.g->num_nodes(), 1u);
}

// Heads merged back after a transpose, then a residual add reading x both ways.
TEST(CollapseGroups, TransposedReadsAndHeadMerge) {
  auto build = [](Net& n) {
    auto x = n.in("x", {2, 3, 5, 4});
    auto res = n.in("res", {2, 5, 12});
    auto t = n.op("Transpose", "transpose", {x}, {{"perm", ir::Attribute::of_ints({0, 2, 1, 3})}});
    auto r = n.op("Reshape", "reshape", {t, n.ints({2, 5, 12})});
    auto a = n.op("Add", "add", {r, res});
    n.out(n.op("Tanh", "tanh", {a}));
    n.infer();
  };
  Net ref, net;
  build(ref);
  build(net);
  CollapseStats st = collapse_and_check(ref, net);
  EXPECT_EQ(st.fused_nodes, 1);
  EXPECT_EQ(net.g->num_nodes(), 1u);
}

// No single loop through a misaligned reshape: the elementwise part still fuses on its own.
TEST(CollapseGroups, ViewsWithoutAPlanStayOutside) {
  auto build = [](Net& n) {
    auto x = n.in("x", {6, 4});
    auto s = n.op("Sigmoid", "sigmoid", {n.op("Relu", "relu", {x})});
    auto r = n.op("Reshape", "reshape", {s, n.ints({4, 6})});
    n.out(n.op("Transpose", "transpose", {r}));
    n.infer();
  };
  Net ref, net;
  build(ref);
  build(net);
  CollapseStats st = collapse_and_check(ref, net);
  EXPECT_EQ(st.fused_nodes, 1);
  EXPECT_EQ(st.nodes_folded, 2);
  EXPECT_EQ(count(*net.g, "Transpose"), 1);
}

// Views alone are copies (or free reshapes) already; they do not become a fused node.
TEST(CollapseGroups, ViewsAloneStayAsTheyAre) {
  auto build = [](Net& n) {
    auto x = n.in("x", {2, 5, 12});
    auto r = n.op("Reshape", "reshape", {x, n.ints({2, 5, 3, 4})});
    n.out(n.op("Transpose", "transpose", {r}, {{"perm", ir::Attribute::of_ints({0, 2, 1, 3})}}));
    n.infer();
  };
  Net ref, net;
  build(ref);
  build(net);
  EXPECT_EQ(collapse_and_check(ref, net).fused_nodes, 0);
}


// Softmax's middle part: exp(x - max) summed over the last axis, one kernel.
TEST(CollapseGroups, ReductionTakesItsPrologue) {
  auto build = [](Net& n) {
    auto x = n.in("x", {3, 7, 300});
    auto m = n.in("m", {3, 7, 1});
    auto e = n.op("Exp", "exp", {n.op("Sub", "sub", {x, m})});
    n.out(n.op("ReduceSum", "sum", {e, n.ints({-1})}));
    n.infer();
  };
  Net ref, net;
  build(ref);
  build(net);
  CollapseStats st = collapse_and_check(ref, net);
  EXPECT_EQ(st.fused_nodes, 1);
  EXPECT_EQ(st.nodes_folded, 3);
  EXPECT_EQ(count(*net.g, "FusedReduce"), 1);
  EXPECT_EQ(net.g->num_nodes(), 1u);
}

// Variance over a middle axis (kept axes on both sides), mean and max over leading axes, with
// a transposed read in the prologue.
TEST(CollapseGroups, ReductionsOverOtherAxes) {
  for (const char* op : {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceSum"})
    for (std::vector<int64_t> axes : std::vector<std::vector<int64_t>>{{1}, {0}, {0, 1}, {1, 2}, {2}}) {
      auto build = [&](Net& n) {
        n.g->opsets[""] = 18;
        auto x = n.in("x", {5, 6, 33});
        auto mu = n.in("mu", {5, 1, 33});
        auto y = n.in("y", {33, 6, 5});
        auto d = n.op("Sub", "sub", {x, mu});
        auto t = n.op("Transpose", "transpose", {y});
        auto s = n.op("Mul", "mul", {n.op("Mul", "sq", {d, d}), t});
        n.out(n.op(op, "reduce", {s, n.ints(axes)}, {{"keepdims", ir::Attribute::of_int(axes.size() == 1)}}));
        n.infer();
      };
      Net ref, net;
      build(ref);
      build(net);
      SCOPED_TRACE(std::string(op) + " axes " + std::to_string(axes[0]) + (axes.size() > 1 ? "+" : ""));
      CollapseStats st = collapse_and_check(ref, net);
      EXPECT_EQ(count(*net.g, "FusedReduce"), 1);
      // The partitioner leaves the Transpose (a prologue of the Mul's other side) apart.
      EXPECT_GE(st.nodes_folded, 4);
    }
}

// An intermediate the rest of the graph reads cannot hide inside the reduction: the prologue
// still fuses (as an elementwise node writing that value), the reduction runs after it.
TEST(CollapseGroups, PrologueValueUsedOutside) {
  auto build = [](Net& n) {
    n.g->opsets[""] = 18;
    auto x = n.in("x", {4, 50});
    auto e = n.op("Exp", "exp", {n.op("Neg", "neg", {x})});
    n.out(e);
    n.out(n.op("ReduceMax", "max", {e, n.ints({1})}));
    n.infer();
  };
  Net ref, net;
  build(ref);
  build(net);
  collapse_and_check(ref, net);
  EXPECT_EQ(count(*net.g, "FusedReduce"), 0);
}


// mean((x - mu)^2), then + eps and Sqrt on the reduced values: prologue, reduction and
// epilogue in one kernel.
TEST(CollapseGroups, ReductionTakesItsEpilogue) {
  auto build = [](Net& n) {
    n.g->opsets[""] = 18;
    auto x = n.in("x", {4, 50, 64});
    auto mu = n.in("mu", {4, 50, 1});
    auto d = n.op("Sub", "sub", {x, mu});
    auto v = n.op("ReduceMean", "var", {n.op("Mul", "sq", {d, d}), n.ints({-1})});
    auto eps = n.g->add_constant("eps", Tensor::from_vector<float>({1}, {1e-5f}));
    n.out(n.op("Sqrt", "std", {n.op("Add", "add_eps", {v, eps})}));
    n.infer();
  };
  Net ref, net;
  build(ref);
  build(net);
  CollapseStats st = collapse_and_check(ref, net);
  EXPECT_EQ(count(*net.g, "FusedReduce"), 1);
  EXPECT_EQ(net.g->num_nodes(), 1u);
  EXPECT_EQ(st.fused_nodes, 1);
  EXPECT_EQ(st.nodes_folded, 5);
}

// The reduced value also feeds a full-size op: no epilogue is taken, the reduction's result is
// written for both readers.
TEST(CollapseGroups, ReductionWithTwoReadersKeepsItsOutput) {
  auto build = [](Net& n) {
    n.g->opsets[""] = 18;
    auto x = n.in("x", {4, 50, 64});
    auto m = n.op("ReduceMax", "max", {n.op("Abs", "abs", {x}), n.ints({-1})});
    n.out(n.op("Div", "div", {x, n.op("Add", "add", {m, n.g->add_constant("one", Tensor::from_vector<float>({1}, {1.f}))})}));
    n.out(n.op("Neg", "neg", {m}));
    n.infer();
  };
  Net ref, net;
  build(ref);
  build(net);
  collapse_and_check(ref, net);
  EXPECT_EQ(count(*net.g, "FusedReduce"), 1);
}

}  // namespace
}  // namespace kiln::fusion::testing
