// The Gradient op expanded at import (frontend/onnx/expand_gradient.h): small models built as
// ONNX protos, run through a Session, their gradients checked against closed forms or against
// central differences of y computed by the same session.
#include <gtest/gtest.h>
#include <kiln/error.h>
#include <kiln/session.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <functional>
#include <map>

#include "frontend/onnx/importer.h"
#include "frontend/onnx/tensor_proto.h"

namespace kiln::testing {

namespace {

const char* const kTraining = "ai.onnx.preview.training";

class Model {
 public:
  explicit Model(int opset = 17, int elem = onnx::TensorProto::DOUBLE) : elem_(elem) {
    m_.set_ir_version(8);
    m_.add_opset_import()->set_version(opset);
    auto* t = m_.add_opset_import();
    t->set_domain(kTraining);
    t->set_version(1);
    m_.mutable_graph()->set_name("g");
  }
  // Dims as numbers or symbol names.
  Model& input(const std::string& name, std::vector<std::string> dims, int elem = -1) {
    auto* vi = m_.mutable_graph()->add_input();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem < 0 ? elem_ : elem);
    auto* shape = tt->mutable_shape();
    for (const std::string& d : dims) {
      if (std::isdigit(static_cast<unsigned char>(d[0]))) shape->add_dim()->set_dim_value(std::stoll(d));
      else shape->add_dim()->set_dim_param(d);
    }
    return *this;
  }
  Model& output(const std::string& name) {
    m_.mutable_graph()->add_output()->set_name(name);
    return *this;
  }
  Model& constant(const std::string& name, const Tensor& t) {
    onnx_fe::tensor_to_proto(t, name, m_.mutable_graph()->add_initializer());
    return *this;
  }
  onnx::NodeProto& node(const std::string& op, std::vector<std::string> ins, std::vector<std::string> outs,
                        const std::string& name = "") {
    auto* n = m_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : ins) n->add_input(i);
    for (const auto& o : outs) n->add_output(o);
    return *n;
  }
  onnx::NodeProto& gradient(std::vector<std::string> ins, std::vector<std::string> outs, std::vector<std::string> xs,
                            const std::string& y, std::vector<std::string> zs = {}, const std::string& name = "my_gradient") {
    onnx::NodeProto& n = node("Gradient", std::move(ins), std::move(outs), name);
    n.set_domain(kTraining);
    strings(n, "xs", xs);
    if (!zs.empty()) strings(n, "zs", zs);
    auto* a = n.add_attribute();
    a->set_name("y");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(y);
    return n;
  }
  std::string bytes() const {
    std::string b;
    m_.SerializeToString(&b);
    return b;
  }

  static void ints(onnx::NodeProto& n, const std::string& name, std::vector<int64_t> v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void integer(onnx::NodeProto& n, const std::string& name, int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void strings(onnx::NodeProto& n, const std::string& name, const std::vector<std::string>& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRINGS);
    for (const auto& s : v) a->add_strings(s);
  }

 private:
  onnx::ModelProto m_;
  int elem_;
};

// Deterministic values in [-1, -0.2] and [0.2, 1], away from Relu's kink and from 0.
Tensor values(std::vector<int64_t> dims, uint32_t seed, double shift = 0) {
  Tensor t(DType::Double, dims);
  uint32_t s = seed * 2654435761u + 12345;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    const double u = static_cast<double>(s >> 8) / static_cast<double>(1u << 24);
    t.data<double>()[i] = (u < 0.5 ? -1 : 1) * (0.2 + 0.8 * std::abs(2 * u - 1)) + shift;
  }
  return t;
}

double sum(const Tensor& t) {
  double s = 0;
  for (int64_t i = 0; i < t.numel(); ++i) s += t.as_double(i);
  return s;
}

