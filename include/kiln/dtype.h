// Element types. The numbering is ONNX's TensorProto.DataType so conversion is a cast.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace kiln {

enum class DType : int32_t {
  Undefined = 0,
  Float = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Double = 11,
  UInt32 = 12,
  UInt64 = 13,
  Complex64 = 14,
  Complex128 = 15,
  BFloat16 = 16,
  // ONNX's narrow types (IR 9-11). kiln keeps one element per byte in memory (the int types
  // sign- or zero-extended, the floats as their bit pattern in the low bits) and packs the
  // sub-byte ones only in files; arithmetic converts them (Cast, QuantizeLinear,
  // DequantizeLinear), data movement copies them as bytes.
  Float8E4M3FN = 17,
  Float8E4M3FNUZ = 18,
  Float8E5M2 = 19,
  Float8E5M2FNUZ = 20,
  UInt4 = 21,
  Int4 = 22,
  Float4E2M1 = 23,
  Float8E8M0 = 24,
  UInt2 = 25,
  Int2 = 26,
};

// Bytes per element (String: sizeof(std::string); Undefined: 0).
size_t dtype_size(DType t);
// ONNX spelling: "float", "int64", "float16", ...
std::string dtype_name(DType t);
bool dtype_is_float(DType t);    // float16/bfloat16/float/double
bool dtype_is_integer(DType t);  // signed or unsigned integer (not bool)
bool dtype_is_signed(DType t);
// The narrow types above (Float8*, Float4E2M1, [U]Int4, [U]Int2): stored a byte each.
bool dtype_is_narrow(DType t);
// Bits per element in ONNX's packed form (4 for [u]int4 and float4e2m1, 2 for [u]int2,
// 8 * dtype_size otherwise; 0 for string and undefined).
int dtype_bits(DType t);
// Throws kiln::Error for numbers that are not a known DType.
DType dtype_from_onnx(int32_t v);

// 16-bit float storage types; arithmetic goes through float.
struct Float16 {
  uint16_t bits = 0;
  Float16() = default;
  explicit Float16(float f);
  operator float() const;
};
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float f);
  operator float() const;
};

}  // namespace kiln
