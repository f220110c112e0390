#include <gtest/gtest.h>
#include <kiln/session.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kiln::testing {

namespace {
// y = Relu(a + b), with a: float[batch, 3] and b: float[batch, 3].
std::string add_relu_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  for (std::string name : {"a", "b"}) {
    auto* vi = g->add_input();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_param("batch");
    tt->mutable_shape()->add_dim()->set_dim_value(3);
  }
  g->add_output()->set_name("y");
  auto* add = g->add_node();
  add->set_op_type("Add");
  add->set_name("add");
  add->add_input("a");
  add->add_input("b");
  add->add_output("sum");
  auto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->set_name("relu");
  relu->add_input("sum");
  relu->add_output("y");
  std::string bytes;
  m.SerializeToString(&bytes);
  return bytes;
}
}  // namespace

TEST(Session, NamedInputsOutputsAndSymbolicShapes) {
  auto s = Session::create_from_bytes(add_relu_model());
  ASSERT_EQ(s->inputs().size(), 2u);
  EXPECT_EQ(s->inputs()[0].str(), "float[batch,3]");
  EXPECT_EQ(s->outputs()[0].str(), "float[batch,3]");
  for (int64_t batch : {1, 2, 5}) {
    Tensor a(DType::Float, {batch, 3}), b(DType::Float, {batch, 3});
    for (int64_t i = 0; i < a.numel(); ++i) {
      a.data<float>()[i] = static_cast<float>(i) - 4;
      b.data<float>()[i] = 1;
    }
    auto out = s->run({{"a", a}, {"b", b}});
    const Tensor& y = out.at("y");
    ASSERT_EQ(y.dims(), (std::vector<int64_t>{batch, 3}));
    for (int64_t i = 0; i < y.numel(); ++i) EXPECT_EQ(y.data<float>()[i], std::max(0.f, static_cast<float>(i) - 3));
  }
}

TEST(Session, KeepReturnsIntermediates) {
  SessionOptions opts;
  opts.keep = {"sum"};
  auto s = Session::create_from_bytes(add_relu_model(), opts);
  Tensor a = Tensor::from_vector<float>({1, 3}, {-5, 0, 5});
  Tensor b = Tensor::from_vector<float>({1, 3}, {1, 1, 1});
  auto out = s->run({{"a", a}, {"b", b}});
  EXPECT_EQ(out.at("sum").data<float>()[0], -4.f);
  EXPECT_EQ(out.at("y").data<float>()[0], 0.f);
}

TEST(Session, ContradictingSymbolIsAnError) {
  auto s = Session::create_from_bytes(add_relu_model());
  try {
    s->run({{"a", Tensor(DType::Float, {2, 3})}, {"b", Tensor(DType::Float, {3, 3})}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 'b': dim 0 ('batch') is 3 but input 'a' binds 'batch' to 2"),
              std::string::npos)
        << e.what();
  }
}

TEST(Session, MissingAndUnknownInputs) {
  auto s = Session::create_from_bytes(add_relu_model());
  EXPECT_THROW(s->run({{"a", Tensor(DType::Float, {1, 3})}}), Error);
  EXPECT_THROW(s->run({{"a", Tensor(DType::Float, {1, 3})}, {"b", Tensor(DType::Float, {1, 3})}, {"c", Tensor(DType::Float, {1})}}),
               Error);
  EXPECT_THROW(s->run({{"a", Tensor(DType::Float, {1, 3, 1})}, {"b", Tensor(DType::Float, {1, 3})}}), Error);
}

TEST(Session, RunIntoCallerBuffers) {
  auto s = Session::create_from_bytes(add_relu_model());
  std::vector<float> mine(3, -1.f);
  std::vector<Tensor> outs = {Tensor::wrap(DType::Float, {1, 3}, mine.data())};
  s->run_into({Tensor::from_vector<float>({1, 3}, {-5, 0, 5}), Tensor::from_vector<float>({1, 3}, {1, 1, 1})}, outs);
  EXPECT_EQ(mine, (std::vector<float>{0, 1, 6}));
  std::vector<Tensor> wrong = {Tensor(DType::Float, {2, 3})};
  EXPECT_THROW(s->run_into({Tensor(DType::Float, {1, 3}), Tensor(DType::Float, {1, 3})}, wrong), Error);
}

TEST(Session, UnknownKeepNameIsAnError) {
  SessionOptions opts;
  opts.keep = {"nope"};
  EXPECT_THROW(Session::create_from_bytes(add_relu_model(), opts), Error);
}

}  // namespace kiln::testing