// d sum(y) / d x by central differences, from the y the session computes.
Tensor numeric_gradient(const Session& s, const std::map<std::string, Tensor>& ins, const std::string& x,
                        const std::string& y) {
  const double h = 1e-5;
  Tensor g(DType::Double, ins.at(x).dims());
  for (int64_t e = 0; e < g.numel(); ++e) {
    double at[2];
    for (int side = 0; side < 2; ++side) {
      std::map<std::string, Tensor> moved = ins;
      moved[x] = ins.at(x).clone();
      moved[x].data<double>()[e] += side == 0 ? h : -h;
      at[side] = sum(s.run(moved).at(y));
    }
    g.data<double>()[e] = (at[0] - at[1]) / (2 * h);
  }
  return g;
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& what, double tol = 1e-6) {
  ASSERT_EQ(got.dims(), want.dims()) << what << ": " << got.describe() << " vs " << want.describe();
  for (int64_t i = 0; i < want.numel(); ++i)
    EXPECT_NEAR(got.as_double(i), want.as_double(i), tol * std::max(1.0, std::abs(want.as_double(i))))
        << what << " element " << i;
}

// Each "d_<x>" output of the model against central differences of y.
void check_numerically(const std::string& model, const std::map<std::string, Tensor>& ins,
                       const std::vector<std::string>& xs, const std::string& y) {
  auto s = Session::create_from_bytes(model);
  auto out = s->run(ins);
  for (const std::string& x : xs) expect_close(out.at("d_" + x), numeric_gradient(*s, ins, x, y), "d_" + x);
}

std::vector<std::string> d(const std::vector<std::string>& xs) {
  std::vector<std::string> out;
  for (const auto& x : xs) out.push_back("d_" + x);
  return out;
}

