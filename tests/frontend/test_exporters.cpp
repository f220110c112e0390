// Models shaped the way real exporters write them (and control-flow models), built as ONNX
// protobuf, loaded through kiln::Session at the default optimizer level and checked by value.
#include <gtest/gtest.h>
#include <kiln/error.h>
#include <kiln/session.h>
#include <onnx/onnx_pb.h>

#include <numeric>

namespace kiln::testing {

namespace {

using onnx::GraphProto;
using onnx::ModelProto;
using onnx::NodeProto;

ModelProto model(int opset = 13, int ir = 8) {
  ModelProto m;
  m.set_ir_version(ir);
  m.add_opset_import()->set_version(opset);
  m.mutable_graph()->set_name("g");
  return m;
}

void io(onnx::ValueInfoProto* vi, const std::string& name, int elem, std::vector<int64_t> dims) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) {
    if (d >= 0) shape->add_dim()->set_dim_value(d);
    else shape->add_dim()->set_dim_param("n");
  }
}
constexpr int F = onnx::TensorProto::FLOAT, I64 = onnx::TensorProto::INT64, B = onnx::TensorProto::BOOL;

NodeProto* node(GraphProto* g, const std::string& op, std::vector<std::string> ins, std::vector<std::string> outs) {
  NodeProto* n = g->add_node();
  n->set_op_type(op);
  for (auto& i : ins) n->add_input(i);
  for (auto& o : outs) n->add_output(o);
  return n;
}

void floats(onnx::TensorProto* t, const std::string& name, std::vector<int64_t> dims, std::vector<float> v) {
  t->set_name(name);
  t->set_data_type(F);
  for (int64_t d : dims) t->add_dims(d);
  for (float x : v) t->add_float_data(x);
}

void ints(onnx::TensorProto* t, const std::string& name, std::vector<int64_t> dims, std::vector<int64_t> v) {
  t->set_name(name);
  t->set_data_type(I64);
  for (int64_t d : dims) t->add_dims(d);
  for (int64_t x : v) t->add_int64_data(x);
}

NodeProto* constant(GraphProto* g, const std::string& out, std::vector<int64_t> dims, std::vector<float> v) {
  NodeProto* n = node(g, "Constant", {}, {out});
  auto* a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  floats(a->mutable_t(), out, dims, v);
  return n;
}

void graph_attr(NodeProto* n, const std::string& name, const GraphProto& g) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = g;
}

