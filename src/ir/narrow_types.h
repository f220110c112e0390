// Values of ONNX's narrow element types (float8 e4m3fn/e4m3fnuz/e5m2/e5m2fnuz/e8m0,
// float4e2m1, [u]int4, [u]int2) and their packed file form.
//
// In memory kiln holds one element per byte: the floats as their bit pattern (float4e2m1 in
// the low nibble), int4/int2 sign-extended to int8 and uint4/uint2 as uint8. Files pack 4-bit
// types two to a byte and 2-bit types four to a byte, the first element in the low bits.
#pragma once
#include <kiln/dtype.h>

#include <cstdint>
#include <string_view>

namespace kiln::ir {

// How Cast rounds to float8e8m0 (a power of two): ONNX's round_mode "up", "down", "nearest".
enum class PowerRounding { Up, Down, Nearest };
// Throws kiln::Error for a name that is not one of the three.
PowerRounding power_rounding_from_name(std::string_view name);

// The value of one stored element of a narrow type (NaN for NaN encodings).
double narrow_to_double(DType t, uint8_t stored);

// The stored element nearest to v. The floats round to nearest even; out of range they
// saturate to the largest finite value when `saturate`, else become infinity (e5m2) or NaN.
// float4e2m1 always saturates; float8e8m0 rounds per `rounding`. The int types take v's
// integer part and wrap to their width, as Cast to the other integer types does.
uint8_t narrow_from_double(DType t, double v, bool saturate = true, PowerRounding rounding = PowerRounding::Up);

// Packed bytes of n elements of a narrow type (dtype_bits(t) < 8) to one byte each, and back.
void unpack_narrow(DType t, const uint8_t* packed, int64_t n, uint8_t* out);
void pack_narrow(DType t, const uint8_t* in, int64_t n, uint8_t* packed);
// Bytes of n packed elements.
int64_t packed_bytes(DType t, int64_t n);

}  // namespace kiln::ir