std::string error_of(const std::string& model) {
  try {
    Session::create_from_bytes(model);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(ExpandGradient, ScalarAddAndMulBecomePlainOps) {
  // The ONNX backend test: d = (a + b) * a, dd/da = 2a + b, dd/db = a.
  Model m(12, onnx::TensorProto::FLOAT);
  m.input("a", {}).input("b", {}).output("d").output("dd_da").output("dd_db");
  m.node("Add", {"a", "b"}, {"c"}, "my_add");
  m.node("Mul", {"c", "a"}, {"d"}, "my_mul");
  m.gradient({"a", "b"}, {"dd_da", "dd_db"}, {"a", "b"}, "d");
  auto g = onnx_fe::load_model_bytes(m.bytes(), ".");
  for (const ir::Node* n : g->nodes()) EXPECT_NE(n->op_type(), "Gradient");
  ASSERT_EQ(g->outputs().size(), 3u);
  EXPECT_EQ(g->outputs()[1]->name(), "dd_da");
  EXPECT_FALSE(g->outputs()[1]->type.rank_known);  // types inferred for the expansion are not kept
  EXPECT_EQ(g->find_value("c")->producer()->name(), "my_add");  // the forward pass stays

  auto s = Session::create_from_bytes(m.bytes());
  auto out = s->run({{"a", Tensor::scalar<float>(1.5f)}, {"b", Tensor::scalar<float>(-2.f)}});
  EXPECT_FLOAT_EQ(out.at("d").data<float>()[0], -0.75f);
  EXPECT_FLOAT_EQ(out.at("dd_da").data<float>()[0], 1.f);
  EXPECT_FLOAT_EQ(out.at("dd_db").data<float>()[0], 1.5f);
  EXPECT_EQ(s->outputs()[1].str(), "float[]");
}

// Add, Sub, Mul, Div over [3,1], [1,4], [4] and a scalar: each gradient sums over the axes its
// operand was stretched along. Opset 12 takes the axes of the ReduceSums it makes as an
// attribute, 17 as an input.
TEST(ExpandGradient, BroadcastOperandsSumBackToTheirShape) {
  for (int opset : {12, 17}) {
    SCOPED_TRACE("opset " + std::to_string(opset));
    Model m(opset);
    m.input("a", {"3", "1"}).input("b", {"1", "4"}).input("w", {"4"}).input("s", {}).input("q", {"3", "1"});
    m.output("y");
    for (const auto& o : d({"a", "b", "w", "s", "q"})) m.output(o);
    m.node("Add", {"a", "b"}, {"c"});
    m.node("Sub", {"c", "w"}, {"e"});
    m.node("Mul", {"e", "s"}, {"f"});
    m.node("Div", {"f", "q"}, {"h"});
    m.node("Mul", {"h", "h"}, {"hh"});
    Model::integer(m.node("ReduceSum", {"hh"}, {"y"}), "keepdims", 0);
    m.gradient({"a", "b", "w", "s", "q"}, d({"a", "b", "w", "s", "q"}), {"a", "b", "w", "s", "q"}, "y");
    check_numerically(m.bytes(),
                      {{"a", values({3, 1}, 1)}, {"b", values({1, 4}, 2)}, {"w", values({4}, 3)},
                       {"s", values({}, 4)}, {"q", values({3, 1}, 5, 2)}},
                      {"a", "b", "w", "s", "q"}, "y");
  }
}

// y = A·B is not a scalar: its seed is ones, so dA = 1·Bᵀ and dB = Aᵀ·1.
TEST(ExpandGradient, MatMulClosedForm) {
  Model m(17, onnx::TensorProto::FLOAT);
  m.input("A", {"2", "3"}).input("B", {"3", "5"}).output("Y").output("d_A").output("d_B");
  m.node("MatMul", {"A", "B"}, {"Y"});
  m.gradient({"A", "B"}, {"d_A", "d_B"}, {"A", "B"}, "Y");
  Tensor a(DType::Float, {2, 3}), b(DType::Float, {3, 5});
  for (int i = 0; i < 6; ++i) a.data<float>()[i] = static_cast<float>(i) - 2.5f;
  for (int i = 0; i < 15; ++i) b.data<float>()[i] = 0.5f * static_cast<float>(i % 7) - 1;
  auto out = Session::create_from_bytes(m.bytes())->run({{"A", a}, {"B", b}});
  Tensor da(DType::Float, {2, 3}), db(DType::Float, {3, 5});
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 3; ++k)
      for (int j = 0; j < 5; ++j) {
        da.data<float>()[i * 3 + k] += b.data<float>()[k * 5 + j];
        db.data<float>()[k * 5 + j] += a.data<float>()[i * 3 + k];
      }
  expect_close(out.at("d_A"), da, "d_A");
  expect_close(out.at("d_B"), db, "d_B");
}

// Batch axes broadcast both ways, and 1-D operands on either side.
TEST(ExpandGradient, MatMulBatchedAndVectors) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{4, 1, 2, 3}, {5, 3, 6}}, {{3}, {2, 3, 5}}, {{2, 2, 3}, {3}}, {{3}, {3}}, {{2, 3}, {3, 5}}};
  for (const auto& [sa, sb] : shapes) {
    auto str = [](const std::vector<int64_t>& s) {
      std::vector<std::string> out;
      for (int64_t x : s) out.push_back(std::to_string(x));
      return out;
    };
    SCOPED_TRACE(Tensor(DType::Float, sa).describe() + " x " + Tensor(DType::Float, sb).describe());
    Model m;
    m.input("A", str(sa)).input("B", str(sb)).output("y").output("d_A").output("d_B");
    m.node("MatMul", {"A", "B"}, {"p"});
    m.node("Tanh", {"p"}, {"y"});
    m.gradient({"A", "B"}, {"d_A", "d_B"}, {"A", "B"}, "y");
    check_numerically(m.bytes(), {{"A", values(sa, 6)}, {"B", values(sb, 7)}}, {"A", "B"}, "y");
  }
}

// y = ReduceSum(Tanh(x * w), axes 1, keepdims 0): dx = (1 - tanh(xw)^2) w, dw summed over
// the axes x has and w lacks.
TEST(ExpandGradient, ChainOfMulTanhReduceSum) {
  Model m;
  m.input("x", {"2", "3", "5"}).input("w", {"5"});
  m.output("y").output("d_x").output("d_w");
  m.node("Mul", {"x", "w"}, {"p"});
  m.node("Tanh", {"p"}, {"t"});
  Model::integer(m.node("ReduceSum", {"t", "axes1"}, {"y"}), "keepdims", 0);
  m.constant("axes1", Tensor::from_vector<int64_t>({1}, {1}));
  m.gradient({"x", "w"}, {"d_x", "d_w"}, {"x", "w"}, "y");
  const Tensor x = values({2, 3, 5}, 8), w = values({5}, 9);
  auto s = Session::create_from_bytes(m.bytes());
  std::map<std::string, Tensor> ins{{"x", x}, {"w", w}};
  auto out = s->run(ins);
  EXPECT_EQ(out.at("y").dims(), (std::vector<int64_t>{2, 5}));
  Tensor dx(DType::Double, {2, 3, 5}), dw(DType::Double, {5});
  for (int64_t i = 0; i < 30; ++i) {
    const double wi = w.data<double>()[i % 5], t = std::tanh(x.data<double>()[i] * wi);
    dx.data<double>()[i] = (1 - t * t) * wi;
    dw.data<double>()[i % 5] += (1 - t * t) * x.data<double>()[i];
  }
  expect_close(out.at("d_x"), dx, "d_x");
  expect_close(out.at("d_w"), dw, "d_w");
  expect_close(out.at("d_w"), numeric_gradient(*s, ins, "w", "y"), "d_w numerically");
}

