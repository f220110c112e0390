// Calls a generic lambda with a value of the C++ type that matches a runtime dtype:
//
//   dispatch_all(t.dtype(), [&](auto tag) { using T = decltype(tag); ... });
//
// compute_t<T> is the type to do arithmetic in (float for the 16-bit float types).
#pragma once
#include <kiln/error.h>
#include <kiln/tensor.h>

#include <string>
#include <type_traits>

namespace kiln::ir {

template <typename T>
using compute_t = std::conditional_t<std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>, float, T>;

template <typename T>
constexpr bool is_float_v = std::is_floating_point_v<T> || std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

[[noreturn]] void throw_unsupported_dtype(DType t, const char* what);

// Floating types: float, double, float16, bfloat16.
template <typename F>
decltype(auto) dispatch_float(DType t, F&& f) {
  switch (t) {
    case DType::Float: return f(float{});
    case DType::Double: return f(double{});
    case DType::Float16: return f(Float16{});
    case DType::BFloat16: return f(BFloat16{});
    default: throw_unsupported_dtype(t, "floating-point");
  }
}

// Integer types (no bool).
template <typename F>
decltype(auto) dispatch_int(DType t, F&& f) {
  switch (t) {
    case DType::Int8: return f(int8_t{});
    case DType::Int16: return f(int16_t{});
    case DType::Int32: return f(int32_t{});
    case DType::Int64: return f(int64_t{});
    case DType::UInt8: return f(uint8_t{});
    case DType::UInt16: return f(uint16_t{});
    case DType::UInt32: return f(uint32_t{});
    case DType::UInt64: return f(uint64_t{});
    default: throw_unsupported_dtype(t, "integer");
  }
}

// Every numeric type (floats and integers, no bool/string).
template <typename F>
decltype(auto) dispatch_numeric(DType t, F&& f) {
  switch (t) {
    case DType::Float: return f(float{});
    case DType::Double: return f(double{});
    case DType::Float16: return f(Float16{});
    case DType::BFloat16: return f(BFloat16{});
    case DType::Int8: return f(int8_t{});
    case DType::Int16: return f(int16_t{});
    case DType::Int32: return f(int32_t{});
    case DType::Int64: return f(int64_t{});
    case DType::UInt8: return f(uint8_t{});
    case DType::UInt16: return f(uint16_t{});
    case DType::UInt32: return f(uint32_t{});
    case DType::UInt64: return f(uint64_t{});
    default: throw_unsupported_dtype(t, "numeric");
  }
}

// Numeric types plus bool.
template <typename F>
decltype(auto) dispatch_numeric_bool(DType t, F&& f) {
  if (t == DType::Bool) return f(bool{});
  return dispatch_numeric(t, std::forward<F>(f));
}

// Every type including string; data movement ops (Gather, Concat, Transpose...) use this and
// copy elements with plain assignment.
// The narrow types (dtype_is_narrow) come as their byte storage, uint8_t.
template <typename F>
decltype(auto) dispatch_all(DType t, F&& f) {
  if (t == DType::String) return f(std::string{});
  if (dtype_is_narrow(t)) return f(uint8_t{});
  return dispatch_numeric_bool(t, std::forward<F>(f));
}

}  // namespace kiln::ir
