#include "frontend/tf/converter.h"

#include <kiln/error.h>

#include "ir/dispatch.h"

namespace kiln::tf_fe {

Converter::Converter(ir::Graph& g, ops::ShapeInference& infer, const tfpb::NodeDef& node, std::vector<ir::Value*> inputs,
                     ImportContext* context, std::string where, std::string prefix)
    : g_(g),
      infer_(infer),
      node_(node),
      inputs_(std::move(inputs)),
      context_(context),
      where_(std::move(where)),
      prefix_(std::move(prefix)) {}

ImportContext& Converter::context() const {
  if (!context_) fail("needs the whole import (library functions), not a lone converter");
  return *context_;
}

std::string Converter::describe() const {
  return "TensorFlow node '" + node_.name() + "' (" + node_.op() + ")" + where_;
}

void Converter::fail(const std::string& msg) const { throw Error(describe() + ": " + msg); }

void Converter::unsupported(const std::string& msg) const { throw UnsupportedError(describe() + ": " + msg); }

ir::Value* Converter::in(int i) const {
  if (i < 0 || i >= num_inputs()) fail("has no input " + std::to_string(i));
  return inputs_[i];
}

void Converter::expect_inputs(int min, int max) const {
  if (max < 0) max = min;
  if (num_inputs() < min || num_inputs() > max)
    fail("has " + std::to_string(num_inputs()) + " inputs, expected " +
         (min == max ? std::to_string(min) : std::to_string(min) + " to " + std::to_string(max)));
}

bool Converter::has_attr(const std::string& a) const { return node_.attr().count(a) != 0; }

const tfpb::AttrValue& Converter::attr(const std::string& a) const {
  auto it = node_.attr().find(a);
  if (it == node_.attr().end()) fail("attribute '" + a + "' is missing");
  return it->second;
}

int64_t Converter::attr_int(const std::string& a) const { return attr(a).i(); }

int64_t Converter::attr_int_or(const std::string& a, int64_t def) const { return has_attr(a) ? attr(a).i() : def; }

float Converter::attr_float_or(const std::string& a, float def) const { return has_attr(a) ? attr(a).f() : def; }

bool Converter::attr_bool_or(const std::string& a, bool def) const { return has_attr(a) ? attr(a).b() : def; }

std::string Converter::attr_string_or(const std::string& a, const std::string& def) const {
  return has_attr(a) ? attr(a).s() : def;
}

std::vector<int64_t> Converter::attr_ints_or(const std::string& a, std::vector<int64_t> def) const {
  if (!has_attr(a)) return def;
  const auto& l = attr(a).list().i();
  return {l.begin(), l.end()};
}

std::vector<std::string> Converter::attr_strings_or(const std::string& a) const {
  if (!has_attr(a)) return {};
  const auto& l = attr(a).list().s();
  return {l.begin(), l.end()};
}

DType Converter::attr_type(const std::string& a) const {
  return dtype_from_tf(attr(a).type(), "TensorFlow node '" + name() + "' attribute '" + a + "'");
}

DType Converter::attr_type_or(const std::string& a, DType def) const { return has_attr(a) ? attr_type(a) : def; }

bool Converter::channels_last() const {
  const std::string f = attr_string_or("data_format", "NHWC");
  if (f == "NHWC" || f == "NWC" || f == "NDHWC") return true;
  if (f == "NCHW" || f == "NCW" || f == "NCDHW") return false;
  unsupported("data_format '" + f + "' is not supported");
}

int Converter::rank(ir::Value* v) const {
  if (!v->type.rank_known) fail("the rank of '" + v->name() + "' is not known at import");
  return v->type.rank();
}

std::optional<std::vector<int64_t>> Converter::maybe_ints(ir::Value* v) const {
  const kiln::Tensor* t = known(v);
  if (!t || !dtype_is_integer(t->dtype())) return std::nullopt;
  std::vector<int64_t> out(static_cast<size_t>(t->numel()));
  ir::dispatch_int(t->dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = t->data<T>();
    for (int64_t i = 0; i < t->numel(); ++i) out[i] = static_cast<int64_t>(p[i]);
  });
  return out;
}

std::vector<int64_t> Converter::known_ints(int i, const std::string& what) const {
  auto v = maybe_ints(in(i));
  if (!v) unsupported(what + " (input " + std::to_string(i) + ") must be a constant integer tensor");
  return *v;
}

