// Cast and CastLike: element type conversion between every numeric type, bool, the 16-bit
// floats and strings.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "ir/narrow_types.h"
#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

// Float to integer as numpy does on x86: through int64 (saturating, NaN -> 0 instead of
// undefined behaviour), then wrapping to the target width.
template <typename I>
I float_to_int(double v) {
  if (std::isnan(v)) return 0;
  if constexpr (std::is_same_v<I, uint64_t>) {
    if (v >= 18446744073709551616.0) return std::numeric_limits<uint64_t>::max();
    if (v >= 9223372036854775808.0) return static_cast<uint64_t>(v);
  }
  int64_t w;
  if (v < -9223372036854775808.0) w = std::numeric_limits<int64_t>::min();
  else if (v >= 9223372036854775808.0) w = std::numeric_limits<int64_t>::max();
  else w = static_cast<int64_t>(v);
  return static_cast<I>(w);
}

template <typename From, typename To>
To convert(const From& v) {
  using CF = compute_t<From>;
  using CT = compute_t<To>;
  if constexpr (std::is_same_v<From, To>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    return CF(v) != CF(0);
  } else if constexpr (std::is_same_v<From, bool>) {
    return To(CT(v ? 1 : 0));
  } else if constexpr (std::is_integral_v<CT> && std::is_floating_point_v<CF>) {
    return float_to_int<CT>(static_cast<double>(CF(v)));
  } else {
    return To(static_cast<CT>(CF(v)));
  }
}

// numpy's repr of a float: shortest round-trip digits, positional for 1e-4 <= |v| < 1e16
// (with a trailing ".0" when integral), scientific otherwise. NaN and infinities use the
// spellings Cast reads back ("NaN", "INF", "-INF").
std::string format_float(double v, bool single) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "INF" : "-INF";
  char buf[64];
  const double a = std::fabs(v);
  const bool fixed = a == 0 || (a >= 1e-4 && a < 1e16);
  const auto fmt = fixed ? std::chars_format::fixed : std::chars_format::scientific;
  auto res = single ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v), fmt)
                    : std::to_chars(buf, buf + sizeof buf, v, fmt);
  std::string s(buf, res.ptr);
  if (fixed && s.find('.') == std::string::npos) s += ".0";
  return s;
}

// Shortest decimal that converts back to the same 16-bit float.
template <typename H>
std::string format_half(H h) {
  const float f = float(h);
  if (std::isnan(f) || std::isinf(f)) return format_float(f, true);
  char buf[64];
  for (int p = 0; p < 9; ++p) {
    auto res = std::to_chars(buf, buf + sizeof buf - 1, static_cast<double>(f), std::chars_format::scientific, p);
    *res.ptr = '\0';
    double d = std::strtod(buf, nullptr);
    if (H(static_cast<float>(d)).bits == h.bits) return format_float(d, false);
  }
  return format_float(f, true);
}

template <typename T>
std::string to_string_value(const T& v) {
  if constexpr (std::is_same_v<T, bool>) return v ? "1" : "0";
  else if constexpr (std::is_same_v<T, float>) return format_float(v, true);
  else if constexpr (std::is_same_v<T, double>) return format_float(v, false);
  else if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) return format_half(v);
  else return std::to_string(v);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Parses a number as Cast's spec describes: plain or scientific decimals, and "INF", "+INF",
// "-INF", "NaN" in any case. Returns false when s is not a number.
bool parse_double(const std::string& s, double& out) {
  std::string t = s;
  t.erase(0, t.find_first_not_of(" \t\n"));
  t.erase(t.find_last_not_of(" \t\n") + 1);
  std::string l = lower(t);
  if (l == "nan" || l == "+nan" || l == "-nan") { out = std::numeric_limits<double>::quiet_NaN(); return true; }
  if (l == "inf" || l == "+inf") { out = std::numeric_limits<double>::infinity(); return true; }
  if (l == "-inf") { out = -std::numeric_limits<double>::infinity(); return true; }
  if (t.empty()) return false;
  char* end = nullptr;
  out = std::strtod(t.c_str(), &end);
  return end == t.c_str() + t.size();
}