TEST(ExpandGradient, UnaryOpsAndPow) {
  Model m;
  m.input("x", {"3", "2"}).input("e", {"2"}).output("y").output("d_x").output("d_e");
  m.constant("three", Tensor::scalar<double>(3));
  m.node("Identity", {"x"}, {"x0"});
  m.node("Relu", {"x0"}, {"r"});
  m.node("Neg", {"x0"}, {"n"});
  m.node("Sigmoid", {"n"}, {"sg"});
  m.node("Exp", {"sg"}, {"ex"});
  m.node("Sqrt", {"ex"}, {"sq"});
  m.node("Log", {"sq"}, {"lg"});
  m.node("Pow", {"x0", "three"}, {"cube"});  // a constant exponent
  m.node("Pow", {"sq", "e"}, {"pe"});        // an exponent y depends on
  m.node("Add", {"r", "lg"}, {"s1"});
  m.node("Add", {"s1", "cube"}, {"s2"});
  m.node("Mul", {"s2", "pe"}, {"s3"});
  m.node("ReduceSum", {"s3"}, {"y"});
  m.gradient({"x", "e"}, {"d_x", "d_e"}, {"x", "e"}, "y");
  check_numerically(m.bytes(), {{"x", values({3, 2}, 10)}, {"e", values({2}, 11)}}, {"x", "e"}, "y");
}

// Cast to double and back to the float x, Expand from [3,1] to [2,3,4], Unsqueeze and Squeeze:
// y = sum(expand(x) * w), so dx[i] = the sum of w over the elements x[i] was copied to.
TEST(ExpandGradient, CastExpandAndViews) {
  Model m(17, onnx::TensorProto::FLOAT);
  m.input("x", {"3", "1"}).input("w", {"2", "3", "4"}, onnx::TensorProto::DOUBLE).output("y").output("d_x");
  Model::integer(m.node("Cast", {"x"}, {"xd"}), "to", onnx::TensorProto::DOUBLE);
  m.constant("shape", Tensor::from_vector<int64_t>({3}, {2, 3, 4}));
  m.constant("zero", Tensor::from_vector<int64_t>({1}, {0}));
  m.node("Expand", {"xd", "shape"}, {"e"});
  m.node("Unsqueeze", {"e", "zero"}, {"u"});
  m.node("Squeeze", {"u", "zero"}, {"sq"});
  m.node("Mul", {"sq", "w"}, {"p"});
  m.node("ReduceSum", {"p"}, {"y"});
  m.gradient({"x"}, {"d_x"}, {"x"}, "y");
  const Tensor w = values({2, 3, 4}, 26);
  auto out = Session::create_from_bytes(m.bytes())->run({{"x", Tensor::from_vector<float>({3, 1}, {1, 2, 3})}, {"w", w}});
  Tensor dx(DType::Float, {3, 1});
  for (int64_t i = 0; i < 24; ++i) dx.data<float>()[(i / 4) % 3] += static_cast<float>(w.data<double>()[i]);
  EXPECT_EQ(out.at("d_x").dtype(), DType::Float);
  expect_close(out.at("d_x"), dx, "d_x", 1e-5);
}