void int_attr(NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void ints_attr(NodeProto* n, const std::string& name, std::vector<int64_t> v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

std::unique_ptr<Session> session(const ModelProto& m, int level = 3) {
  std::string bytes;
  m.SerializeToString(&bytes);
  SessionOptions o;
  o.opt_level = level;
  return Session::create_from_bytes(bytes, o);
}

std::vector<float> values(const Tensor& t) {
  std::vector<float> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(static_cast<float>(t.as_double(i)));
  return v;
}

Tensor f32(std::vector<int64_t> dims, std::vector<float> v) { return Tensor::from_vector<float>(dims, v); }

}  // namespace

// ---------------------------------------------------------------- control flow

// then: x + c (c a Constant that lives only in the branch); else: concat(x, x) (another
// shape, so the output gets a symbolic dim).
TEST(ControlFlowModels, IfRunsBothBranches) {
  for (int level : {0, 3}) {
    auto m = model(13);
    auto* g = m.mutable_graph();
    io(g->add_input(), "cond", B, {});
    io(g->add_input(), "x", F, {3});
    io(g->add_output(), "y", F, {-1});
    GraphProto then_g, else_g;
    then_g.set_name("then");
    constant(&then_g, "c", {3}, {10, 20, 30});
    node(&then_g, "Add", {"x", "c"}, {"t"});
    io(then_g.add_output(), "t", F, {3});
    else_g.set_name("else");
    int_attr(node(&else_g, "Concat", {"x", "x"}, {"e"}), "axis", 0);
    io(else_g.add_output(), "e", F, {6});
    NodeProto* n = node(g, "If", {"cond"}, {"y"});
    graph_attr(n, "then_branch", then_g);
    graph_attr(n, "else_branch", else_g);
    auto s = session(m, level);
    EXPECT_LT(s->outputs()[0].dims[0], 0) << "the branches differ in shape: the output dim is symbolic";
    Tensor x = f32({3}, {1, 2, 3});
    auto a = s->run(std::vector<Tensor>{Tensor::scalar<bool>(true), x});
    EXPECT_EQ(values(a[0]), (std::vector<float>{11, 22, 33}));
    auto b = s->run(std::vector<Tensor>{Tensor::scalar<bool>(false), x});
    EXPECT_EQ(values(b[0]), (std::vector<float>{1, 2, 3, 1, 2, 3}));
  }
}

// An exporter's If with one branch per case: `then` squeezes axis 0, valid only when it has
// extent 1, and x here is [2, 2]. The model loads and runs the other branch; taking `then` is
// a clear error naming the node. With a constant condition that takes it, loading fails.
TEST(ControlFlowModels, AnIfBranchThatCannotInferFailsOnlyWhenTaken) {
  auto build = [](bool constant_cond) {
    auto m = model(13);
    auto* g = m.mutable_graph();
    if (constant_cond) {
      auto* c = g->add_initializer();
      c->set_name("cond");
      c->set_data_type(B);
      c->add_int32_data(1);
    } else {
      io(g->add_input(), "cond", B, {});
    }
    io(g->add_input(), "x", F, {2, 2});
    io(g->add_output(), "y", F, {-1, -1});
    GraphProto then_g, else_g;
    then_g.set_name("then");
    ints(then_g.add_initializer(), "axes", {1}, {0});
    node(&then_g, "Squeeze", {"x", "axes"}, {"t"})->set_name("squeeze_first");
    io(then_g.add_output(), "t", F, {});
    else_g.set_name("else");
    node(&else_g, "Identity", {"x"}, {"e"});
    io(else_g.add_output(), "e", F, {});
    NodeProto* n = node(g, "If", {"cond"}, {"y"});
    graph_attr(n, "then_branch", then_g);
    graph_attr(n, "else_branch", else_g);
    return m;
  };
  auto s = session(build(false));
  Tensor x = f32({2, 2}, {1, 2, 3, 4});
  auto out = s->run(std::vector<Tensor>{Tensor::scalar<bool>(false), x});
  EXPECT_EQ(values(out[0]), (std::vector<float>{1, 2, 3, 4}));
  try {
    s->run(std::vector<Tensor>{Tensor::scalar<bool>(true), x});
    ADD_FAILURE() << "the bad branch ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("squeeze_first"), std::string::npos) << e.what();
  }
  try {
    session(build(true));
    ADD_FAILURE() << "a constant condition that takes the bad branch loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("squeeze_first"), std::string::npos) << e.what();
  }
}

// y += iteration (as float); scan output = y after each iteration. M is an input, cond is an
// empty-named (absent) input.
TEST(ControlFlowModels, LoopTripCounts) {
  auto m = model(13);
  auto* g = m.mutable_graph();
  io(g->add_input(), "M", I64, {});
  io(g->add_input(), "y0", F, {1});
  io(g->add_output(), "y", F, {1});
  io(g->add_output(), "ys", F, {-1, 1});
  GraphProto body;
  body.set_name("body");
  io(body.add_input(), "i", I64, {});
  io(body.add_input(), "c_in", B, {});
  io(body.add_input(), "y_in", F, {1});
  auto* cast = node(&body, "Cast", {"i"}, {"fi"});
  int_attr(cast, "to", F);
  node(&body, "Add", {"y_in", "fi"}, {"y_out"});
  node(&body, "Identity", {"c_in"}, {"c_out"});
  node(&body, "Identity", {"y_out"}, {"scan"});
  for (const char* o : {"c_out", "y_out", "scan"}) body.add_output()->set_name(o);
  graph_attr(node(g, "Loop", {"M", "", "y0"}, {"y", "ys"}), "body", body);
  auto s = session(m);
  for (int64_t trips : {0, 1, 5}) {
    auto out = s->run(std::vector<Tensor>{Tensor::scalar<int64_t>(trips), f32({1}, {100})});
    float expect = 100;
    std::vector<float> partial;
    for (int64_t i = 0; i < trips; ++i) partial.push_back(expect += static_cast<float>(i));
    EXPECT_EQ(values(out[0]), std::vector<float>{expect}) << trips << " trips";
    EXPECT_EQ(out[1].dims(), (std::vector<int64_t>{trips, 1})) << trips << " trips";
    EXPECT_EQ(values(out[1]), partial) << trips << " trips";
  }
}

// A Loop body that cannot infer for these shapes (it squeezes axis 0 of the outer x, [2, 2]):
// with a trip count given at run time the model loads, runs zero trips, and a trip is a clear
// error naming the node; with a constant trip count of 1, loading fails naming it.
TEST(ControlFlowModels, ALoopBodyThatCannotInferFailsOnlyWhenItRuns) {
  auto build = [](bool constant_trips) {
    auto m = model(13);
    auto* g = m.mutable_graph();
    if (constant_trips) ints(g->add_initializer(), "M", {}, {1});
    else io(g->add_input(), "M", I64, {});
    io(g->add_input(), "x", F, {2, 2});
    io(g->add_output(), "y", F, {-1, -1});
    GraphProto body;
    body.set_name("body");
    io(body.add_input(), "i", I64, {});
    io(body.add_input(), "c_in", B, {});
    io(body.add_input(), "v_in", F, {});
    ints(body.add_initializer(), "axes", {1}, {0});
    node(&body, "Squeeze", {"x", "axes"}, {"sq"})->set_name("squeeze_outer");
    node(&body, "Add", {"v_in", "sq"}, {"v_out"});
    node(&body, "Identity", {"c_in"}, {"c_out"});
    for (const char* o : {"c_out", "v_out"}) body.add_output()->set_name(o);
    graph_attr(node(g, "Loop", {"M", "", "x"}, {"y"}), "body", body);
    return m;
  };
  for (int level : {0, 3}) {
    auto s = session(build(false), level);
    Tensor x = f32({2, 2}, {1, 2, 3, 4});
    auto out = s->run(std::vector<Tensor>{Tensor::scalar<int64_t>(0), x});
    EXPECT_EQ(values(out[0]), (std::vector<float>{1, 2, 3, 4}));
    try {
      s->run(std::vector<Tensor>{Tensor::scalar<int64_t>(1), x});
      ADD_FAILURE() << "the bad body ran";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("squeeze_outer"), std::string::npos) << e.what();
    }
  }
  try {
    session(build(true));
    ADD_FAILURE() << "a loop known to run its bad body loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("squeeze_outer"), std::string::npos) << e.what();
  }
}

