// ai.onnx.ml LabelEncoder (ML opsets 1, 2 and 4): maps every element of X through a table of
// keys and values given as attributes; Y has X's shape and the values' dtype.
//
//   opset 1  classes_strings: a string X maps to its index there, an int64 X to the string at
//            that index; a miss gives default_int64 (-1) or default_string ("_Unused")
//   opset 2  keys_{floats,int64s,strings} -> values_{floats,int64s,strings}, a miss gives the
//            default_{float,int64,string} of the values' kind (-0.0, -1, "_Unused")
//   opset 4  also keys_tensor / values_tensor (1-D; string, int64, int32, int16, float or
//            double) and default_tensor (one element of the values' dtype)
//
// From opset 2 exactly one keys_* and one values_* attribute is set, of equal length, and X's
// dtype is the keys'. A repeated key maps to its last value and a NaN key matches every NaN
// input (both spelled out by the opset-4 spec); opset 1 keeps the first of repeated classes.
#include <kiln/error.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

// The table a node describes: value i is the image of key i; `fallback` (one element of the
// values' dtype) is the image of everything else.
struct Table {
  Tensor keys, values, fallback;
};

bool is_table_dtype(DType t) {
  return t == DType::String || t == DType::Int64 || t == DType::Int32 || t == DType::Int16 || t == DType::Float ||
         t == DType::Double;
}

// The single attribute of `names` the node sets ("" when none); two or more is ctx.fail().
template <typename Ctx>
std::string one_attr_of(const Ctx& ctx, const std::vector<std::string>& names) {
  std::string found;
  for (const std::string& name : names)
    if (ctx.node().has_attr(name)) {
      if (!found.empty()) ctx.fail("sets both " + found + " and " + name + "; only one may be set");
      found = name;
    }
  return found;
}

// keys_* / values_* attribute `name` as a 1-D tensor.
template <typename Ctx>
Tensor list_attr(const Ctx& ctx, const std::string& name) {
  const ir::Node& n = ctx.node();
  if (name.ends_with("_tensor")) {
    if (ctx.opset() < 4) ctx.fail(name + " needs ai.onnx.ml opset 4, the model has " + std::to_string(ctx.opset()));
    const Tensor& t = n.attr_tensor_required(name);
    if (t.rank() != 1) ctx.fail(name + " must be 1-D, got " + t.describe());
    if (!is_table_dtype(t.dtype()))
      ctx.fail(name + " has dtype " + dtype_name(t.dtype()) +
               "; LabelEncoder takes string, int64, int32, int16, float or double");
    return t;
  }
  if (name.ends_with("_floats")) {
    const std::vector<float> v = n.attr_floats(name);
    return Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v);
  }
  if (name.ends_with("_int64s")) {
    const std::vector<int64_t> v = n.attr_ints(name);
    return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
  }
  const std::vector<std::string> v = n.attr_strings(name);
  return Tensor::from_vector<std::string>({static_cast<int64_t>(v.size())}, v);
}

// One element of dtype `t` from the default_* attribute of its kind.
template <typename Ctx>
Tensor default_of_kind(const Ctx& ctx, DType t) {
  const ir::Node& n = ctx.node();
  if (t == DType::String) return Tensor::from_vector<std::string>({1}, {n.attr_string("default_string", "_Unused")});
  if (t == DType::Float) return Tensor::from_vector<float>({1}, {n.attr_float("default_float", -0.f)});
  if (t == DType::Double)
    return Tensor::from_vector<double>({1}, {static_cast<double>(n.attr_float("default_float", -0.f))});
  const int64_t v = n.attr_int("default_int64", -1);
  Tensor out(t, {1});
  dispatch_int(t, [&](auto tag) {
    using I = decltype(tag);
    if (!std::in_range<I>(v))
      ctx.fail("default_int64 " + std::to_string(v) + " does not fit the values' dtype " + dtype_name(t));
    out.data<I>()[0] = static_cast<I>(v);
  });
  return out;
}

// Opset 1: classes_strings read as string -> index (a string X) or index -> string (an int64 X).
template <typename Ctx>
Table table_v1(const Ctx& ctx, DType x) {
  const ir::Node& n = ctx.node();
  const std::vector<std::string> classes = n.attr_strings("classes_strings");
  const int64_t k = static_cast<int64_t>(classes.size());
  Table t;
  Tensor names = Tensor::from_vector<std::string>({k}, classes);
  Tensor index(DType::Int64, {k});
  for (int64_t i = 0; i < k; ++i) index.data<int64_t>()[i] = i;
  if (x == DType::String) {
    t = {names, index, Tensor::from_vector<int64_t>({1}, {n.attr_int("default_int64", -1)})};
  } else if (x == DType::Int64) {
    t = {index, names, Tensor::from_vector<std::string>({1}, {n.attr_string("default_string", "_Unused")})};
  } else {
    ctx.fail("at ai.onnx.ml opset 1, X must be string or int64, got " + dtype_name(x));
  }
  return t;
}