// Transpose, ReduceMean (axes as an input at opset 18, keepdims 0), Reshape, Flatten.
TEST(ExpandGradient, ReduceMeanAndViews) {
  for (int opset : {13, 18}) {
    SCOPED_TRACE("opset " + std::to_string(opset));
    Model m(opset);
    m.input("x", {"2", "3", "4"}).output("y").output("d_x");
    Model::ints(m.node("Transpose", {"x"}, {"t"}), "perm", {2, 0, 1});
    auto& mean = m.node("ReduceMean", opset >= 18 ? std::vector<std::string>{"t", "ax"} : std::vector<std::string>{"t"},
                        {"mn"});
    Model::integer(mean, "keepdims", 0);
    if (opset >= 18) m.constant("ax", Tensor::from_vector<int64_t>({1}, {-1}));
    else Model::ints(mean, "axes", {-1});
    m.constant("shape", Tensor::from_vector<int64_t>({2}, {2, 4}));
    m.node("Reshape", {"mn", "shape"}, {"rs"});
    m.node("Transpose", {"rs"}, {"rt"});  // no perm: reversed
    m.node("Flatten", {"rt"}, {"fl"});
    m.node("Mul", {"fl", "fl"}, {"sqr"});
    m.node("ReduceMean", {"sqr"}, {"y"});
    m.gradient({"x"}, {"d_x"}, {"x"}, "y");
    check_numerically(m.bytes(), {{"x", values({2, 3, 4}, 12)}}, {"x"}, "y");
  }
}

// A symbolic batch shared by both operands needs no run-time shape work; dims that may or may
// not be 1 ([n] * [m]) are resolved at run time, which needs ReduceSum's axes as an input.
TEST(ExpandGradient, SymbolicDims) {
  {
    Model m;
    m.input("x", {"batch", "3"}).input("b", {"3"}).output("y").output("d_x").output("d_b");
    m.node("Add", {"x", "b"}, {"s"});
    m.node("Mul", {"s", "s"}, {"y"});
    m.gradient({"x", "b"}, {"d_x", "d_b"}, {"x", "b"}, "y");
    for (int64_t batch : {1, 2, 5}) check_numerically(m.bytes(), {{"x", values({batch, 3}, 13)}, {"b", values({3}, 14)}}, {"x", "b"}, "y");
  }
  for (int opset : {12, 17}) {
    Model m(opset);
    m.input("p", {"n"}).input("q", {"m"}).output("y").output("d_p").output("d_q");
    m.node("Mul", {"p", "q"}, {"y"}, "prod");
    m.gradient({"p", "q"}, {"d_p", "d_q"}, {"p", "q"}, "y");
    if (opset == 12) {
      const std::string msg = error_of(m.bytes());
      EXPECT_NE(msg.find("Gradient 'my_gradient': node 'prod' (Mul): the axes 'p' double[n] was broadcast along to double["),
                std::string::npos)
          << msg;
      EXPECT_NE(msg.find("are only known at run time; that needs opset 13 or later"), std::string::npos) << msg;
      continue;
    }
    for (auto [n, k] : {std::pair<int64_t, int64_t>{3, 1}, {1, 4}, {3, 3}})
      check_numerically(m.bytes(), {{"p", values({n}, 15)}, {"q", values({k}, 16)}}, {"p", "q"}, "y");
  }
}

// The inputs give the values xs and zs take: here h, an intermediate, at h1 and z at 2z.
// The forward pass computes y as before.
TEST(ExpandGradient, InputsOtherThanTheNamedTensors) {
  Model m;
  m.input("a", {"3"}).input("z", {"3"}).input("h1", {"3"}).output("y").output("d_h");
  m.node("Mul", {"a", "a"}, {"h"});
  m.node("Tanh", {"h"}, {"t"});
  m.node("Mul", {"t", "z"}, {"tz"});
  m.node("ReduceSum", {"tz"}, {"y"});
  m.node("Add", {"z", "z"}, {"z2"});
  m.gradient({"h1", "z2"}, {"d_h"}, {"h"}, "y", {"z"});
  const Tensor a = values({3}, 17), z = values({3}, 18), h1 = values({3}, 19);
  auto out = Session::create_from_bytes(m.bytes())->run({{"a", a}, {"z", z}, {"h1", h1}});
  Tensor y(DType::Double, {1}), dh(DType::Double, {3});  // ReduceSum keeps its axis
  for (int i = 0; i < 3; ++i) {
    const double av = a.data<double>()[i], zv = z.data<double>()[i], t1 = std::tanh(h1.data<double>()[i]);
    y.data<double>()[0] += std::tanh(av * av) * zv;
    dh.data<double>()[i] = (1 - t1 * t1) * 2 * zv;
  }
  expect_close(out.at("y"), y, "y");
  expect_close(out.at("d_h"), dh, "d_h");
}