// No M: the loop stops when the body's cond (i < 3) turns false, after 4 iterations; a value
// of the outer graph (step) is read inside the body.
TEST(ControlFlowModels, LoopEndsOnCondAndReadsOuterScope) {
  auto m = model(13);
  auto* g = m.mutable_graph();
  io(g->add_input(), "cond", B, {});
  io(g->add_input(), "step", F, {2});
  io(g->add_output(), "acc", F, {2});
  auto* init = g->add_initializer();
  floats(init, "acc0", {2}, {0, 0});
  auto* three = g->add_initializer();
  ints(three, "three", {}, {3});
  GraphProto body;
  body.set_name("body");
  io(body.add_input(), "i", I64, {});
  io(body.add_input(), "c_in", B, {});
  io(body.add_input(), "a_in", F, {2});
  node(&body, "Less", {"i", "three"}, {"c_out"});
  node(&body, "Add", {"a_in", "step"}, {"a_out"});
  for (const char* o : {"c_out", "a_out"}) body.add_output()->set_name(o);
  graph_attr(node(g, "Loop", {"", "cond", "acc0"}, {"acc"}), "body", body);
  auto s = session(m);
  auto out = s->run(std::vector<Tensor>{Tensor::scalar<bool>(true), f32({2}, {1, 0.5f})});
  EXPECT_EQ(values(out[0]), (std::vector<float>{4, 2}));
  out = s->run(std::vector<Tensor>{Tensor::scalar<bool>(false), f32({2}, {1, 0.5f})});
  EXPECT_EQ(values(out[0]), (std::vector<float>{0, 0})) << "cond false: no iteration";
}

