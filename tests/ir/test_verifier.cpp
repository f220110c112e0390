#include <gtest/gtest.h>
#include <kiln/dtype.h>
#include <kiln/error.h>
#include <kiln/tensor.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

// Some violations (a missing or duplicated use, a wrong producer index) cannot be built through
// the Graph API, which keeps links consistent; the tests forge them by reaching into the
// private fields. Only the IR header is affected: the standard headers are included above.
#define private public
#include "ir/graph.h"
#undef private

#include "frontend/onnx/importer.h"
#include "ir/printer.h"
#include "ir/verifier.h"

#include <filesystem>
#include <iostream>

namespace kiln::ir {
namespace {

TensorType f32(std::vector<Dim> d) { return TensorType(DType::Float, std::move(d)); }

// The problems verify_all finds, as one string for substring assertions.
std::string problems(const Graph& g) {
  std::string s;
  for (const std::string& p : verify_all(g)) s += p + "\n";
  return s;
}

#define EXPECT_PROBLEM(g, text)                                          \
  do {                                                                   \
    std::string all_ = problems(g);                                      \
    EXPECT_NE(all_.find(text), std::string::npos) << "problems:\n" << all_; \
  } while (0)

// main: x -> Relu(a) -> y -> Add(b, with const c) -> z
struct Small {
  Graph g;
  Value *x, *c, *y, *z;
  Node *a, *b;
  Small() {
    g.name = "main";
    x = g.add_input("x", f32({Dim::sym("n"), 2}));
    c = g.add_constant("c", Tensor::from_vector<float>({2}, {1, 2}));
    y = g.add_value("y", f32({Dim::sym("n"), 2}));
    z = g.add_value("z", f32({Dim::sym("n"), 2}));
    a = g.add_node("Relu", {x}, {y}, {}, "a");
    b = g.add_node("Add", {y, c}, {z}, {}, "b");
    g.add_output(z);
  }
};


// Removes a node although its outputs are still used, which Graph::remove_node refuses:
// the verifier must catch the broken state this leaves.
void force_remove(Graph& g, Node* n) {
  for (int i = 0; i < n->num_inputs(); ++i) n->set_input(i, nullptr);
  for (Value* o : n->outputs_)
    if (o) { o->producer_ = nullptr; o->producer_output_ = -1; }
  g.nodes_.erase(std::remove_if(g.nodes_.begin(), g.nodes_.end(), [n](const auto& p) { return p.get() == n; }),
                 g.nodes_.end());
}

TEST(Verifier, AcceptsValidGraph) {
  Small s;
  EXPECT_EQ(problems(s.g), "");
  EXPECT_NO_THROW(verify(s.g));
}

TEST(Verifier, AcceptsAbsentOptionalsAndInputOutputs) {
  Graph g;
  Value* x = g.add_input("x", f32({2}));
  Value* y = g.add_value("y");
  Node* n = g.add_node("Clip", {x, nullptr, nullptr}, {y, nullptr}, {}, "clip");
  (void)n;
  g.add_output(y);
  g.add_output(x);  // a graph input may be a graph output
  EXPECT_EQ(problems(g), "");
}

TEST(Verifier, ThrowsWithCountAndMessages) {
  Small s;
  Value* orphan = s.g.add_value("orphan", f32({2}));
  s.g.add_output(orphan);
  try {
    verify(s.g);
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("IR verification failed (1 problem):"), std::string::npos) << m;
    EXPECT_NE(m.find("graph 'main': graph output 1 'orphan' has no producer and is not a graph input or constant"),
              std::string::npos)
        << m;
  }
}

TEST(Verifier, UseBeforeProduce) {
  Graph g;
  g.name = "main";
  Value* x = g.add_input("x", f32({2}));
  Value* y = g.add_value("y");
  Value* z = g.add_value("z");
  g.add_node("Neg", {y}, {z}, {}, "consumer");
  g.add_node("Relu", {x}, {y}, {}, "producer");
  g.add_output(z);
  EXPECT_PROBLEM(g, "node 'consumer' (Neg) input 0 'y' is used before it is produced (by node 'producer' (Relu))");
  g.topological_sort();
  EXPECT_EQ(problems(g), "");
}

TEST(Verifier, InputWithoutProducer) {
  Small s;
  force_remove(s.g, s.a);  // y loses its producer but b still reads it
  EXPECT_PROBLEM(s.g, "node 'b' (Add) input 0 'y' has no producer and is not a graph input or constant");
}

TEST(Verifier, ValueOfAnotherGraph) {
  Small s;
  Graph other;
  other.name = "other";
  Value* foreign = other.add_input("q", f32({2}));
  s.b->set_input(1, foreign);
  // Pointers outside the verified tree may dangle, so the value is not named.
  EXPECT_PROBLEM(s.g, "node 'b' (Add) input 1 is a value that belongs to no graph in scope");
}

TEST(Verifier, DanglingUseOfDestroyedNode) {
  Small s;
  {
    auto other = std::make_unique<Graph>();
    other->add_node("Neg", {s.x}, {other->add_value("t")}, {}, "gone");
  }  // the node is freed, x still lists its use
  EXPECT_PROBLEM(s.g, "value 'x' has a use by a node that is no longer in the graph");
}

TEST(Verifier, MissingUse) {
  Small s;
  s.y->uses_.clear();
  EXPECT_PROBLEM(s.g, "node 'b' (Add) input 0 'y' is missing from that value's use list");
}

TEST(Verifier, DuplicateAndWrongUses) {
  Small s;
  s.x->uses_.push_back(Use{s.a, 0});
  EXPECT_PROBLEM(s.g, "value 'x' lists its use by node 'a' (Relu) input 0 twice");
  EXPECT_PROBLEM(s.g, "node 'a' (Relu) input 0 'x' is missing from that value's use list");  // not exactly once
  Small t;
  t.x->uses_.push_back(Use{t.b, 1});
  EXPECT_PROBLEM(t.g, "value 'x' lists a use by node 'b' (Add) input 1, but that input is not it");
  Small u;
  u.x->uses_.push_back(Use{u.b, 7});
  EXPECT_PROBLEM(u.g, "value 'x' lists a use by node 'b' (Add) input 7, but that input is not it");
}

TEST(Verifier, TwoProducers) {
  Small s;
  // A second node claiming y as output, forged past add_node's check.
  Node* dup = s.g.add_node("Neg", {s.x}, {s.g.add_value("tmp")}, {}, "dup");
  dup->outputs_[0] = s.y;
  EXPECT_PROBLEM(s.g, "node 'dup' (Neg) output 0 'y' records node 'a' (Relu) output 0 as its producer");
}

TEST(Verifier, WrongProducerIndex) {
  Small s;
  s.y->producer_output_ = 1;
  EXPECT_PROBLEM(s.g, "value 'y' names node 'a' (Relu) output 1 as its producer, but that output is not it");
  EXPECT_PROBLEM(s.g, "node 'a' (Relu) output 0 'y' records node 'a' (Relu) output 1 as its producer");
}

TEST(Verifier, ProducerRemoved) {
  Small s;
  Node* gone = s.a;
  force_remove(s.g, gone);
  s.y->producer_ = gone;  // as if remove_node had forgotten to unlink it
  EXPECT_PROBLEM(s.g, "value 'y' has a producer that is no longer in the graph");
}

TEST(Verifier, OutputIsConstantOrInput) {
  Small s;
  s.a->outputs_.push_back(s.c);
  s.c->producer_ = s.a;
  s.c->producer_output_ = 1;
  EXPECT_PROBLEM(s.g, "constant 'c' also has a producer");
  EXPECT_PROBLEM(s.g, "node 'a' (Relu) output 1 'c' is also a constant");
}

TEST(Verifier, GraphOutputNotProduced) {
  Small s;
  force_remove(s.g, s.b);
  EXPECT_PROBLEM(s.g, "graph output 0 'z' has no producer and is not a graph input or constant");
  Small t;
  t.g.mutable_outputs().push_back(nullptr);
  EXPECT_PROBLEM(t.g, "graph output 1 is null");
}

TEST(Verifier, DuplicateAndStaleNames) {
  Small s;
  s.z->name_ = "y";  // only reachable by bypassing the API
  EXPECT_PROBLEM(s.g, "value name 'y' is used by 2 values");
  Small t;
  t.z->name_ = "renamed";
  EXPECT_PROBLEM(t.g, "value 'renamed' cannot be found by its name (renamed after creation?)");
}

TEST(Verifier, ConstantTypeMismatch) {
  Small s;
  s.c->type = TensorType(DType::Int64, {2});
  EXPECT_PROBLEM(s.g, "constant 'c' is typed int64 but holds a float[2] tensor");
  Small t;
  t.c->type = f32({3});
  EXPECT_PROBLEM(t.g, "constant 'c' is typed float[3] but holds a float[2] tensor");
  Small u;
  u.c->type = TensorType::unranked(DType::Float);
  EXPECT_PROBLEM(u.g, "constant 'c' is typed float[*] but holds a float[2] tensor");
}

TEST(Verifier, InvalidTypes) {
  Small s;
  s.y->type.dtype = static_cast<DType>(42);
  EXPECT_PROBLEM(s.g, "value 'y' has invalid dtype 42");
  Small t;
  t.z->type.dims[0].value = -5;
  EXPECT_PROBLEM(t.g, "value 'z' has invalid dim -5");
  Small u;
  u.z->type.rank_known = false;
  EXPECT_PROBLEM(u.g, "value 'z' has unknown rank but lists dims");
}

TEST(Verifier, GraphInputFlags) {
  Small s;
  s.x->is_graph_input_ = false;
  EXPECT_PROBLEM(s.g, "graph input 'x' is not marked as an input");
  Small t;
  t.y->is_graph_input_ = true;
  EXPECT_PROBLEM(t.g, "value 'y' is marked as a graph input but is not in the input list");
}

// main: cond, x; late = Relu(x) after the If; the If's branches read outer values.
struct WithIf {
  Graph g;
  std::shared_ptr<Graph> then_g = std::make_shared<Graph>();
  std::shared_ptr<Graph> else_g = std::make_shared<Graph>();
  Value *cond, *x, *r, *t;
  Node* if_node;
  WithIf() {
    g.name = "main";
    g.opsets[""] = 13;
    cond = g.add_input("cond", TensorType(DType::Bool, {}));
    x = g.add_input("x", f32({2}));
    then_g->name = "then";
    then_g->parent = &g;
    Value* one = then_g->add_constant("one", Tensor::scalar<float>(1));
    t = then_g->add_value("t", f32({2}));
    then_g->add_node("Add", {x, one}, {t}, {}, "inner_add");  // reads outer x
    then_g->add_output(t);
    else_g->name = "else";
    else_g->parent = &g;
    else_g->add_output(x);  // an outer value directly as a branch output
    r = g.add_value("r", f32({2}));
    if_node = g.add_node("If", {cond}, {r},
                         {{"then_branch", Attribute::of_graph(then_g)},
                          {"else_branch", Attribute::of_graph(else_g)}},
                         "if");
    g.add_output(r);
  }
};

TEST(Verifier, AcceptsOuterScopeReads) {
  WithIf w;
  EXPECT_EQ(problems(w.g), "");
  // A subgraph verified alone reads its parent's values.
  EXPECT_EQ(problems(*w.then_g), "");
  w.then_g->parent = nullptr;
  EXPECT_NE(problems(*w.then_g).find("node 'inner_add' (Add) input 0 is a value that belongs to no graph in scope"),
            std::string::npos);
}

TEST(Verifier, SubgraphReadsLaterOuterValue) {
  WithIf w;
  Value* late = w.g.add_value("late", f32({2}));
  w.g.add_node("Relu", {w.x}, {late}, {}, "late_relu");
  w.then_g->nodes()[0]->set_input(0, late);
  EXPECT_PROBLEM(w.g,
                 "graph 'main' > node 'if' (If) attribute 'then_branch' > graph 'then': node 'inner_add' (Add) "
                 "input 0 'late' is used before it is produced (by node 'late_relu' (Relu)) in the enclosing "
                 "graph 'main'");
  w.g.topological_sort();  // subgraph reads count as dependencies of the If
  EXPECT_EQ(problems(w.g), "");
}

TEST(Verifier, SubgraphReadsSiblingValue) {
  WithIf w;
  w.else_g->mutable_outputs()[0] = w.t;  // t lives in the then branch
  EXPECT_PROBLEM(w.g, "graph 'else': graph output 0 is value 't' of graph 'then', which is neither this graph "
                      "nor an enclosing one");
}

TEST(Verifier, SubgraphUseListsChecked) {
  WithIf w;
  w.x->uses_.clear();
  EXPECT_PROBLEM(w.g, "graph 'then': node 'inner_add' (Add) input 0 'x' is missing from that value's use list");
}

TEST(Verifier, SubgraphParentAndNullGraphs) {
  WithIf w;
  w.else_g->parent = nullptr;
  EXPECT_PROBLEM(w.g, "graph 'main': node 'if' (If) attribute 'else_branch': subgraph 'else' does not have this "
                      "graph as parent");
  WithIf v;
  v.if_node->attrs["then_branch"].g = nullptr;
  EXPECT_PROBLEM(v.g, "graph 'main': node 'if' (If) attribute 'then_branch' holds no graph");
  WithIf u;
  Attribute gs;
  gs.kind = Attribute::Kind::Graphs;
  gs.graphs = {u.then_g, nullptr};
  u.if_node->attrs.erase("then_branch");
  u.if_node->attrs["branches"] = gs;
  EXPECT_PROBLEM(u.g, "node 'if' (If) attribute 'branches'[1] holds no graph");
}

TEST(Verifier, SubgraphNestedInItself) {
  WithIf w;
  w.then_g->nodes()[0]->attrs["body"] = Attribute::of_graph(w.then_g);
  EXPECT_PROBLEM(w.g, "graph 'then' > node 'inner_add' (Add) attribute 'body' > graph 'then': graph is nested inside itself");
  // The graph now owns itself through a shared_ptr; break the cycle so LeakSanitizer stays quiet.
  w.then_g->nodes()[0]->attrs.erase("body");
}

TEST(Verifier, ProblemsInsideSubgraphsAreFound) {
  WithIf w;
  Value* bad = w.then_g->add_value("bad", f32({2}));
  w.then_g->add_output(bad);
  EXPECT_THROW(verify(w.g), Error);
  EXPECT_PROBLEM(w.g, "graph 'then': graph output 1 'bad' has no producer");
}


// Everything the ONNX importer builds from the ONNX test models (including If/Loop/Scan bodies
// reading outer values) must pass the verifier, and print without trouble.
TEST(Verifier, ImportedOnnxTestModels) {
  namespace fs = std::filesystem;
  const fs::path root = "/usr/share/libonnx-testdata/data";
  if (!fs::is_directory(root)) GTEST_SKIP() << "no ONNX test data at " << root;
  int imported = 0, with_subgraphs = 0;
  std::vector<fs::path> models;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.path().filename() == "model.onnx") models.push_back(e.path());
  std::sort(models.begin(), models.end());
  for (const fs::path& m : models) {
    std::unique_ptr<Graph> g;
    try {
      g = onnx_fe::load_model(m);
    } catch (const Error&) {
      continue;  // import failures (unsupported opsets...) are the importer's tests' business
    }
    ++imported;
    std::vector<std::string> found = verify_all(*g);
    EXPECT_TRUE(found.empty()) << m << ":\n" << (found.empty() ? "" : found[0]);
    std::string text = print(*g);
    EXPECT_EQ(text.rfind("graph ", 0), 0u) << m;
    if (text.find(": graph ") != std::string::npos) ++with_subgraphs;
  }
  std::cout << imported << " of " << models.size() << " models imported, " << with_subgraphs << " with subgraphs\n";
  EXPECT_GT(imported, 500);
  EXPECT_GE(with_subgraphs, 3);
}

}  // namespace
}  // namespace kiln::ir
