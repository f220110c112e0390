#include <kiln/error.h>

#include <cmath>
#include <limits>
#include <optional>

#include "op_test_util.h"
#include "ops/core/activation.h"

namespace kiln::testing {

namespace {
template <typename T>
Tensor V(std::vector<int64_t> dims, std::vector<T> v) { return Tensor::from_vector<T>(std::move(dims), v); }

ir::Attributes F(std::initializer_list<std::pair<const char*, float>> kv) {
  ir::Attributes a;
  for (auto& [k, v] : kv) a[k] = ir::Attribute::of_float(v);
  return a;
}

// Applies f to every element of x (float), for expected values.
template <typename Fn>
Tensor map(const Tensor& x, Fn f) {
  Tensor o(DType::Float, x.dims());
  for (int64_t i = 0; i < x.numel(); ++i) o.data<float>()[i] = static_cast<float>(f(static_cast<double>(x.data<float>()[i])));
  return o;
}
}  // namespace

TEST(Relu, FloatAndInt) {
  expect_near(run_op({.op = "Relu", .inputs = {V<float>({4}, {-1, 0, 2, -0.5f})}})[0], V<float>({4}, {0, 0, 2, 0}));
  auto out = run_op({.op = "Relu", .inputs = {V<int8_t>({3}, {-5, 0, 7})}});
  EXPECT_EQ(out[0].data<int8_t>()[0], 0);
  EXPECT_EQ(out[0].data<int8_t>()[2], 7);
}

TEST(Activation, Formulas) {
  Tensor x = random_float({3, 5, 7}, -4, 4, 7);
  expect_near(run_op({.op = "LeakyRelu", .inputs = {x}, .attrs = F({{"alpha", 0.1f}})})[0],
              map(x, [](double v) { return v < 0 ? 0.1f * v : v; }));
  expect_near(run_op({.op = "Elu", .inputs = {x}})[0], map(x, [](double v) { return v < 0 ? std::exp(v) - 1 : v; }));
  expect_near(run_op({.op = "Selu", .inputs = {x}})[0], map(x, [](double v) {
                return 1.0507009873554805 * (v > 0 ? v : 1.6732632423543772 * (std::exp(v) - 1));
              }));
  expect_near(run_op({.op = "Celu", .inputs = {x}, .attrs = F({{"alpha", 2.f}})})[0],
              map(x, [](double v) { return std::max(0.0, v) + std::min(0.0, 2 * (std::exp(v / 2) - 1)); }));
  expect_near(run_op({.op = "Sigmoid", .inputs = {x}})[0], map(x, [](double v) { return 1 / (1 + std::exp(-v)); }));
  expect_near(run_op({.op = "HardSigmoid", .inputs = {x}})[0],
              map(x, [](double v) { return std::clamp(0.2 * v + 0.5, 0.0, 1.0); }));
  expect_near(run_op({.op = "HardSwish", .inputs = {x}})[0],
              map(x, [](double v) { return v * std::clamp(v / 6 + 0.5, 0.0, 1.0); }));
  expect_near(run_op({.op = "Tanh", .inputs = {x}})[0], map(x, [](double v) { return std::tanh(v); }));
  expect_near(run_op({.op = "Softplus", .inputs = {x}})[0], map(x, [](double v) { return std::log(1 + std::exp(v)); }));
  expect_near(run_op({.op = "Softsign", .inputs = {x}})[0], map(x, [](double v) { return v / (1 + std::fabs(v)); }));
  expect_near(run_op({.op = "ThresholdedRelu", .inputs = {x}, .attrs = F({{"alpha", 2.f}})})[0],
              map(x, [](double v) { return v > 2 ? v : 0; }));
  expect_near(run_op({.op = "Mish", .inputs = {x}, .opset = 18})[0],
              map(x, [](double v) { return v * std::tanh(std::log(1 + std::exp(v))); }));
  expect_near(run_op({.op = "Swish", .inputs = {x}, .opset = 24})[0], map(x, [](double v) { return v / (1 + std::exp(-v)); }));
  expect_near(run_op({.op = "Swish", .inputs = {x}, .attrs = F({{"alpha", 1.7f}}), .opset = 24})[0],
              map(x, [](double v) { return v / (1 + std::exp(-1.7 * v)); }));
  expect_near(run_op({.op = "Gelu", .inputs = {x}})[0],
              map(x, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }));
  ir::Attributes tanh_attr = {{"approximate", ir::Attribute::of_string("tanh")}};
  expect_near(run_op({.op = "Gelu", .inputs = {x}, .attrs = tanh_attr})[0], map(x, [](double v) {
                return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
              }));
  expect_near(run_op({.op = "Gelu", .inputs = {x}, .domain = "com.microsoft"})[0],
              map(x, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }));
}

