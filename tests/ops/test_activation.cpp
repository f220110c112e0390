#include <kiln/error.h>

#include <cmath>

#include "op_test_util.h"

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

}  // namespace kiln::testing