// Scan (opset 11): running sum over axis 1, read in reverse; scan output written forward.
TEST(ControlFlowModels, ScanReverseCumulativeSum) {
  auto m = model(11);
  auto* g = m.mutable_graph();
  io(g->add_input(), "s0", F, {2});
  io(g->add_input(), "x", F, {2, 3});
  io(g->add_output(), "s", F, {2});
  io(g->add_output(), "ys", F, {3, 2});
  GraphProto body;
  body.set_name("body");
  io(body.add_input(), "s_in", F, {2});
  io(body.add_input(), "xt", F, {2});
  node(&body, "Add", {"s_in", "xt"}, {"s_out"});
  node(&body, "Identity", {"s_out"}, {"y"});
  for (const char* o : {"s_out", "y"}) body.add_output()->set_name(o);
  NodeProto* n = node(g, "Scan", {"s0", "x"}, {"s", "ys"});
  graph_attr(n, "body", body);
  int_attr(n, "num_scan_inputs", 1);
  ints_attr(n, "scan_input_axes", {-1});
  ints_attr(n, "scan_input_directions", {1});
  auto s = session(m);
  auto out = s->run(std::vector<Tensor>{f32({2}, {0, 0}), f32({2, 3}, {1, 2, 3, 4, 5, 6})});
  EXPECT_EQ(values(out[0]), (std::vector<float>{6, 15}));
  EXPECT_EQ(out[1].dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{3, 6, 5, 11, 6, 15}));
}

// ---------------------------------------------------------------- exporter habits

// Weights as hundreds of Constant nodes (old PyTorch exports, tf2onnx) instead of
// initializers.
TEST(Exporters, WeightsAsConstantNodes) {
  auto m = model(11);
  auto* g = m.mutable_graph();
  io(g->add_input(), "x", F, {2});
  io(g->add_output(), "y", F, {2});
  std::string prev = "x";
  float sum = 0;
  for (int i = 0; i < 300; ++i) {
    std::string c = "w" + std::to_string(i), o = "a" + std::to_string(i);
    float v = static_cast<float>(i % 7) * 0.5f;
    sum += v;
    constant(g, c, {2}, {v, -v});
    node(g, "Add", {prev, c}, {i == 299 ? "y" : o});
    prev = o;
  }
  auto out = session(m)->run(std::vector<Tensor>{f32({2}, {1, 1})});
  EXPECT_NEAR(out[0].as_double(0), 1 + sum, 1e-3);
  EXPECT_NEAR(out[0].as_double(1), 1 - sum, 1e-3);
}

// NHWC input with Transposes around a Conv, as tf2onnx writes them.
TEST(Exporters, NhwcTransposesAroundConv) {
  auto m = model(13);
  auto* g = m.mutable_graph();
  io(g->add_input(), "x", F, {1, 2, 2, 3});
  io(g->add_output(), "y", F, {1, 2, 2, 2});
  floats(g->add_initializer(), "w", {2, 3, 1, 1}, {1, 0, 0, 1, 2, 3});
  floats(g->add_initializer(), "b", {2}, {0.5f, -1});
  ints_attr(node(g, "Transpose", {"x"}, {"xc"}), "perm", {0, 3, 1, 2});
  node(g, "Conv", {"xc", "w", "b"}, {"yc"});
  ints_attr(node(g, "Transpose", {"yc"}, {"y"}), "perm", {0, 2, 3, 1});
  std::vector<float> x(12);
  std::iota(x.begin(), x.end(), 0.f);
  auto out = session(m)->run(std::vector<Tensor>{f32({1, 2, 2, 3}, x)});
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{1, 2, 2, 2}));
  std::vector<float> expect;
  for (int p = 0; p < 4; ++p) {
    const float* px = &x[p * 3];
    expect.push_back(px[0] + 0.5f);
    expect.push_back(px[0] + 2 * px[1] + 3 * px[2] - 1);
  }
  EXPECT_EQ(values(out[0]), expect);
}