TEST(Activation, LargeInputsDoNotOverflow) {
  auto x = V<float>({2}, {-1000.f, 1000.f});
  expect_near(run_op({.op = "Sigmoid", .inputs = {x}})[0], V<float>({2}, {0, 1}));
  expect_near(run_op({.op = "Softplus", .inputs = {x}})[0], V<float>({2}, {0, 1000}));
  expect_near(run_op({.op = "Mish", .inputs = {x}, .opset = 18})[0], V<float>({2}, {0, 1000}));
}

TEST(Activation, Float16AndDouble) {
  auto h = V<Float16>({2}, {Float16(-2.f), Float16(1.f)});
  auto out = run_op({.op = "LeakyRelu", .inputs = {h}, .attrs = F({{"alpha", 0.5f}})});
  EXPECT_EQ(float(out[0].data<Float16>()[0]), -1.f);
  EXPECT_EQ(float(out[0].data<Float16>()[1]), 1.f);
  expect_near(run_op({.op = "Sigmoid", .inputs = {V<double>({1}, {0.0})}})[0], V<double>({1}, {0.5}));
  EXPECT_THROW(run_op({.op = "Sigmoid", .inputs = {V<int32_t>({1}, {1})}}), kiln::Error);
}

TEST(PRelu, BroadcastSlope) {
  // X: 2x3x2, slope: 3x1 (per channel)
  Tensor x = V<float>({2, 3, 2}, {-1, 1, -2, 2, -3, 3, -4, 4, -5, 5, -6, 6});
  Tensor s = V<float>({3, 1}, {0.1f, 0.2f, 0.3f});
  auto out = run_op({.op = "PRelu", .inputs = {x, s}});
  expect_near(out[0], V<float>({2, 3, 2}, {-0.1f, 1, -0.4f, 2, -0.9f, 3, -0.4f, 4, -1.0f, 5, -1.8f, 6}));
  auto scalar = run_op({.op = "PRelu", .inputs = {x, V<float>({1}, {0.5f})}});
  EXPECT_FLOAT_EQ(scalar[0].data<float>()[0], -0.5f);
  EXPECT_THROW(run_op({.op = "PRelu", .inputs = {x, V<float>({4}, {1, 2, 3, 4})}}), kiln::Error);
  EXPECT_THROW(infer_op("PRelu", {T(DType::Float, {2, 3}), T(DType::Float, {2, 2, 3})}), kiln::Error);
}

TEST(Shrink, HardAndSoft) {
  auto x = V<float>({5}, {-2, -0.5f, 0, 0.5f, 2});
  expect_near(run_op({.op = "Shrink", .inputs = {x}, .attrs = F({{"lambd", 1.f}})})[0], V<float>({5}, {-2, 0, 0, 0, 2}));
  expect_near(run_op({.op = "Shrink", .inputs = {x}, .attrs = F({{"lambd", 1.f}, {"bias", 1.f}})})[0],
              V<float>({5}, {-1, 0, 0, 0, 1}));
  auto i = run_op({.op = "Shrink", .inputs = {V<int32_t>({3}, {-3, 0, 3})}, .attrs = F({{"lambd", 1.f}, {"bias", 1.f}})});
  EXPECT_EQ(i[0].data<int32_t>()[0], -2);
  EXPECT_EQ(i[0].data<int32_t>()[2], 2);
}

