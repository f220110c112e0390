// ai.onnx.ml LabelEncoder at ML opsets 1, 2 and 4.
#include <kiln/error.h>

#include <cmath>
#include <limits>

#include "op_test_util.h"

namespace kiln::testing {

namespace {
using A = ir::Attribute;
constexpr const char* kMl = "ai.onnx.ml";

std::vector<Tensor> encode(const Tensor& x, ir::Attributes attrs, int ml_opset) {
  return run_op({.op = "LabelEncoder", .inputs = {x}, .attrs = std::move(attrs), .domain = kMl, .domain_opset = ml_opset});
}

A strings(std::vector<std::string> v) {
  A a;
  a.kind = A::Kind::Strings;
  a.strings = std::move(v);
  return a;
}

Tensor str_tensor(std::vector<int64_t> dims, std::vector<std::string> v) { return Tensor::from_vector<std::string>(std::move(dims), v); }

const float kNaN = std::numeric_limits<float>::quiet_NaN();
}  // namespace

TEST(LabelEncoder, Opset1StringsToIndicesAndBack) {
  // "a" repeats: opset 1 keeps its first index.
  ir::Attributes attrs = {{"classes_strings", strings({"a", "b", "a", "c"})}};
  Tensor x = str_tensor({2, 3}, {"c", "a", "zz", "b", "", "a"});
  expect_near(encode(x, attrs, 1)[0], Tensor::from_vector<int64_t>({2, 3}, {3, 0, -1, 1, -1, 0}));
  attrs["default_int64"] = A::of_int(7);
  expect_near(encode(x, attrs, 1)[0], Tensor::from_vector<int64_t>({2, 3}, {3, 0, 7, 1, 7, 0}));

  Tensor idx = Tensor::from_vector<int64_t>({3, 1}, {1, -1, 4});
  expect_near(encode(idx, attrs, 1)[0], str_tensor({3, 1}, {"b", "_Unused", "_Unused"}));
  attrs["default_string"] = A::of_string("?");
  expect_near(encode(idx, attrs, 1)[0], str_tensor({3, 1}, {"b", "?", "?"}));
  expect_error([&] { encode(Tensor::from_vector<float>({1}, {1}), attrs, 1); }, "X must be string or int64");
}

// Every keys_* list kind against every values_* list kind, on a 3-D X.
TEST(LabelEncoder, Opset2EveryListPairing) {
  const std::vector<std::string> ks = {"x", "y", "z"};
  const std::vector<int64_t> ki = {-5, 0, 9};
  const std::vector<float> kf = {-1.5f, 0.f, 2.25f};
  const std::vector<int> picks = {2, -1, 0, 1, 1, -1};  // key positions of X's elements (-1: a miss)
  auto input = [&](int kind) {
    std::vector<std::string> s;
    std::vector<int64_t> i;
    std::vector<float> f;
    for (int p : picks) {
      s.push_back(p < 0 ? "w" : ks[p]);
      i.push_back(p < 0 ? 4 : ki[p]);
      f.push_back(p < 0 ? 3.f : kf[p]);
    }
    if (kind == 0) return str_tensor({1, 3, 2}, s);
    if (kind == 1) return Tensor::from_vector<int64_t>({1, 3, 2}, i);
    return Tensor::from_vector<float>({1, 3, 2}, f);
  };
  const std::vector<std::string> vs = {"p", "q", "r"};
  const std::vector<int64_t> vi = {10, 20, 30};
  const std::vector<float> vf = {0.5f, -2.f, 8.f};
  for (int kk = 0; kk < 3; ++kk)
    for (int vk = 0; vk < 3; ++vk) {
      SCOPED_TRACE("keys kind " + std::to_string(kk) + ", values kind " + std::to_string(vk));
      ir::Attributes attrs;
      if (kk == 0) attrs["keys_strings"] = strings(ks);
      if (kk == 1) attrs["keys_int64s"] = A::of_ints(ki);
      if (kk == 2) attrs["keys_floats"] = A::of_floats(kf);
      if (vk == 0) attrs["values_strings"] = strings(vs);
      if (vk == 1) attrs["values_int64s"] = A::of_ints(vi);
      if (vk == 2) attrs["values_floats"] = A::of_floats(vf);
      attrs["default_string"] = A::of_string("none");
      attrs["default_int64"] = A::of_int(-9);
      attrs["default_float"] = A::of_float(7.5f);
      std::vector<std::string> es;
      std::vector<int64_t> ei;
      std::vector<float> ef;
      for (int p : picks) {
        es.push_back(p < 0 ? "none" : vs[p]);
        ei.push_back(p < 0 ? -9 : vi[p]);
        ef.push_back(p < 0 ? 7.5f : vf[p]);
      }
      Tensor y = encode(input(kk), attrs, 2)[0];
      if (vk == 0) expect_near(y, str_tensor({1, 3, 2}, es));
      if (vk == 1) expect_near(y, Tensor::from_vector<int64_t>({1, 3, 2}, ei));
      if (vk == 2) expect_near(y, Tensor::from_vector<float>({1, 3, 2}, ef));
    }
}

TEST(LabelEncoder, DefaultsRepeatedKeysNaNAndSignedZero) {
  // No default_*: -1, "_Unused" and -0.0.
  Tensor x = str_tensor({3}, {"a", "b", "q"});
  expect_near(encode(x, {{"keys_strings", strings({"a", "b"})}, {"values_int64s", A::of_ints({4, 5})}}, 2)[0],
              Tensor::from_vector<int64_t>({3}, {4, 5, -1}));
  expect_near(encode(x, {{"keys_strings", strings({"a", "b"})}, {"values_strings", strings({"A", "B"})}}, 2)[0],
              str_tensor({3}, {"A", "B", "_Unused"}));
  Tensor f = encode(x, {{"keys_strings", strings({"a", "b"})}, {"values_floats", A::of_floats({1, 2})}}, 2)[0];
  ASSERT_EQ(f.numel(), 3);
  EXPECT_EQ(f.data<float>()[2], 0.f);
  EXPECT_TRUE(std::signbit(f.data<float>()[2]));

  // The last of repeated keys wins; a NaN key matches any NaN; -0.0 and 0.0 are one key.
  Tensor xf = Tensor::from_vector<float>({5}, {1, kNaN, 0.f, 2, -kNaN});
  auto y = encode(xf, {{"keys_floats", A::of_floats({1, kNaN, -0.f, 1})}, {"values_int64s", A::of_ints({10, 20, 30, 40})}}, 2);
  expect_near(y[0], Tensor::from_vector<int64_t>({5}, {40, 20, 30, -1, 20}));
}

TEST(LabelEncoder, Opset4TensorAttributes) {
  Tensor x = str_tensor({2, 2}, {"b", "a", "d", "c"});
  ir::Attributes attrs = {{"keys_tensor", A::of_tensor(str_tensor({3}, {"a", "b", "c"}))},
                          {"values_tensor", A::of_tensor(Tensor::from_vector<int16_t>({3}, {0, 1, 2}))},
                          {"default_tensor", A::of_tensor(Tensor::from_vector<int16_t>({1}, {42}))}};
  expect_near(encode(x, attrs, 4)[0], Tensor::from_vector<int16_t>({2, 2}, {1, 0, 42, 2}));
  // keys as a plain list, values as a tensor.
  attrs.erase("keys_tensor");
  attrs["keys_strings"] = strings({"a", "b", "c"});
  expect_near(encode(x, attrs, 4)[0], Tensor::from_vector<int16_t>({2, 2}, {1, 0, 42, 2}));
  // Without default_tensor an integer tensor falls back to default_int64 (-1 by default).
  attrs.erase("default_tensor");
  expect_near(encode(x, attrs, 4)[0], Tensor::from_vector<int16_t>({2, 2}, {1, 0, -1, 2}));
  attrs["default_int64"] = A::of_int(-300);
  expect_near(encode(x, attrs, 4)[0], Tensor::from_vector<int16_t>({2, 2}, {1, 0, -300, 2}));
  attrs["default_int64"] = A::of_int(40000);
  expect_error([&] { encode(x, attrs, 4); }, "default_int64 40000 does not fit the values' dtype int16");
}

TEST(LabelEncoder, Opset4NumericTensorKeysAndValues) {
  // int32 -> double, double -> string, int64 tensor -> float tensor, on odd shapes.
  Tensor xi = Tensor::from_vector<int32_t>({3, 1}, {7, -2, 100});
  expect_near(encode(xi, {{"keys_tensor", A::of_tensor(Tensor::from_vector<int32_t>({2}, {-2, 7}))},
                          {"values_tensor", A::of_tensor(Tensor::from_vector<double>({2}, {0.25, 1e300}))}}, 4)[0],
              Tensor::from_vector<double>({3, 1}, {1e300, 0.25, -0.0}), 0, 1e-12);
  Tensor xd = Tensor::from_vector<double>({1, 3}, {0.1, 0.2, 0.30000000000000004});
  expect_near(encode(xd, {{"keys_tensor", A::of_tensor(Tensor::from_vector<double>({2}, {0.1, 0.3}))},
                          {"values_tensor", A::of_tensor(str_tensor({2}, {"one", "three"}))},
                          {"default_tensor", A::of_tensor(str_tensor({1}, {"-"}))}}, 4)[0],
              str_tensor({1, 3}, {"one", "-", "-"}));
  Tensor xl = Tensor::from_vector<int64_t>({4}, {int64_t{1} << 60, 3, (int64_t{1} << 60) + 1, 3});
  expect_near(encode(xl, {{"keys_tensor", A::of_tensor(Tensor::from_vector<int64_t>({2}, {int64_t{1} << 60, 3}))},
                          {"values_tensor", A::of_tensor(Tensor::from_vector<float>({2}, {1.5f, 2.5f}))},
                          {"default_tensor", A::of_tensor(Tensor::from_vector<float>({1}, {9}))}}, 4)[0],
              Tensor::from_vector<float>({4}, {1.5f, 2.5f, 9, 2.5f}));
}

TEST(LabelEncoder, ShapeInference) {
  ir::Attributes attrs = {{"keys_strings", strings({"a"})}, {"values_tensor", A::of_tensor(Tensor::from_vector<int32_t>({1}, {3}))}};
  auto t = infer_op("LabelEncoder", {T(DType::String, {S("n"), 3})}, attrs, 1, 17, {}, kMl, 4);
  EXPECT_EQ(t[0].str(), "int32[n,3]");
  t = infer_op("LabelEncoder", {T(DType::Int64, {2, 5})}, {{"classes_strings", strings({"a"})}}, 1, 17, {}, kMl, 1);
  EXPECT_EQ(t[0].str(), "string[2,5]");
}

TEST(LabelEncoder, BadAttributesAndInputs) {
  Tensor x = str_tensor({2}, {"a", "b"});
  const A keys = strings({"a", "b"});
  const A vals = A::of_ints({1, 2});
  auto fails = [&](ir::Attributes attrs, int ml_opset, const std::string& what, const Tensor& in = Tensor()) {
    expect_error([&] { encode(in.defined() ? in : x, attrs, ml_opset); }, what);
  };
  fails({{"keys_strings", keys}, {"keys_int64s", A::of_ints({1, 2})}, {"values_int64s", vals}}, 2,
        "(LabelEncoder): sets both keys_strings and keys_int64s");
  fails({{"values_int64s", vals}}, 2, "sets none of keys_tensor, keys_strings");
  fails({{"keys_strings", keys}}, 2, "sets none of values_tensor");
  fails({{"keys_strings", keys}, {"values_int64s", A::of_ints({1})}}, 2, "keys_strings has 2 entries but values_int64s has 1");
  fails({{"keys_strings", keys}, {"values_int64s", vals}}, 2, "X must have the keys' dtype", Tensor::from_vector<int64_t>({2}, {1, 2}));
  expect_error([&] { infer_op("LabelEncoder", {T(DType::Float, {2})}, {{"keys_strings", keys}, {"values_int64s", vals}}, 1, 17, {}, kMl, 2); },
               "X must have the keys' dtype");
  const A kt = A::of_tensor(str_tensor({2}, {"a", "b"}));
  fails({{"keys_tensor", kt}, {"values_int64s", vals}}, 2, "keys_tensor needs ai.onnx.ml opset 4");
  fails({{"keys_tensor", A::of_tensor(str_tensor({1, 2}, {"a", "b"}))}, {"values_int64s", vals}}, 4, "keys_tensor must be 1-D");
  fails({{"keys_strings", keys}, {"values_tensor", A::of_tensor(Tensor::from_vector<uint8_t>({2}, {1, 2}))}}, 4,
        "values_tensor has dtype uint8");
  fails({{"keys_strings", keys}, {"values_int64s", vals}, {"default_tensor", A::of_tensor(Tensor::from_vector<int32_t>({1}, {0}))}}, 4,
        "default_tensor must hold one int64");
  fails({{"keys_strings", keys}, {"values_int64s", vals}, {"default_tensor", A::of_tensor(Tensor::from_vector<int64_t>({2}, {0, 1}))}}, 4,
        "default_tensor must hold one int64");
  fails({{"keys_floats", A::of_ints({1})}, {"values_int64s", A::of_ints({1})}}, 2, "keys_floats", Tensor::from_vector<float>({1}, {1}));
  fails({{"classes_strings", keys}}, 1, "X must be string or int64", Tensor::from_vector<float>({1}, {1}));
}

}  // namespace kiln::testing