// zs are held fixed; an x y does not depend on gets zeros of its shape.
TEST(ExpandGradient, ZsAndAnXThatYDoesNotDependOn) {
  Model m;
  m.input("a", {"2", "3"}).input("b", {"2", "3"}).input("c", {"batch"}).output("y").output("d_a").output("d_c");
  m.node("Mul", {"a", "b"}, {"ab"});
  m.node("ReduceSum", {"ab"}, {"y"});
  m.gradient({"a", "c", "b"}, {"d_a", "d_c"}, {"a", "c"}, "y", {"b"});
  const Tensor a = values({2, 3}, 20), b = values({2, 3}, 21);
  auto out = Session::create_from_bytes(m.bytes())->run({{"a", a}, {"b", b}, {"c", values({4}, 22)}});
  expect_close(out.at("d_a"), b, "d_a");
  expect_close(out.at("d_c"), Tensor(DType::Double, {4}), "d_c");
}

// A second Gradient differentiates the first one's output: d2(x^3)/dx2 = 6x. It comes first
// in the file; the expansion waits for the one it depends on.
TEST(ExpandGradient, SecondOrder) {
  Model m;
  m.input("x", {"4"}).output("y").output("d_x").output("dd_x");
  m.constant("three", Tensor::scalar<double>(3));
  m.gradient({"x"}, {"dd_x"}, {"x"}, "d_x", {}, "second");
  m.node("Pow", {"x", "three"}, {"cube"});
  m.node("ReduceSum", {"cube"}, {"y"});
  m.gradient({"x"}, {"d_x"}, {"x"}, "y", {}, "first");
  const Tensor x = values({4}, 23);
  auto out = Session::create_from_bytes(m.bytes())->run({{"x", x}});
  Tensor dx(DType::Double, {4}), ddx(DType::Double, {4});
  for (int i = 0; i < 4; ++i) {
    const double v = x.data<double>()[i];
    dx.data<double>()[i] = 3 * v * v;
    ddx.data<double>()[i] = 6 * v;
  }
  expect_close(out.at("d_x"), dx, "d_x");
  expect_close(out.at("dd_x"), ddx, "dd_x");
}

// A Gradient inside an If branch, differentiating with respect to a value of the outer graph.
TEST(ExpandGradient, InsideASubgraph) {
  Model m;
  m.input("c", {}, onnx::TensorProto::BOOL).input("x", {"3"}).output("out");
  onnx::NodeProto& branch = m.node("If", {"c"}, {"out"}, "if");
  auto body = [&](const char* name, std::function<void(onnx::GraphProto&)> fill) {
    auto* a = branch.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::GRAPH);
    a->mutable_g()->set_name(name);
    fill(*a->mutable_g());
  };
  body("then_branch", [](onnx::GraphProto& g) {
    auto add = [&](const std::string& op, std::vector<std::string> ins, std::string out) {
      auto* n = g.add_node();
      n->set_op_type(op);
      for (const auto& i : ins) n->add_input(i);
      n->add_output(out);
      return n;
    };
    add("Mul", {"x", "x"}, "xx");
    Model::integer(*add("ReduceSum", {"xx"}, "s"), "keepdims", 0);
    auto* grad = add("Gradient", {"x"}, "gx");
    grad->set_name("inner");
    grad->set_domain(kTraining);
    Model::strings(*grad, "xs", {"x"});
    auto* y = grad->add_attribute();
    y->set_name("y");
    y->set_type(onnx::AttributeProto::STRING);
    y->set_s("s");
    g.add_output()->set_name("gx");
  });
  body("else_branch", [](onnx::GraphProto& g) {
    auto* n = g.add_node();
    n->set_op_type("Identity");
    n->add_input("x");
    n->add_output("ex");
    g.add_output()->set_name("ex");
  });
  auto s = Session::create_from_bytes(m.bytes());
  const Tensor x = values({3}, 25);
  Tensor twice(DType::Double, {3});
  for (int i = 0; i < 3; ++i) twice.data<double>()[i] = 2 * x.data<double>()[i];
  expect_close(s->run({{"c", Tensor::scalar<bool>(true)}, {"x", x}}).at("out"), twice, "then");
  expect_close(s->run({{"c", Tensor::scalar<bool>(false)}, {"x", x}}).at("out"), x, "else");
}