TEST(Clip, InputsAndAttributes) {
  auto x = V<float>({5}, {-3, -1, 0, 1, 3});
  expect_near(run_op({.op = "Clip", .inputs = {x, V<float>({}, {-1.5f}), V<float>({}, {2.f})}})[0],
              V<float>({5}, {-1.5f, -1, 0, 1, 2}));
  // Only max given: min input absent.
  expect_near(run_op({.op = "Clip", .inputs = {x, Tensor(), V<float>({}, {0.f})}})[0], V<float>({5}, {-3, -1, 0, 0, 0}));
  expect_near(run_op({.op = "Clip", .inputs = {x}})[0], x);
  // Opset 6: bounds are attributes.
  expect_near(run_op({.op = "Clip", .inputs = {x}, .attrs = F({{"min", -2.f}, {"max", 0.5f}}), .opset = 6})[0],
              V<float>({5}, {-2, -1, 0, 0.5f, 0.5f}));
  auto i8 = run_op({.op = "Clip", .inputs = {V<int8_t>({3}, {-100, 5, 100}), V<int8_t>({}, {-10}), V<int8_t>({}, {10})}});
  EXPECT_EQ(i8[0].data<int8_t>()[0], -10);
  EXPECT_EQ(i8[0].data<int8_t>()[1], 5);
  EXPECT_EQ(i8[0].data<int8_t>()[2], 10);
  EXPECT_THROW(run_op({.op = "Clip", .inputs = {x, V<float>({2}, {0, 1})}}), kiln::Error);
  EXPECT_THROW(run_op({.op = "Clip", .inputs = {x, V<double>({}, {0})}}), kiln::Error);
}

TEST(Activation, InferSymbolic) {
  auto t = infer_op("Relu", {T(DType::Float, {S("n"), 3, 7})});
  EXPECT_EQ(t[0].str(), "float[n,3,7]");
  t = infer_op("PRelu", {T(DType::Float, {S("n"), 3, 5}), T(DType::Float, {3, 1})});
  EXPECT_EQ(t[0].str(), "float[n,3,5]");
  t = infer_op("Clip", {T(DType::Float, {S("n")}), T(DType::Float, {}), T(DType::Float, {})});
  EXPECT_EQ(t[0].str(), "float[n]");
  EXPECT_THROW(infer_op("Gelu", {T(DType::Float, {2})}, {{"approximate", ir::Attribute::of_string("fast")}}), kiln::Error);
  EXPECT_THROW(infer_op("Elu", {T(DType::Int64, {2})}), kiln::Error);
  EXPECT_THROW(infer_op("Clip", {T(DType::Int32, {2})}, {}, 1, 11), kiln::Error);
}

// ---------------------------------------------------------------- the epilogue vocabulary
// (src/ops/core/activation.h), which the optimizer, the reference kernels and the CPU backend share.

namespace {
using A = ops::Activation;

// A one-node graph at `opset`: op(x, extra...) -> y.
struct OneOp {
  ir::Graph g;
  ir::Node* n = nullptr;
  OneOp(const std::string& op, ir::Attributes attrs, int64_t opset = 17, const std::string& domain = "",
        std::vector<std::optional<float>> bounds = {}) {
    g.opsets[""] = opset;
    std::vector<ir::Value*> ins = {g.add_input("x", T(DType::Float, {4}))};
    for (size_t i = 0; i < bounds.size(); ++i)
      ins.push_back(bounds[i] ? g.add_constant("c" + std::to_string(i), V<float>({}, {*bounds[i]}))
                              : g.add_input("b" + std::to_string(i), T(DType::Float, {})));
    n = g.add_node(op, ins, {g.add_value("y")}, std::move(attrs), "n", domain);
  }
};

std::optional<A> op_activation(const std::string& op, ir::Attributes attrs = {}, int64_t opset = 17,
                               const std::string& domain = "", std::vector<std::optional<float>> bounds = {}) {
  OneOp o(op, std::move(attrs), opset, domain, std::move(bounds));
  return ops::activation_op(*o.n);
}
}  // namespace