namespace kiln::testing {
namespace {
// r = Relu(x); v = Reshape(r, [3, 4]), a view the plan makes of r's buffer; y = v . W (W = 0..7
// as [4, 2]); z = -Flatten(v, axis 0).
std::string reshape_view_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  auto* vi = g->add_input();
  vi->set_name("x");
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_value(2);
  tt->mutable_shape()->add_dim()->set_dim_value(6);
  auto* shape = g->add_initializer();
  shape->set_name("s34");
  shape->set_data_type(onnx::TensorProto::INT64);
  shape->add_dims(2);
  shape->add_int64_data(3);
  shape->add_int64_data(4);
  auto* w = g->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->add_dims(2);
  for (int i = 0; i < 8; ++i) w->add_float_data(static_cast<float>(i));
  auto node = [&](const std::string& op, std::vector<std::string> in, const std::string& out) {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(out);
    for (const auto& i : in) n->add_input(i);
    n->add_output(out);
    return n;
  };
  node("Relu", {"x"}, "r");
  node("Reshape", {"r", "s34"}, "v");
  node("MatMul", {"v", "W"}, "y");
  auto* flatten = node("Flatten", {"v"}, "f");
  auto* axis = flatten->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  node("Neg", {"f"}, "z");
  for (const char* o : {"y", "z"}) g->add_output()->set_name(o);
  std::string bytes;
  m.SerializeToString(&bytes);
  return bytes;
}
}  // namespace

namespace {
// The outputs of reshape_view_model for input x.
void expect_reshape_view_outputs(const Tensor& x, const std::map<std::string, Tensor>& out) {
  ASSERT_EQ(out.at("y").dims(), (std::vector<int64_t>{3, 2}));
  ASSERT_EQ(out.at("z").dims(), (std::vector<int64_t>{1, 12}));
  auto v = [&](int64_t i) { return std::max(0.f, x.data<float>()[i]); };
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(out.at("z").data<float>()[i], -v(i));
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t c = 0; c < 2; ++c) {
      float e = 0;
      for (int64_t k = 0; k < 4; ++k) e += v(r * 4 + k) * static_cast<float>(k * 2 + c);
      EXPECT_NEAR(out.at("y").data<float>()[r * 2 + c], e, 1e-5f) << r << "," << c;
    }
}
}  // namespace

// A Reshape the plan makes a view of its input runs as that view (not the reference kernel):
// the ops after it read the input's values in the new dims.
TEST(Session, ReshapeViewsKeepTheirValues) {
  for (int threads : {1, 2}) {
    SessionOptions opts;
    opts.threads = threads;
    auto s = Session::create_from_bytes(reshape_view_model(), opts);
    Tensor x(DType::Float, {2, 6});
    for (int64_t i = 0; i < 12; ++i) x.data<float>()[i] = static_cast<float>(i) - 5.5f;
    const std::map<std::string, Tensor> out = s->run({{"x", x}});
    expect_reshape_view_outputs(x, out);
  }
}

// The arena keeps its values between runs (program_executor.h): a run with new inputs computes
// from them, not from the last run's, and the outputs an earlier run returned stay as they were.
TEST(Session, RunsWithNewInputsLeaveEarlierOutputsAlone) {
  for (int threads : {1, 2}) {
    SessionOptions opts;
    opts.threads = threads;
    auto s = Session::create_from_bytes(reshape_view_model(), opts);
    std::vector<Tensor> xs;
    std::vector<std::map<std::string, Tensor>> outs;
    for (int run = 0; run < 3; ++run) {
      Tensor x(DType::Float, {2, 6});
      for (int64_t i = 0; i < 12; ++i) x.data<float>()[i] = static_cast<float>((i * (run + 2)) % 7) - 2.5f * run;
      outs.push_back(s->run({{"x", x}}));
      xs.push_back(x);
    }
    for (size_t run = 0; run < xs.size(); ++run) expect_reshape_view_outputs(xs[run], outs[run]);
  }
}

}  // namespace kiln::testing
