// TensorFlow control flow in the TF frontend: TF1 while-loop frames and TF2 While/If built as
// GraphDefs here, run end to end against hand-computed values, and the malformed forms the
// importer refuses. (tests/data/tf_control_flow/ holds graphs checked against TensorFlow.js.)
#include <gtest/gtest.h>
#include <kiln/error.h>

#include "tf_graph_builder.h"

namespace kiln::testing {

namespace {

// A library function under construction: nodes refer to its arguments by name and to node
// outputs as "node:output_arg:k".
class Function {
 public:
  Function(TfGraph& t, const std::string& name, const std::vector<std::pair<std::string, tfpb::DataType>>& args) {
    f_ = t.g.mutable_library()->add_function();
    f_->mutable_signature()->set_name(name);
    for (const auto& [a, type] : args) {
      auto* arg = f_->mutable_signature()->add_input_arg();
      arg->set_name(a);
      arg->set_type(type);
    }
  }
  tfpb::NodeDef* node(const std::string& op, const std::string& name, const std::vector<std::string>& inputs = {}) {
    auto* n = f_->add_node_def();
    n->set_op(op);
    n->set_name(name);
    for (const auto& s : inputs) n->add_input(s);
    return n;
  }
  void int_const(const std::string& name, int32_t v) {
    auto* n = node("Const", name);
    TfGraph::set_type(n, "dtype", tfpb::DT_INT32);
    auto* p = (*n->mutable_attr())["value"].mutable_tensor();
    p->set_dtype(tfpb::DT_INT32);
    p->add_int_val(v);
  }
  void float_const(const std::string& name, float v) {
    auto* n = node("Const", name);
    TfGraph::set_type(n, "dtype", tfpb::DT_FLOAT);
    auto* p = (*n->mutable_attr())["value"].mutable_tensor();
    p->set_dtype(tfpb::DT_FLOAT);
    p->add_float_val(v);
  }
  void ret(const std::string& output, tfpb::DataType type, const std::string& ref) {
    auto* o = f_->mutable_signature()->add_output_arg();
    o->set_name(output);
    o->set_type(type);
    (*f_->mutable_ret())[output] = ref;
  }