TEST(ActivationVocabulary, NamesAndParamsRoundTrip) {
  const std::vector<A> all = {{A::Relu},        {A::Clip, 0, 6},      {A::Sigmoid},  {A::Tanh},
                              {A::SiLU},        {A::Gelu},            {A::GeluTanh}, {A::HardSigmoid, 0.2f, 0.5f},
                              {A::HardSwish},   {A::LeakyRelu, 0.01f}};
  const std::vector<std::string> names = {"Relu", "Clip",     "Sigmoid",     "Tanh",      "SiLU",
                                          "Gelu", "GeluTanh", "HardSigmoid", "HardSwish", "LeakyRelu"};
  const std::vector<int> params = {0, 2, 0, 0, 0, 0, 0, 2, 0, 1};
  EXPECT_STREQ(ops::activation_name(A::None), "");
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(ops::activation_name(all[i].kind), names[i]);
    EXPECT_EQ(ops::activation_param_count(all[i].kind), params[i]) << names[i];
    OneOp o("Relu", {});
    ops::set_activation(o.n->attrs, all[i]);
    EXPECT_EQ(o.n->attr_string("activation", ""), names[i]);
    EXPECT_EQ(o.n->attr_floats("activation_params").size(), static_cast<size_t>(params[i])) << names[i];
    const A back = ops::activation_of(*o.n);
    EXPECT_EQ(back.kind, all[i].kind);
    EXPECT_EQ(back.a, all[i].a);
    EXPECT_EQ(back.b, all[i].b);
  }
  OneOp none("Relu", {});
  ops::set_activation(none.n->attrs, A{A::None});
  EXPECT_FALSE(none.n->has_attr("activation"));
  EXPECT_EQ(ops::activation_of(*none.n).kind, A::None);
}

TEST(ActivationVocabulary, RejectsMalformedEpilogues) {
  auto attrs = [](const char* name, std::vector<float> p) {
    ir::Attributes a = {{"activation_params", ir::Attribute::of_floats(p)}};
    if (*name) a["activation"] = ir::Attribute::of_string(name);
    return a;
  };
  EXPECT_THROW(ops::activation_of(*OneOp("Relu", attrs("Swish", {})).n), kiln::Error);
  EXPECT_THROW(ops::activation_of(*OneOp("Relu", attrs("Clip", {0})).n), kiln::Error);
  EXPECT_THROW(ops::activation_of(*OneOp("Relu", attrs("Relu", {1})).n), kiln::Error);
  EXPECT_THROW(ops::activation_of(*OneOp("Relu", attrs("", {1})).n), kiln::Error);
}

TEST(ActivationVocabulary, GraphOpsAndTheirParameters) {
  auto kind_of = [](const std::optional<A>& a) { return a ? static_cast<int>(a->kind) : -1; };
  EXPECT_EQ(kind_of(op_activation("Relu")), A::Relu);
  EXPECT_EQ(kind_of(op_activation("Sigmoid")), A::Sigmoid);
  EXPECT_EQ(kind_of(op_activation("Tanh")), A::Tanh);
  EXPECT_EQ(kind_of(op_activation("HardSwish")), A::HardSwish);
  EXPECT_EQ(kind_of(op_activation("SiLU", {}, 17, "kiln")), A::SiLU);
  EXPECT_EQ(kind_of(op_activation("Gelu", {}, 20)), A::Gelu);
  EXPECT_EQ(kind_of(op_activation("Gelu", {{"approximate", ir::Attribute::of_string("tanh")}}, 20)), A::GeluTanh);
  EXPECT_EQ(kind_of(op_activation("Gelu", {}, 1, "com.microsoft")), A::Gelu);
  // Not activations: other ops, another domain's op of the same name.
  EXPECT_EQ(op_activation("Exp"), std::nullopt);
  EXPECT_EQ(op_activation("Relu", {}, 17, "com.microsoft"), std::nullopt);
  EXPECT_EQ(op_activation("Gelu", {}, 17, "kiln"), std::nullopt);

  std::optional<A> leaky = op_activation("LeakyRelu");
  ASSERT_TRUE(leaky);
  EXPECT_EQ(leaky->a, 0.01f);
  leaky = op_activation("LeakyRelu", F({{"alpha", 0.3f}}));
  EXPECT_EQ(leaky->a, 0.3f);
  std::optional<A> hs = op_activation("HardSigmoid");
  ASSERT_TRUE(hs);
  EXPECT_EQ(hs->a, 0.2f);
  EXPECT_EQ(hs->b, 0.5f);
  hs = op_activation("HardSigmoid", F({{"alpha", 0.25f}, {"beta", 0.75f}}));
  EXPECT_EQ(hs->a, 0.25f);
  EXPECT_EQ(hs->b, 0.75f);
}

