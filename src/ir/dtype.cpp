#include <kiln/dtype.h>
#include <kiln/error.h>

#include <bit>
#include <cstring>
#include <string>

namespace kiln {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::Float: case DType::Int32: case DType::UInt32: return 4;
    case DType::UInt8: case DType::Int8: case DType::Bool: return 1;
    case DType::Float8E4M3FN: case DType::Float8E4M3FNUZ: case DType::Float8E5M2: case DType::Float8E5M2FNUZ:
    case DType::UInt4: case DType::Int4: case DType::Float4E2M1: case DType::Float8E8M0: case DType::UInt2:
    case DType::Int2: return 1;
    case DType::UInt16: case DType::Int16: case DType::Float16: case DType::BFloat16: return 2;
    case DType::Int64: case DType::Double: case DType::UInt64: case DType::Complex64: return 8;
    case DType::Complex128: return 16;
    case DType::String: return sizeof(std::string);
    case DType::Undefined: return 0;
  }
  return 0;
}

std::string dtype_name(DType t) {
  switch (t) {
    case DType::Undefined: return "undefined";
    case DType::Float: return "float";
    case DType::UInt8: return "uint8";
    case DType::Int8: return "int8";
    case DType::UInt16: return "uint16";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::String: return "string";
    case DType::Bool: return "bool";
    case DType::Float16: return "float16";
    case DType::Double: return "double";
    case DType::UInt32: return "uint32";
    case DType::UInt64: return "uint64";
    case DType::Complex64: return "complex64";
    case DType::Complex128: return "complex128";
    case DType::BFloat16: return "bfloat16";
    case DType::Float8E4M3FN: return "float8e4m3fn";
    case DType::Float8E4M3FNUZ: return "float8e4m3fnuz";
    case DType::Float8E5M2: return "float8e5m2";
    case DType::Float8E5M2FNUZ: return "float8e5m2fnuz";
    case DType::UInt4: return "uint4";
    case DType::Int4: return "int4";
    case DType::Float4E2M1: return "float4e2m1";
    case DType::Float8E8M0: return "float8e8m0";
    case DType::UInt2: return "uint2";
    case DType::Int2: return "int2";
  }
  return "dtype(" + std::to_string(static_cast<int>(t)) + ")";
}

bool dtype_is_float(DType t) {
  return t == DType::Float || t == DType::Double || t == DType::Float16 || t == DType::BFloat16;
}
bool dtype_is_integer(DType t) {
  switch (t) {
    case DType::UInt8: case DType::Int8: case DType::UInt16: case DType::Int16:
    case DType::Int32: case DType::Int64: case DType::UInt32: case DType::UInt64: return true;
    default: return false;
  }
}
bool dtype_is_signed(DType t) {
  return t == DType::Int8 || t == DType::Int16 || t == DType::Int32 || t == DType::Int64 || dtype_is_float(t);
}

bool dtype_is_narrow(DType t) {
  const auto v = static_cast<int32_t>(t);
  return v >= static_cast<int32_t>(DType::Float8E4M3FN) && v <= static_cast<int32_t>(DType::Int2);
}

int dtype_bits(DType t) {
  switch (t) {
    case DType::UInt4: case DType::Int4: case DType::Float4E2M1: return 4;
    case DType::UInt2: case DType::Int2: return 2;
    case DType::String: case DType::Undefined: return 0;
    default: return static_cast<int>(8 * dtype_size(t));
  }
}

DType dtype_from_onnx(int32_t v) {
  if (v < 0 || v > static_cast<int32_t>(DType::Int2)) throw Error("unknown tensor data type " + std::to_string(v));
  return static_cast<DType>(v);
}

// IEEE half <-> float with round-to-nearest-even, handling subnormals, inf and NaN.
Float16::Float16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mag = x & 0x7fffffffu;
  if (mag >= 0x7f800000u) {  // inf or nan
    bits = static_cast<uint16_t>(sign | 0x7c00u | (mag > 0x7f800000u ? 0x200u : 0));
    return;
  }
  if (mag >= 0x477ff000u) {  // rounds to >= 65520: overflow to inf
    bits = static_cast<uint16_t>(sign | 0x7c00u);
    return;
  }
  if (mag < 0x38800000u) {  // subnormal half (or zero)
    float af = std::bit_cast<float>(mag);
    // Scale so the half subnormal unit (2^-24) becomes 1, then round to nearest even.
    float scaled = af * 16777216.0f;
    uint32_t q = static_cast<uint32_t>(scaled);
    float rem = scaled - static_cast<float>(q);
    if (rem > 0.5f || (rem == 0.5f && (q & 1u))) ++q;
    bits = static_cast<uint16_t>(sign | q);
    return;
  }
  uint32_t exp = ((mag >> 23) - 112u) << 10;
  uint32_t mant = (mag >> 13) & 0x3ffu;
  uint32_t h = exp | mant;
  uint32_t rest = mag & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  bits = static_cast<uint16_t>(sign | h);
}

Float16::operator float() const {
  uint32_t sign = (static_cast<uint32_t>(bits) & 0x8000u) << 16;
  uint32_t exp = (bits >> 10) & 0x1fu;
  uint32_t mant = bits & 0x3ffu;
  uint32_t out;
  if (exp == 0) {
    if (mant == 0) {
      out = sign;
    } else {
      float f = static_cast<float>(mant) / 16777216.0f;
      return sign ? -f : f;
    }
  } else if (exp == 31) {
    out = sign | 0x7f800000u | (mant << 13);
  } else {
    out = sign | ((exp + 112u) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(out);
}

BFloat16::BFloat16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    bits = static_cast<uint16_t>((x >> 16) | 0x40u);
    return;
  }
  uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;
  bits = static_cast<uint16_t>(x >> 16);
}

BFloat16::operator float() const { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

}  // namespace kiln