// Graph inputs that also have an initializer are defaults: kiln treats them as constants.
// Unused initializers are ignored.
TEST(Exporters, InputsWithInitializerDefaultsAndUnusedInitializers) {
  auto m = model(9, 3);
  auto* g = m.mutable_graph();
  io(g->add_input(), "x", F, {2});
  io(g->add_input(), "bias", F, {2});
  io(g->add_output(), "y", F, {2});
  floats(g->add_initializer(), "bias", {2}, {1, 2});
  floats(g->add_initializer(), "unused", {3}, {7, 7, 7});
  node(g, "Add", {"x", "bias"}, {"y"});
  auto s = session(m);
  ASSERT_EQ(s->inputs().size(), 1u);
  EXPECT_EQ(values(s->run(std::vector<Tensor>{f32({2}, {10, 20})})[0]), (std::vector<float>{11, 22}));
}

// IR versions 3..8 and opsets 7..17 with a small model whose ops exist in all of them.
TEST(Exporters, IrVersionsAndOpsets) {
  for (int ir = 3; ir <= 8; ++ir) {
    for (int opset = 7; opset <= 17; ++opset) {
      auto m = model(opset, ir);
      auto* g = m.mutable_graph();
      io(g->add_input(), "x", F, {-1, 2});
      io(g->add_output(), "y", F, {-1, 2});
      floats(g->add_initializer(), "w", {2, 2}, {1, 2, 3, 4});
      if (ir < 4) io(g->add_input(), "w", F, {2, 2});  // IR 3: every initializer is an input too
      node(g, "MatMul", {"x", "w"}, {"m"});
      node(g, "Relu", {"m"}, {"r"});
      node(g, "Sigmoid", {"r"}, {"y"});
      auto s = session(m);
      auto out = s->run(std::vector<Tensor>{f32({1, 2}, {1, -1})});
      // [1,-1] x w = [-2, -2] -> relu 0 -> sigmoid 0.5
      EXPECT_EQ(values(out[0]), (std::vector<float>{0.5f, 0.5f})) << "ir " << ir << " opset " << opset;
    }
  }
}

// Empty names stand for absent optional inputs and unused optional outputs.
TEST(Exporters, EmptyNamedOptionalInputsAndOutputs) {
  auto m = model(13);
  auto* g = m.mutable_graph();
  io(g->add_input(), "x", F, {4});
  io(g->add_output(), "y", F, {4});
  floats(g->add_initializer(), "hi", {}, {1});
  node(g, "Clip", {"x", "", "hi"}, {"c"});  // no min
  node(g, "Dropout", {"c", "", ""}, {"y", ""});
  auto out = session(m)->run(std::vector<Tensor>{f32({4}, {-5, 0.5f, 2, 1})});
  EXPECT_EQ(values(out[0]), (std::vector<float>{-5, 0.5f, 1, 1}));
}

// A Constant read only inside an If branch, in the branch's own scope, and a branch reading
// an outer initializer.
TEST(Exporters, ConstantOnlyInsideBranchAndOuterInitializer) {
  auto m = model(11);
  auto* g = m.mutable_graph();
  io(g->add_input(), "cond", B, {});
  io(g->add_output(), "y", F, {2});
  floats(g->add_initializer(), "outer", {2}, {5, 6});
  GraphProto then_g, else_g;
  then_g.set_name("then");
  constant(&then_g, "k", {2}, {1, 2});
  node(&then_g, "Mul", {"k", "outer"}, {"t"});
  then_g.add_output()->set_name("t");
  else_g.set_name("else");
  node(&else_g, "Identity", {"outer"}, {"e"});
  else_g.add_output()->set_name("e");
  NodeProto* n = node(g, "If", {"cond"}, {"y"});
  graph_attr(n, "then_branch", then_g);
  graph_attr(n, "else_branch", else_g);
  auto s = session(m);
  EXPECT_EQ(values(s->run(std::vector<Tensor>{Tensor::scalar<bool>(true)})[0]), (std::vector<float>{5, 12}));
  EXPECT_EQ(values(s->run(std::vector<Tensor>{Tensor::scalar<bool>(false)})[0]), (std::vector<float>{5, 6}));
}

}  // namespace kiln::testing