TEST(ActivationVocabulary, ClipBounds) {
  const float inf = std::numeric_limits<float>::infinity();
  // Opset 6: attributes.
  std::optional<A> c = op_activation("Clip", F({{"min", 0.f}, {"max", 6.f}}), 6);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, A::Clip);
  EXPECT_EQ(c->a, 0.f);
  EXPECT_EQ(c->b, 6.f);
  c = op_activation("Clip", F({{"max", 6.f}}), 6);
  EXPECT_EQ(c->a, -inf);
  // Opset 13: constant scalar inputs; an absent bound is unbounded.
  c = op_activation("Clip", {}, 13, "", {-1.f, 1.f});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->a, -1.f);
  EXPECT_EQ(c->b, 1.f);
  c = op_activation("Clip", {}, 13, "", {0.f});
  EXPECT_EQ(c->a, 0.f);
  EXPECT_EQ(c->b, inf);
  c = op_activation("Clip", {}, 13);
  EXPECT_EQ(c->a, -inf);
  EXPECT_EQ(c->b, inf);
  // A bound known only at run time is not an epilogue.
  EXPECT_EQ(op_activation("Clip", {}, 13, "", {0.f, std::nullopt}), std::nullopt);
}

TEST(ActivationVocabulary, ScalarForms) {
  EXPECT_EQ(ops::apply({A::None}, -2.f), -2.f);
  EXPECT_EQ(ops::apply({A::Relu}, -2.f), 0.f);
  EXPECT_EQ(ops::apply({A::Relu}, 3.f), 3.f);
  EXPECT_EQ(ops::apply({A::Clip, 0, 6}, 7.f), 6.f);
  EXPECT_EQ(ops::apply({A::Clip, 0, 6}, -1.f), 0.f);
  EXPECT_EQ(ops::apply({A::Sigmoid}, 0.f), 0.5f);
  EXPECT_FLOAT_EQ(ops::apply({A::Sigmoid}, 2.f), 0.880797077f);
  EXPECT_FLOAT_EQ(ops::apply({A::Tanh}, 0.5f), 0.462117157f);
  EXPECT_FLOAT_EQ(ops::apply({A::SiLU}, 2.f), 1.761594156f);
  EXPECT_FLOAT_EQ(ops::apply({A::Gelu}, 1.f), 0.841344746f);
  EXPECT_FLOAT_EQ(ops::apply({A::GeluTanh}, 1.f), 0.841191990f);
  EXPECT_FLOAT_EQ(ops::apply({A::HardSigmoid, 0.2f, 0.5f}, 1.f), 0.7f);
  EXPECT_EQ(ops::apply({A::HardSigmoid, 0.2f, 0.5f}, 10.f), 1.f);
  EXPECT_EQ(ops::apply({A::HardSwish}, 3.f), 3.f);
  EXPECT_FLOAT_EQ(ops::apply({A::HardSwish}, -1.f), -1.f / 3.f);
  EXPECT_EQ(ops::apply({A::HardSwish}, -4.f), -0.f);
  EXPECT_FLOAT_EQ(ops::apply({A::LeakyRelu, 0.1f}, -2.f), -0.2f);
  EXPECT_EQ(ops::apply({A::LeakyRelu, 0.1f}, 2.f), 2.f);
}

}  // namespace kiln::testing

namespace kiln::testing {

// Opset 6's PRelu: a 1-D slope of the channel count applies along axis 1.
TEST(PRelu, Opset6SlopePerChannel) {
  Tensor x = Tensor::from_vector<float>({1, 2, 2}, {-1, -2, -3, 4});
  Tensor s = Tensor::from_vector<float>({2}, {0.5f, 0.25f});
  expect_near(run_op({.op = "PRelu", .inputs = {x, s}, .opset = 6})[0],
              Tensor::from_vector<float>({1, 2, 2}, {-0.5f, -1, -0.75f, 4}));
  // From opset 7 the same slope broadcasts along the last axis.
  expect_near(run_op({.op = "PRelu", .inputs = {x, s}, .opset = 7})[0],
              Tensor::from_vector<float>({1, 2, 2}, {-0.5f, -0.5f, -1.5f, 4}));
}

}  // namespace kiln::testing