// Opsets 2 and 4.
template <typename Ctx>
Table table_v2(const Ctx& ctx) {
  const std::string keys = one_attr_of(ctx, {"keys_tensor", "keys_strings", "keys_int64s", "keys_floats"});
  const std::string values = one_attr_of(ctx, {"values_tensor", "values_strings", "values_int64s", "values_floats"});
  if (keys.empty()) ctx.fail("sets none of keys_tensor, keys_strings, keys_int64s, keys_floats");
  if (values.empty()) ctx.fail("sets none of values_tensor, values_strings, values_int64s, values_floats");
  Table t;
  t.keys = list_attr(ctx, keys);
  t.values = list_attr(ctx, values);
  if (t.keys.numel() != t.values.numel())
    ctx.fail(keys + " has " + std::to_string(t.keys.numel()) + " entries but " + values + " has " +
             std::to_string(t.values.numel()));
  const DType vt = t.values.dtype();
  if (ctx.node().has_attr("default_tensor")) {
    if (ctx.opset() < 4) ctx.fail("default_tensor needs ai.onnx.ml opset 4, the model has " + std::to_string(ctx.opset()));
    t.fallback = ctx.node().attr_tensor_required("default_tensor");
    if (t.fallback.dtype() != vt || t.fallback.numel() != 1)
      ctx.fail("default_tensor must hold one " + dtype_name(vt) + " (the values' dtype), got " + t.fallback.describe());
  } else {
    t.fallback = default_of_kind(ctx, vt);
  }
  return t;
}

// Each key's position in the table; a repeated key keeps its last (first_wins: its first).
class KeyIndex {
 public:
  KeyIndex(const Tensor& keys, bool first_wins) : dtype_(keys.dtype()) {
    for (int64_t i = 0; i < keys.numel(); ++i) {
      const int64_t at = i;
      if (dtype_ == DType::String) {
        put(strings_, keys.data<std::string>()[i], at, first_wins);
      } else if (dtype_is_integer(dtype_)) {
        put(ints_, keys.as_int64(i), at, first_wins);
      } else if (std::isnan(keys.as_double(i))) {
        if (!first_wins || nan_ < 0) nan_ = at;
      } else {
        put(reals_, keys.as_double(i), at, first_wins);
      }
    }
  }

  // The table position of x's element i, or -1 when no key matches it.
  int64_t find(const Tensor& x, int64_t i) const {
    if (dtype_ == DType::String) return lookup(strings_, x.data<std::string>()[i]);
    if (dtype_is_integer(dtype_)) return lookup(ints_, x.as_int64(i));
    const double v = x.as_double(i);
    return std::isnan(v) ? nan_ : lookup(reals_, v);
  }

 private:
  template <typename M, typename K>
  static void put(M& m, const K& k, int64_t at, bool first_wins) {
    if (first_wins)
      m.try_emplace(k, at);
    else
      m.insert_or_assign(k, at);
  }
  template <typename M, typename K>
  static int64_t lookup(const M& m, const K& k) {
    auto it = m.find(k);
    return it == m.end() ? -1 : it->second;
  }

  DType dtype_;
  std::unordered_map<std::string, int64_t> strings_;
  std::unordered_map<int64_t, int64_t> ints_;
  std::map<double, int64_t> reals_;  // ordered: -0.0 and 0.0 are one key
  int64_t nan_ = -1;
};

template <typename Ctx>
Table table_of(const Ctx& ctx, DType x) {
  return ctx.opset() < 2 ? table_v1(ctx, x) : table_v2(ctx);
}

void infer_label_encoder(InferContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (ctx.opset() < 2 && x.dtype == DType::Undefined) return ctx.set_output(0, ir::TensorType::unranked(DType::Undefined));
  const Table t = table_of(ctx, x.dtype);
  if (x.dtype != DType::Undefined && x.dtype != t.keys.dtype())
    ctx.fail("X is " + x.str() + " but the keys are " + dtype_name(t.keys.dtype()) + "; X must have the keys' dtype");
  infer_same_shape(ctx, t.values.dtype());
}

void label_encoder_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Table t = table_of(ctx, x.dtype());
  if (x.dtype() != t.keys.dtype())
    ctx.fail("X is " + x.describe() + " but the keys are " + dtype_name(t.keys.dtype()) + "; X must have the keys' dtype");
  const KeyIndex index(t.keys, /*first_wins=*/ctx.opset() < 2);
  dispatch_all(t.values.dtype(), [&](auto tag) {
    using V = decltype(tag);
    const V* values = t.values.template data<V>();
    const V& fallback = t.fallback.template data<V>()[0];
    V* y = ctx.make_output(0, t.values.dtype(), x.dims()).template data<V>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      const int64_t at = index.find(x, i);
      y[i] = at < 0 ? fallback : values[at];
    }
  });
}

}  // namespace

KILN_REGISTER_OPS(label_encoder) {
  reg.add({.name = "LabelEncoder", .domain = "ai.onnx.ml", .min_inputs = 1, .max_inputs = 1,
           .pattern = PatternKind::Opaque, .infer = infer_label_encoder, .kernel = label_encoder_kernel});
}

}  // namespace kiln::ops