 private:
  tfpb::FunctionDef* f_;
};

void set_func(tfpb::NodeDef* n, const std::string& attr, const std::string& fn) {
  (*n->mutable_attr())[attr].mutable_func()->set_name(fn);
}

tfpb::NodeDef* enter(TfGraph& t, const std::string& name, const std::string& input, const std::string& frame,
                     bool invariant) {
  auto* n = t.node("Enter", name, {input});
  TfGraph::set_str(n, "frame_name", frame);
  TfGraph::set_bool(n, "is_constant", invariant);
  return n;
}

// tf.compat.v1.while_loop(lambda i, acc: i < n, lambda i, acc: (i + 1, acc * 2 + x), (0, x)):
// loop variables i and acc, invariants n and x. The Const 2 only the body reads comes last, so
// the topological order puts it after the loop's Exits.
TfGraph tf1_counter() {
  TfGraph t;
  t.placeholder("x", tfpb::DT_FLOAT, {2});
  t.placeholder("n", tfpb::DT_INT32, {});
  t.ints("i0", {}, {0});
  const std::string F = "f/while_context";
  enter(t, "f/enter_i", "i0", F, false);
  enter(t, "f/enter_acc", "x", F, false);
  enter(t, "f/enter_n", "n", F, true);
  enter(t, "f/enter_x", "x", F, true);
  t.node("Merge", "f/merge_i", {"f/enter_i", "f/next_i"});
  t.node("Merge", "f/merge_acc", {"f/enter_acc", "f/next_acc"});
  t.node("Less", "f/less", {"f/merge_i", "f/enter_n"});
  t.node("LoopCond", "f/cond", {"f/less"});
  t.node("Switch", "f/sw_i", {"f/merge_i", "f/cond"});
  t.node("Switch", "f/sw_acc", {"f/merge_acc", "f/cond"});
  t.node("Identity", "f/id_i", {"f/sw_i:1"});
  t.node("Identity", "f/id_acc", {"f/sw_acc:1"});
  t.ints("f/one", {}, {1});
  t.g.mutable_node(t.g.node_size() - 1)->add_input("^f/id_i");
  t.node("AddV2", "f/i1", {"f/id_i", "f/one"});
  t.node("Mul", "f/twice", {"f/id_acc", "two"});
  t.node("AddV2", "f/acc1", {"f/twice", "f/enter_x"});
  t.node("NextIteration", "f/next_i", {"f/i1"});
  t.node("NextIteration", "f/next_acc", {"f/acc1"});
  t.node("Exit", "f/exit_i", {"f/sw_i"});
  t.node("Exit", "f/exit_acc", {"f/sw_acc"});
  t.node("Identity", "y", {"f/exit_acc"});
  t.floats("two", {}, {2.0f});
  return t;
}

std::string error_of(const TfGraph& t, const std::string& stem) {
  try {
    t.session(stem);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(TfControlFlow, Tf1WhileFrameWithInvariants) {
  auto s = tf1_counter().session("tf1_counter");
  ASSERT_EQ(s->outputs().size(), 2u);
  EXPECT_EQ(s->outputs()[0].name, "f/exit_i:0");
  EXPECT_EQ(s->outputs()[1].name, "y:0");
  Tensor x = Tensor::from_vector<float>({2}, {1, -1});
  // acc: x -> 3x -> 7x -> 15x
  auto out = s->run(std::vector<Tensor>{x, Tensor::scalar<int32_t>(3)});
  EXPECT_EQ(values(out[0]), (std::vector<float>{3}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{15, -15}));
  // No trip: the initial values come out.
  out = s->run(std::vector<Tensor>{x, Tensor::scalar<int32_t>(0)});
  EXPECT_EQ(values(out[0]), (std::vector<float>{0}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{1, -1}));
}

TEST(TfControlFlow, Tf2NestedWhile) {
  // for k in range(m): acc += sum(float(j) for j in range(k)), the inner loop a While in the
  // outer body. m = 5: 0 + 0 + 1 + 3 + 6 = 10.
  TfGraph t;
  t.placeholder("m", tfpb::DT_INT32, {});
  t.ints("k0", {}, {0});
  t.floats("acc0", {}, {0.0f});
  auto* w = t.node("While", "outer", {"k0", "acc0", "m"});
  set_func(w, "cond", "outer_cond");
  set_func(w, "body", "outer_body");
  t.node("Identity", "acc", {"outer:1"});
  const std::vector<std::pair<std::string, tfpb::DataType>> outer_args = {
      {"k", tfpb::DT_INT32}, {"acc", tfpb::DT_FLOAT}, {"m", tfpb::DT_INT32}};
  Function oc(t, "outer_cond", outer_args);
  oc.node("Less", "less", {"k", "m"});
  oc.ret("c", tfpb::DT_BOOL, "less:z:0");
  Function ob(t, "outer_body", outer_args);
  ob.int_const("j0", 0);
  ob.float_const("t0", 0.0f);
  ob.int_const("one", 1);
  auto* inner = ob.node("StatelessWhile", "inner", {"j0:output:0", "t0:output:0", "k"});
  set_func(inner, "cond", "inner_cond");
  set_func(inner, "body", "inner_body");
  ob.node("AddV2", "acc1", {"acc", "inner:output:1"});
  ob.node("AddV2", "k1", {"k", "one:output:0"});
  ob.ret("k_next", tfpb::DT_INT32, "k1:z:0");
  ob.ret("acc_next", tfpb::DT_FLOAT, "acc1:z:0");
  ob.ret("m_next", tfpb::DT_INT32, "m");
  const std::vector<std::pair<std::string, tfpb::DataType>> inner_args = {
      {"j", tfpb::DT_INT32}, {"t", tfpb::DT_FLOAT}, {"k", tfpb::DT_INT32}};
  Function ic(t, "inner_cond", inner_args);
  ic.node("Less", "less", {"j", "k"});
  ic.ret("c", tfpb::DT_BOOL, "less:z:0");
  Function ib(t, "inner_body", inner_args);
  ib.int_const("one", 1);
  auto* cast = ib.node("Cast", "jf", {"j"});
  TfGraph::set_type(cast, "DstT", tfpb::DT_FLOAT);
  ib.node("AddV2", "t1", {"t", "jf:y:0"});
  ib.node("AddV2", "j1", {"j", "one:output:0"});
  ib.ret("j_next", tfpb::DT_INT32, "j1:z:0");
  ib.ret("t_next", tfpb::DT_FLOAT, "t1:z:0");
  ib.ret("k_next", tfpb::DT_INT32, "k");
  auto s = t.session("nested_while");
  ASSERT_EQ(s->outputs().size(), 1u);
  EXPECT_EQ(values(s->run(std::vector<Tensor>{Tensor::scalar<int32_t>(5)})[0]), (std::vector<float>{10}));
  EXPECT_EQ(values(s->run(std::vector<Tensor>{Tensor::scalar<int32_t>(4)})[0]), (std::vector<float>{4}));
}

TEST(TfControlFlow, Tf2WhileVariableThatGrows) {
  // v = [1]; for 3 trips: v = concat(v, v * 2) -> 8 values, 1 2 2 4 2 4 4 8. The body is first
  // converted for v of one element and again for v of any length.
  TfGraph t;
  t.placeholder("v0", tfpb::DT_FLOAT, {1});
  t.ints("i0", {}, {0});
  auto* w = t.node("While", "loop", {"i0", "v0"});
  set_func(w, "cond", "cond");
  set_func(w, "body", "body");
  const std::vector<std::pair<std::string, tfpb::DataType>> args = {{"i", tfpb::DT_INT32}, {"v", tfpb::DT_FLOAT}};
  Function c(t, "cond", args);
  c.int_const("three", 3);
  c.node("Less", "less", {"i", "three:output:0"});
  c.ret("c", tfpb::DT_BOOL, "less:z:0");
  Function b(t, "body", args);
  b.int_const("one", 1);
  b.float_const("two", 2.0f);
  b.int_const("axis", 0);
  b.node("Mul", "twice", {"v", "two:output:0"});
  b.node("ConcatV2", "longer", {"v", "twice:z:0", "axis:output:0"});
  b.node("AddV2", "i1", {"i", "one:output:0"});
  b.ret("i_next", tfpb::DT_INT32, "i1:z:0");
  b.ret("v_next", tfpb::DT_FLOAT, "longer:output:0");
  auto s = t.session("growing_while");
  auto out = s->run(std::vector<Tensor>{Tensor::from_vector<float>({1}, {1})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(values(out[1]), (std::vector<float>{1, 2, 2, 4, 2, 4, 4, 8}));
}

TEST(TfControlFlow, TensorArrayScatterReadSize) {
  // ta = TensorArray(3).unstack(x); ta.read(1), ta.size()
  TfGraph t;
  t.placeholder("x", tfpb::DT_FLOAT, {3, 2});
  t.ints("size", {}, {3});
  t.ints("indices", {3}, {0, 1, 2});
  t.ints("one", {}, {1});
  auto* ta = t.node("TensorArrayV3", "ta", {"size"});
  TfGraph::set_type(ta, "dtype", tfpb::DT_FLOAT);
  t.node("TensorArrayScatterV3", "scatter", {"ta", "indices", "x", "ta:1"});
  t.node("TensorArrayReadV3", "read", {"ta", "one", "scatter"});
  t.node("TensorArraySizeV3", "n", {"ta", "scatter"});
  auto s = t.session("tensor_array");
  auto out = s->run({ramp({3, 2})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(values(out[0]), (std::vector<float>{2, 3}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{3}));
}

TEST(TfControlFlow, Tf1CondWithAConstBranchAndValueIndex) {
  // tf.compat.v1.cond(p, lambda: [7, 7], lambda: -x): the true branch's result is a Const,
  // in its branch by a control input only; Merge:1 says which input was taken.
  TfGraph t;
  t.placeholder("p", tfpb::DT_BOOL, {});
  t.placeholder("x", tfpb::DT_FLOAT, {2});
  t.node("Switch", "c/Switch", {"p", "p"});
  t.node("Identity", "c/switch_t", {"c/Switch:1"});
  t.floats("c/seven", {2}, {7, 7});
  t.g.mutable_node(t.g.node_size() - 1)->add_input("^c/switch_t");
  t.node("Switch", "c/x", {"x", "p"});
  t.node("Neg", "c/neg", {"c/x"});
  t.node("Merge", "c/Merge", {"c/neg", "c/seven"});
  t.node("Identity", "which", {"c/Merge:1"});
  t.node("Identity", "y", {"c/Merge"});
  auto s = t.session("tf1_cond");
  ASSERT_EQ(s->outputs().size(), 2u);
  EXPECT_EQ(s->outputs()[0].name, "which:0");
  Tensor x = Tensor::from_vector<float>({2}, {1, -2});
  auto out = s->run(std::vector<Tensor>{Tensor::scalar<bool>(true), x});
  EXPECT_EQ(values(out[0]), (std::vector<float>{1}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{7, 7}));
  out = s->run(std::vector<Tensor>{Tensor::scalar<bool>(false), x});
  EXPECT_EQ(values(out[0]), (std::vector<float>{0}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{-1, 2}));
}

TEST(TfControlFlow, TensorListPopBackLengthGather) {
  // l = TensorListFromTensor(x); l2, last = PopBack(l); last, Length(l2), Gather(l2, [1, 0])
  TfGraph t;
  t.placeholder("x", tfpb::DT_FLOAT, {3, 2});
  t.ints("shape", {1}, {2});
  t.ints("order", {2}, {1, 0});
  auto* from = t.node("TensorListFromTensor", "l", {"x", "shape"});
  TfGraph::set_type(from, "element_dtype", tfpb::DT_FLOAT);
  auto* pop = t.node("TensorListPopBack", "pop", {"l", "shape"});
  TfGraph::set_type(pop, "element_dtype", tfpb::DT_FLOAT);
  t.node("Identity", "last", {"pop:1"});
  t.node("TensorListLength", "n", {"pop"});
  auto* gather = t.node("TensorListGather", "g", {"pop", "order", "shape"});
  TfGraph::set_type(gather, "element_dtype", tfpb::DT_FLOAT);
  auto s = t.session("tensor_list");
  ASSERT_EQ(s->outputs().size(), 3u);
  EXPECT_EQ(s->outputs()[0].name, "last:0");
  auto out = s->run({ramp({3, 2})});
  EXPECT_EQ(values(out[0]), (std::vector<float>{4, 5}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{2}));
  EXPECT_EQ(out[2].dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values(out[2]), (std::vector<float>{2, 3, 0, 1}));
}

TEST(TfControlFlow, CycleNotThroughNextIterationIsRefused) {
  // Merge <- Identity <- Merge: a cycle, but its back edge is no NextIteration.
  TfGraph t;
  t.placeholder("x", tfpb::DT_FLOAT, {1});
  enter(t, "e", "x", "f", false);
  t.node("Merge", "m", {"e", "back"});
  t.node("Identity", "back", {"m"});
  const std::string e = error_of(t, "bad_cycle");
  EXPECT_NE(e.find("cycle"), std::string::npos) << e;
  EXPECT_NE(e.find("TensorFlow node 'm' (Merge)"), std::string::npos) << e;
}

TEST(TfControlFlow, WhileNamingAMissingFunctionIsRefused) {
  TfGraph t;
  t.placeholder("x", tfpb::DT_FLOAT, {1});
  auto* w = t.node("While", "loop", {"x"});
  set_func(w, "cond", "no_such_cond");
  set_func(w, "body", "no_such_body");
  const std::string e = error_of(t, "missing_function");
  EXPECT_NE(e.find("TensorFlow node 'loop' (While)"), std::string::npos) << e;
  EXPECT_NE(e.find("function 'no_such_cond' is not in the graph's library"), std::string::npos) << e;
}

TEST(TfControlFlow, RecursiveFunctionIsRefused) {
  TfGraph t;
  t.placeholder("x", tfpb::DT_FLOAT, {});
  auto* w = t.node("While", "loop", {"x"});
  set_func(w, "cond", "cond");
  set_func(w, "body", "body");
  Function c(t, "cond", {{"v", tfpb::DT_FLOAT}});
  c.float_const("ten", 10.0f);
  c.node("Less", "less", {"v", "ten:output:0"});
  c.ret("c", tfpb::DT_BOOL, "less:z:0");
  Function b(t, "body", {{"v", tfpb::DT_FLOAT}});
  auto* again = b.node("While", "again", {"v"});
  set_func(again, "cond", "cond");
  set_func(again, "body", "body");
  b.ret("v_next", tfpb::DT_FLOAT, "again:output:0");
  const std::string e = error_of(t, "recursion");
  EXPECT_NE(e.find("'again' (While) in function 'body'"), std::string::npos) << e;
  EXPECT_NE(e.find("calls itself"), std::string::npos) << e;
}

TEST(TfControlFlow, ErrorsInsideAFunctionNameTheFunction) {
  TfGraph t;
  t.placeholder("p", tfpb::DT_BOOL, {});
  t.placeholder("x", tfpb::DT_FLOAT, {1});
  auto* n = t.node("If", "branch", {"p", "x"});
  set_func(n, "then_branch", "yes");
  set_func(n, "else_branch", "no");
  Function yes(t, "yes", {{"a", tfpb::DT_FLOAT}});
  yes.node("NoSuchOp", "odd", {"a"});
  yes.ret("r", tfpb::DT_FLOAT, "odd:y:0");
  Function no(t, "no", {{"a", tfpb::DT_FLOAT}});
  no.ret("r", tfpb::DT_FLOAT, "a");
  const std::string e = error_of(t, "bad_branch");
  EXPECT_NE(e.find("TensorFlow node 'odd' (NoSuchOp) in function 'yes'"), std::string::npos) << e;
}

}  // namespace kiln::testing