std::vector<ir::Value*> Converter::op_n(const std::string& type, std::vector<ir::Value*> inputs, int outputs,
                                        ir::Attributes attrs) {
  const std::string base = g_.unique_name(prefix_ + node_.name() + "/" + type);
  std::vector<ir::Value*> outs;
  for (int k = 0; k < outputs; ++k) outs.push_back(g_.add_value(outputs == 1 ? base : base + ":" + std::to_string(k)));
  ir::Node* n = g_.add_node(type, std::move(inputs), outs, std::move(attrs), base);
  infer_.infer_node(*n);
  return outs;
}

ir::Value* Converter::op(const std::string& type, std::vector<ir::Value*> inputs, ir::Attributes attrs) {
  return op_n(type, std::move(inputs), 1, std::move(attrs))[0];
}

ir::Value* Converter::constant(kiln::Tensor t) {
  ir::Value* v = g_.add_constant(g_.unique_name(prefix_ + node_.name() + "/const"), std::move(t));
  v->type = ir::TensorType::from_dims(v->constant().dtype(), v->constant().dims());
  return v;
}

ir::Value* Converter::ints(const std::vector<int64_t>& v) {
  return constant(kiln::Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v));
}

ir::Value* Converter::scalar(double v, DType dtype) {
  kiln::Tensor t(dtype, {});
  ir::dispatch_numeric_bool(dtype, [&](auto tag) {
    using T = decltype(tag);
    *t.data<T>() = static_cast<T>(static_cast<ir::compute_t<T>>(v));
  });
  return constant(std::move(t));
}

ir::Value* Converter::cast(ir::Value* v, DType to) {
  if (v->type.dtype == to) return v;
  return op("Cast", {v}, {{"to", ir::Attribute::of_int(static_cast<int64_t>(to))}});
}

ir::Value* Converter::transpose(ir::Value* v, const std::vector<int64_t>& perm) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
  if (identity) return v;
  return op("Transpose", {v}, {{"perm", ir::Attribute::of_ints(perm)}});
}

ir::Value* Converter::unsqueeze(ir::Value* v, const std::vector<int64_t>& axes) {
  if (axes.empty()) return v;
  return op("Unsqueeze", {v, ints(axes)});
}

ir::Value* Converter::squeeze(ir::Value* v, const std::vector<int64_t>& axes) {
  if (axes.empty()) return v;
  return op("Squeeze", {v, ints(axes)});
}

ir::Value* Converter::reshape(ir::Value* v, const std::vector<int64_t>& shape) { return op("Reshape", {v, ints(shape)}); }

std::vector<int64_t> Converter::to_channels_first(int r) {
  std::vector<int64_t> p{0, r - 1};
  for (int i = 1; i < r - 1; ++i) p.push_back(i);
  return p;
}

std::vector<int64_t> Converter::to_channels_last(int r) {
  std::vector<int64_t> p{0};
  for (int i = 2; i < r; ++i) p.push_back(i);
  p.push_back(1);
  return p;
}

DType dtype_from_tf(int t, const std::string& what) {
  switch (t % 100) {  // reference types read as their value type
    case tfpb::DT_FLOAT: return DType::Float;
    case tfpb::DT_DOUBLE: return DType::Double;
    case tfpb::DT_INT32: return DType::Int32;
    case tfpb::DT_UINT8: return DType::UInt8;
    case tfpb::DT_INT16: return DType::Int16;
    case tfpb::DT_INT8: return DType::Int8;
    case tfpb::DT_STRING: return DType::String;
    case tfpb::DT_INT64: return DType::Int64;
    case tfpb::DT_BOOL: return DType::Bool;
    case tfpb::DT_BFLOAT16: return DType::BFloat16;
    case tfpb::DT_UINT16: return DType::UInt16;
    case tfpb::DT_HALF: return DType::Float16;
    case tfpb::DT_UINT32: return DType::UInt32;
    case tfpb::DT_UINT64: return DType::UInt64;
    default: break;
  }
  const auto* d = tfpb::DataType_descriptor()->FindValueByNumber(t);
  throw UnsupportedError(what + ": TensorFlow type " + (d ? d->name() : std::to_string(t)) + " is not supported");
}

const ConverterTable& converters() {
  static const ConverterTable table = [] {
    ConverterTable t;
    add_array_converters(t);
    add_math_converters(t);
    add_nn_converters(t);
    add_control_flow_converters(t);
    add_tensor_list_converters(t);
    return t;
  }();
  return table;
}

}  // namespace kiln::tf_fe
