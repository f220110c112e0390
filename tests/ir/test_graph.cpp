#include <gtest/gtest.h>
#include <kiln/error.h>

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::ir {
namespace {

TensorType f32(std::vector<Dim> d) { return TensorType(DType::Float, std::move(d)); }

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<std::string> op_order(const Graph& g) {
  std::vector<std::string> out;
  for (Node* n : g.nodes()) out.push_back(n->name());
  return out;
}

TEST(Graph, AddNodeLinksProducersAndUses) {
  Graph g;
  Value* x = g.add_input("x", f32({2}));
  Value* y = g.add_value("y");
  Value* z = g.add_value("z");
  Node* a = g.add_node("Relu", {x}, {y}, {}, "a");
  Node* b = g.add_node("Add", {x, y}, {z}, {}, "b");
  g.add_output(z);
  EXPECT_EQ(y->producer(), a);
  EXPECT_EQ(z->producer(), b);
  EXPECT_EQ(z->producer_output(), 0);
  ASSERT_EQ(x->uses().size(), 2u);
  EXPECT_EQ(x->uses()[0], (Use{a, 0}));
  EXPECT_EQ(x->uses()[1], (Use{b, 0}));
  EXPECT_EQ(y->uses(), (std::vector<Use>{{b, 1}}));
  EXPECT_TRUE(x->is_graph_input());
  EXPECT_EQ(x->owner(), &g);
  EXPECT_EQ(a->owner(), &g);
  EXPECT_EQ(g.find_value("z"), z);
  EXPECT_EQ(g.find_value("nope"), nullptr);
  EXPECT_EQ(g.num_nodes(), 2u);
}

TEST(Graph, AddNodeDefaultsNameAndDomain) {
  Graph g;
  Value* x = g.add_input("x", f32({2}));
  Node* n = g.add_node("Relu", {x}, {g.add_value("y")}, {}, "", "ai.onnx");
  EXPECT_EQ(n->domain(), "");
  EXPECT_FALSE(n->name().empty());
  EXPECT_EQ(n->describe(), "node '" + n->name() + "' (Relu)");
}

TEST(Graph, AddNodeRejectsProducedOutputs) {
  Graph g;
  Value* x = g.add_input("x", f32({2}));
  Value* c = g.add_constant("c", Tensor::scalar<float>(1));
  Value* y = g.add_value("y");
  Node* a = g.add_node("Relu", {x}, {y}, {}, "a");
  EXPECT_NE(error_of([&] { g.add_node("Neg", {x}, {y}, {}, "b"); }).find("'y' already has a producer"),
            std::string::npos);
  EXPECT_THROW(g.add_node("Neg", {x}, {x}, {}, "c"), Error);
  EXPECT_THROW(g.add_node("Neg", {x}, {c}, {}, "d"), Error);
  // A rejected node must leave no trace: no uses, no producers, no node.
  EXPECT_EQ(x->uses(), (std::vector<Use>{{a, 0}}));
  EXPECT_EQ(y->producer(), a);
  EXPECT_EQ(g.num_nodes(), 1u);
  // The same value twice among one node's outputs is two producers too.
  Value* w = g.add_value("w");
  EXPECT_THROW(g.add_node("Split", {x}, {w, w}, {}, "e"), Error);
  EXPECT_EQ(w->producer(), nullptr);
  EXPECT_EQ(x->uses().size(), 1u);
}

TEST(Graph, SetInputKeepsUses) {
  Graph g;
  Value* x = g.add_input("x", f32({2}));
  Value* w = g.add_input("w", f32({2}));
  Node* n = g.add_node("Add", {x, x}, {g.add_value("y")}, {}, "n");
  EXPECT_EQ(x->uses().size(), 2u);
  n->set_input(1, w);
  EXPECT_EQ(x->uses(), (std::vector<Use>{{n, 0}}));
  EXPECT_EQ(w->uses(), (std::vector<Use>{{n, 1}}));
  n->set_input(3, x);  // grows with absent optionals in between
  EXPECT_EQ(n->num_inputs(), 4);
  EXPECT_FALSE(n->has_input(2));
  EXPECT_EQ(x->uses(), (std::vector<Use>{{n, 0}, {n, 3}}));
  n->set_input(0, nullptr);
  EXPECT_EQ(x->uses(), (std::vector<Use>{{n, 3}}));
}

TEST(Graph, RemoveNode) {
  Graph g;
  Value* x = g.add_input("x", f32({2}));
  Value* y = g.add_value("y");
  Value* z = g.add_value("z");
  g.add_node("Relu", {x}, {y}, {}, "a");
  Node* b = g.add_node("Neg", {y}, {z}, {}, "b");
  g.remove_node(b);
  EXPECT_TRUE(y->uses().empty());
  EXPECT_EQ(z->producer(), nullptr);
  EXPECT_EQ(op_order(g), (std::vector<std::string>{"a"}));
  EXPECT_EQ(x->uses().size(), 1u);
}

TEST(Graph, ReplaceAllUses) {
  Graph g;
  Value* x = g.add_input("x", f32({2}));
  Value* y = g.add_value("y");
  Value* y2 = g.add_value("y2");
  Value* z = g.add_value("z");
  Node* a = g.add_node("Relu", {x}, {y}, {}, "a");
  Node* a2 = g.add_node("Abs", {x}, {y2}, {}, "a2");
  Node* b = g.add_node("Add", {y, y}, {z}, {}, "b");
  g.add_output(y);
  g.add_output(z);
  g.replace_all_uses(y, y2);
  EXPECT_TRUE(y->uses().empty());
  EXPECT_EQ(y2->uses(), (std::vector<Use>{{b, 0}, {b, 1}}));
  EXPECT_EQ(b->input(0), y2);
  EXPECT_EQ(b->input(1), y2);
  EXPECT_EQ(g.outputs(), (std::vector<Value*>{y2, z}));
  // The dead node can now go, leaving a consistent graph.
  g.remove_node(a);
  EXPECT_EQ(op_order(g), (std::vector<std::string>{"a2", "b"}));
  EXPECT_EQ(y2->producer(), a2);
  // Self-replacement is a no-op.
  g.replace_all_uses(y2, y2);
  EXPECT_EQ(y2->uses().size(), 2u);
}

TEST(Graph, TopologicalSortIsStable) {
  Graph g;
  Value* x = g.add_input("x", f32({2}));
  Value* a = g.add_value("a");
  Value* b = g.add_value("b");
  Value* c = g.add_value("c");
  Value* d = g.add_value("d");
  // Added out of order: c needs b needs a; "d" is independent and stays where it was among
  // the ready nodes.
  g.add_node("Add", {b, a}, {c}, {}, "n_c");
  g.add_node("Neg", {x}, {d}, {}, "n_d");
  g.add_node("Relu", {a}, {b}, {}, "n_b");
  g.add_node("Abs", {x}, {a}, {}, "n_a");
  g.topological_sort();
  EXPECT_EQ(op_order(g), (std::vector<std::string>{"n_d", "n_a", "n_b", "n_c"}));
  // A sorted graph keeps its order.
  g.topological_sort();
  EXPECT_EQ(op_order(g), (std::vector<std::string>{"n_d", "n_a", "n_b", "n_c"}));
}

TEST(Graph, TopologicalSortKeepsIndependentOrder) {
  Graph g;
  Value* x = g.add_input("x", f32({2}));
  for (char i = '0'; i < '5'; ++i)
    g.add_node("Neg", {x}, {g.add_value(std::string("v") + i)}, {}, std::string("n") + i);
  g.topological_sort();
  EXPECT_EQ(op_order(g), (std::vector<std::string>{"n0", "n1", "n2", "n3", "n4"}));
}

TEST(Graph, TopologicalSortDetectsCycles) {
  Graph g;
  Value* x = g.add_input("x", f32({2}));
  Value* a = g.add_value("a");
  Value* b = g.add_value("b");
  Value* c = g.add_value("c");
  g.add_node("Neg", {x}, {c}, {}, "fine");
  g.add_node("Add", {x, b}, {a}, {}, "loop_a");
  g.add_node("Relu", {a}, {b}, {}, "loop_b");
  std::string msg = error_of([&] { g.topological_sort(); });
  EXPECT_NE(msg.find("cycle"), std::string::npos) << msg;
  EXPECT_NE(msg.find("node 'loop_a' (Add)"), std::string::npos) << msg;
}

TEST(Graph, TopologicalSortNamesANodeOnTheCycle) {
  // "after" only consumes the cycle's output; it comes first but is not on the cycle.
  Graph g;
  Value* x = g.add_input("x", f32({2}));
  Value* a = g.add_value("a");
  Value* b = g.add_value("b");
  g.add_node("Neg", {a}, {g.add_value("c")}, {}, "after");
  g.add_node("Add", {x, b}, {a}, {}, "loop_a");
  g.add_node("Relu", {a}, {b}, {}, "loop_b");
  std::string msg = error_of([&] { g.topological_sort(); });
  EXPECT_EQ(msg.find("after"), std::string::npos) << msg;
  EXPECT_TRUE(msg.find("node 'loop_a'") != std::string::npos || msg.find("node 'loop_b'") != std::string::npos)
      << msg;
}

TEST(Graph, TopologicalSortSelfLoop) {
  Graph g;
  Value* a = g.add_value("a");
  g.add_node("Relu", {a}, {a}, {}, "self");
  EXPECT_NE(error_of([&] { g.topological_sort(); }).find("node 'self'"), std::string::npos);
}

TEST(Graph, TopologicalSortOrdersSubgraphReads) {
  // The If body reads %late from the outer graph, so %late's producer must come first even
  // though the If node has no direct input from it.
  Graph g;
  Value* cond = g.add_input("cond", TensorType(DType::Bool, {}));
  Value* x = g.add_input("x", f32({2}));
  Value* late = g.add_value("late");
  auto body = std::make_shared<Graph>();
  body->name = "then";
  body->parent = &g;
  Value* t = body->add_value("t");
  body->add_node("Neg", {late}, {t}, {}, "inner");
  body->add_output(t);
  Value* r = g.add_value("r");
  g.add_node("If", {cond}, {r},
             {{"then_branch", Attribute::of_graph(body)}, {"else_branch", Attribute::of_graph(body)}}, "if");
  g.add_node("Relu", {x}, {late}, {}, "producer");
  g.topological_sort();
  EXPECT_EQ(op_order(g), (std::vector<std::string>{"producer", "if"}));
}

TEST(Graph, UniqueNames) {
  Graph g;
  g.add_value("t__0");
  std::string a = g.unique_name("t");
  EXPECT_EQ(a.rfind("t", 0), 0u);
  EXPECT_NE(a, "t__0");
  EXPECT_EQ(g.find_value(a), nullptr);
  Value* v = g.add_value(a);
  EXPECT_NE(g.unique_name("t"), v->name());
  Value* anon = g.add_value("");
  EXPECT_FALSE(anon->name().empty());
  Value* anon2 = g.add_value("");
  EXPECT_NE(anon->name(), anon2->name());
  EXPECT_NE(error_of([&] { g.add_value("t__0"); }).find("duplicate value name 't__0'"), std::string::npos);
  EXPECT_THROW(g.add_input("t__0", f32({1})), Error);
}

TEST(Graph, ConstantsAndValues) {
  Graph g;
  Value* x = g.add_input("x", f32({2}));
  Value* c = g.add_constant("c", Tensor::from_vector<int64_t>({2}, {1, 2}));
  EXPECT_TRUE(c->is_constant());
  EXPECT_EQ(c->type.str(), "int64[2]");
  EXPECT_EQ(c->constant().to_int64_vector(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(g.constants(), (std::vector<Value*>{c}));
  EXPECT_EQ(g.values(), (std::vector<Value*>{x, c}));
  EXPECT_EQ(g.inputs(), (std::vector<Value*>{x}));
}

TEST(Graph, OpsetLooksThroughParents) {
  Graph g;
  g.opsets[""] = 13;
  g.opsets["com.microsoft"] = 1;
  Graph sub;
  sub.parent = &g;
  EXPECT_EQ(sub.opset(), 13);
  EXPECT_EQ(sub.opset("com.microsoft"), 1);
  EXPECT_EQ(sub.opset("other"), 0);
  sub.opsets[""] = 11;
  EXPECT_EQ(sub.opset(), 11);
}

TEST(Graph, TypedAttributes) {
  Graph g;
  Value* x = g.add_input("x", f32({2}));
  Node* n = g.add_node("Foo", {x}, {g.add_value("y")},
                       {{"i", Attribute::of_int(3)},
                        {"f", Attribute::of_float(0.5f)},
                        {"s", Attribute::of_string("SAME")},
                        {"is", Attribute::of_ints({1, 2})}},
                       "foo");
  EXPECT_EQ(n->attr_int("i", 0), 3);
  EXPECT_EQ(n->attr_int("missing", 7), 7);
  EXPECT_EQ(n->attr_float("f", 0), 0.5f);
  EXPECT_EQ(n->attr_float("i", 0), 3.0f);  // ints are accepted where floats are expected
  EXPECT_EQ(n->attr_string("s", ""), "SAME");
  EXPECT_EQ(n->attr_ints("is"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(n->attr_graph("g"), nullptr);
  std::string msg = error_of([&] { n->attr_int("s", 0); });
  EXPECT_NE(msg.find("node 'foo' (Foo): attribute 's' is string, expected int"), std::string::npos) << msg;
  EXPECT_NE(error_of([&] { n->attr_int_required("nope"); }).find("missing required attribute 'nope'"),
            std::string::npos);
  EXPECT_THROW(n->attr_tensor_required("t"), Error);
}

TEST(TensorType, Strings) {
  EXPECT_EQ(TensorType(DType::Float, {Dim::sym("batch"), 3, Dim::unknown()}).str(), "float[batch,3,?]");
  EXPECT_EQ(TensorType::unranked(DType::Int64).str(), "int64[*]");
  EXPECT_EQ(TensorType(DType::Bool, {}).str(), "bool[]");
  TensorType t = TensorType::from_dims(DType::Float, {2, 3});
  EXPECT_TRUE(t.is_static());
  EXPECT_EQ(t.static_numel(), 6);
  EXPECT_EQ(t.static_dims(), (std::vector<int64_t>{2, 3}));
  TensorType s(DType::Float, {Dim::sym("n")});
  EXPECT_FALSE(s.is_static());
  EXPECT_EQ(s.static_numel(), std::nullopt);
  EXPECT_THROW(s.static_dims(), Error);
  EXPECT_TRUE(Dim::sym("n").same_as(Dim::sym("n")));
  EXPECT_FALSE(Dim::unknown().same_as(Dim::unknown()));
  EXPECT_FALSE(Dim(2).same_as(Dim::sym("n")));
}

}  // namespace
}  // namespace kiln::ir