template <typename To>
bool from_string_value(const std::string& s, To& out) {
  if constexpr (std::is_same_v<To, bool>) {
    std::string l = lower(s);
    if (l == "true") { out = true; return true; }
    if (l == "false") { out = false; return true; }
  }
  if constexpr (std::is_integral_v<To> && !std::is_same_v<To, bool>) {
    // Integers parse exactly when written as integers (int64 beyond 2^53 stays exact).
    To v{};
    auto res = std::from_chars(s.data(), s.data() + s.size(), v);
    if (res.ec == std::errc() && res.ptr == s.data() + s.size()) { out = v; return true; }
  }
  double d;
  if (!parse_double(s, d)) return false;
  out = convert<double, To>(d);
  return true;
}

// ONNX type names used by the string-typed 'to' attribute of Cast-1.
DType dtype_from_name(const std::string& name) {
  static const std::pair<const char*, DType> names[] = {
      {"FLOAT", DType::Float},   {"UINT8", DType::UInt8},     {"INT8", DType::Int8},     {"UINT16", DType::UInt16},
      {"INT16", DType::Int16},   {"INT32", DType::Int32},     {"INT64", DType::Int64},   {"STRING", DType::String},
      {"BOOL", DType::Bool},     {"FLOAT16", DType::Float16}, {"DOUBLE", DType::Double}, {"UINT32", DType::UInt32},
      {"UINT64", DType::UInt64}, {"BFLOAT16", DType::BFloat16}};
  std::string u = name;
  for (char& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const auto& [n, t] : names)
    if (u == n) return t;
  return DType::Undefined;
}

bool castable(DType t) {
  return t == DType::String || t == DType::Bool || dtype_is_float(t) || dtype_is_integer(t) || dtype_is_narrow(t);
}

// The 'to' dtype of a Cast node; throws (naming the node) for unknown or unsupported types.
DType cast_target(const ir::Node& n) {
  const ir::Attribute* a = n.attr("to");
  if (!a) throw Error(n.describe() + ": missing required attribute 'to'");
  if (a->kind == ir::Attribute::Kind::String) {
    DType t = dtype_from_name(a->s);
    if (t == DType::Undefined) throw Error(n.describe() + ": unknown target type '" + a->s + "'");
    return t;
  }
  int64_t v = n.attr_int("to", 0);
  if (v < 1 || v > static_cast<int64_t>(DType::Int2)) throw Error(n.describe() + ": 'to' = " + std::to_string(v) + " is not a tensor element type");
  DType t = dtype_from_onnx(static_cast<int32_t>(v));
  if (!castable(t)) throw UnsupportedError(n.describe() + ": cast to " + dtype_name(t) + " is not supported");
  return t;
}

void check_source(const ir::Node& n, DType from) {
  if (from != DType::Undefined && !castable(from))
    throw UnsupportedError(n.describe() + ": cast from " + dtype_name(from) + " is not supported");
}

// Opset 19's saturate (float8 targets) and opset 25's round_mode (float8e8m0).
struct NarrowCast {
  bool saturate = true;
  ir::PowerRounding rounding = ir::PowerRounding::Up;
};

NarrowCast narrow_cast_attrs(const KernelContext& ctx) {
  NarrowCast c;
  c.saturate = ctx.node().attr_int("saturate", 1) != 0;
  try {
    c.rounding = ir::power_rounding_from_name(ctx.node().attr_string("round_mode", "up"));
  } catch (const Error& e) {
    ctx.fail(e.what());
  }
  return c;
}

Tensor cast_tensor(const KernelContext& ctx, const Tensor& x, DType to);

