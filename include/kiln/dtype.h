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
};

// Bytes per element (String: sizeof(std::string); Undefined: 0).
size_t dtype_size(DType t);
// ONNX spelling: "float", "int64", "float16", ...
std::string dtype_name(DType t);
bool dtype_is_float(DType t);    // float16/bfloat16/float/double
bool dtype_is_integer(DType t);  // signed or unsigned integer (not bool)
bool dtype_is_signed(DType t);
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