// Shape(x) depends on x but is an integer: it carries no gradient, needs no rule, and the
// Reshape's shape input is not one gradients flow to.
TEST(ExpandGradient, IntegerResultsCarryNoGradient) {
  Model m;
  m.input("x", {"2", "3"}).output("y").output("d_x");
  m.node("Mul", {"x", "x"}, {"xx"});
  m.node("Shape", {"x"}, {"shape"});
  m.node("Reshape", {"xx", "shape"}, {"r"});
  m.node("ReduceSum", {"r"}, {"y"});
  m.gradient({"x"}, {"d_x"}, {"x"}, "y");
  check_numerically(m.bytes(), {{"x", values({2, 3}, 24)}}, {"x"}, "y");
}

TEST(ExpandGradient, NoRuleOnThePathIsNamed) {
  Model m;
  m.input("a", {"3"}).output("d").output("d_a");
  m.node("Softmax", {"a"}, {"c"}, "bar");
  m.node("ReduceSum", {"c"}, {"d"});
  m.gradient({"a"}, {"d_a"}, {"a"}, "d");
  const std::string msg = error_of(m.bytes());
  EXPECT_NE(msg.find("Gradient 'my_gradient': no gradient rule for op 'Softmax' (node 'bar') on the path from 'a' to 'd'"),
            std::string::npos)
      << msg;
}

// What a rule cannot do names the forward node after the Gradient.
TEST(ExpandGradient, RuleLimitsNameTheForwardNode) {
  Model m;
  m.input("a", {"2", "3"}).input("axes", {"1"}, onnx::TensorProto::INT64).output("y").output("d_a");
  m.node("ReduceSum", {"a", "axes"}, {"y"}, "rs");
  m.gradient({"a"}, {"d_a"}, {"a"}, "y");
  const std::string msg = error_of(m.bytes());
  EXPECT_NE(msg.find("Gradient 'my_gradient': node 'rs' (ReduceSum): its axes 'axes' are only known at run time"),
            std::string::npos)
      << msg;
}

TEST(ExpandGradient, BadGradientNodes) {
  auto base = [] {
    Model m;
    m.input("a", {"3"}).input("i", {"3"}, onnx::TensorProto::INT64).output("y").output("d_a");
    m.node("ReduceSum", {"a"}, {"y"});
    return m;
  };
  struct Case {
    std::vector<std::string> ins, xs, zs;
    std::string y, want;
  };
  const std::vector<Case> cases = {
      {{"a"}, {"q"}, {}, "y", "Gradient 'my_gradient': xs names 'q', which no node, initializer or graph input produces"},
      {{"a"}, {"a"}, {}, "nope", "Gradient 'my_gradient': y names 'nope', which no node, initializer or graph input produces"},
      {{"a", "a"}, {"a"}, {}, "y", "Gradient 'my_gradient': has 2 inputs for the 1 tensors xs and zs name"},
      {{"i"}, {"i"}, {}, "y", "Gradient 'my_gradient': x 'i' is int64[3], not a floating-point tensor"},
      {{"a", "a"}, {"a"}, {"a"}, "y", "Gradient 'my_gradient': 'a' is named twice in xs and zs"},
      {{"a"}, {"a"}, {}, "i", "Gradient 'my_gradient': y 'i' is int64[3], not a floating-point tensor"},
  };
  for (const Case& c : cases) {
    Model m = base();
    m.gradient(c.ins, {"d_a"}, c.xs, c.y, c.zs);
    const std::string msg = error_of(m.bytes());
    EXPECT_NE(msg.find(c.want), std::string::npos) << msg;
  }
  // y reads the gradient it asks for.
  Model m;
  m.input("a", {"3"}).output("y").output("d_a");
  m.node("Mul", {"a", "d_a"}, {"p"});
  m.node("ReduceSum", {"p"}, {"y"});
  m.gradient({"a"}, {"d_a"}, {"a"}, "y");
  const std::string msg = error_of(m.bytes());
  EXPECT_NE(msg.find("Gradient 'my_gradient': y 'y' depends on this Gradient's own outputs"), std::string::npos) << msg;
}

}  // namespace kiln::testing
