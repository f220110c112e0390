#include <gtest/gtest.h>
#include <kiln/session.h>
#include <onnx/onnx_pb.h>

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