// Casts from a narrow type go through its value as float (the integers through int8/uint8,
// which hold them exactly); casts to one go through double.
Tensor cast_narrow(const KernelContext& ctx, const Tensor& x, DType to) {
  const int64_t n = x.numel();
  if (dtype_is_narrow(x.dtype())) {
    const DType from = x.dtype();
    if (from == DType::Int4 || from == DType::Int2 || from == DType::UInt4 || from == DType::UInt2) {
      const DType wide = from == DType::Int4 || from == DType::Int2 ? DType::Int8 : DType::UInt8;
      Tensor w(wide, x.dims());
      std::memcpy(w.raw(), x.raw(), x.nbytes());
      return cast_tensor(ctx, w, to);
    }
    Tensor f(DType::Float, x.dims());
    for (int64_t i = 0; i < n; ++i) f.data<float>()[i] = static_cast<float>(x.as_double(i));
    return cast_tensor(ctx, f, to);
  }
  const Tensor d = cast_tensor(ctx, x, DType::Double);
  const NarrowCast c = narrow_cast_attrs(ctx);
  Tensor o(to, x.dims());
  for (int64_t i = 0; i < n; ++i) o.data<uint8_t>()[i] = ir::narrow_from_double(to, d.data<double>()[i], c.saturate, c.rounding);
  return o;
}

Tensor cast_tensor(const KernelContext& ctx, const Tensor& x, DType to) {
  check_source(ctx.node(), x.dtype());
  if (x.dtype() == to) return x;
  if (dtype_is_narrow(x.dtype()) || dtype_is_narrow(to)) return cast_narrow(ctx, x, to);
  Tensor o(to, x.dims());
  const int64_t n = x.numel();
  if (x.dtype() == DType::String) {
    const std::string* px = x.data<std::string>();
    dispatch_numeric_bool(to, [&](auto tag) {
      using To = decltype(tag);
      To* po = o.data<To>();
      for (int64_t i = 0; i < n; ++i)
        if (!from_string_value(px[i], po[i]))
          ctx.fail("cannot parse '" + px[i] + "' as " + dtype_name(to));
    });
    return o;
  }
  dispatch_numeric_bool(x.dtype(), [&](auto ftag) {
    using From = decltype(ftag);
    const From* px = x.data<From>();
    if (to == DType::String) {
      std::string* po = o.data<std::string>();
      for (int64_t i = 0; i < n; ++i) po[i] = to_string_value(px[i]);
      return;
    }
    dispatch_numeric_bool(to, [&](auto ttag) {
      using To = decltype(ttag);
      To* po = o.data<To>();
      for (int64_t i = 0; i < n; ++i) po[i] = convert<From, To>(px[i]);
    });
  });
  return o;
}

}  // namespace

KILN_REGISTER_OPS(cast) {
  reg.add({.name = "Cast", .since_version = 1, .max_version = 24, .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::ElemWise,
           .infer = [](InferContext& ctx) {
             check_source(ctx.node(), ctx.input(0).dtype);
             infer_same_shape(ctx, cast_target(ctx.node()));
           },
           .kernel = [](KernelContext& ctx) {
             ctx.set_output(0, cast_tensor(ctx, ctx.input(0), cast_target(ctx.node())));
           }});
  reg.add({.name = "CastLike", .since_version = 15, .max_version = 24, .min_inputs = 2, .max_inputs = 2, .pattern = PatternKind::ElemWise,
           .infer = [](InferContext& ctx) {
             check_source(ctx.node(), ctx.input(0).dtype);
             DType to = ctx.input(1).dtype;
             if (to != DType::Undefined && !castable(to))
               throw UnsupportedError(ctx.node().describe() + ": cast to " + dtype_name(to) + " is not supported");
             infer_same_shape(ctx, to);
           },
           .kernel = [](KernelContext& ctx) {
             DType to = ctx.input(1).dtype();
             if (!castable(to))
               throw UnsupportedError(ctx.node().describe() + ": cast to " + dtype_name(to) + " is not supported");
             ctx.set_output(0, cast_tensor(ctx, ctx.input(0), to));
           }});
}

}  // namespace kiln::ops
