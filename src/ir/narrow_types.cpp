#include "ir/narrow_types.h"

#include <kiln/error.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

namespace kiln::ir {

namespace {

// A sign / exponent / mantissa float of at most 8 bits, and how it spells NaN and infinity:
// IEEE-like (all-ones exponent is inf or NaN), FN (finite; only all-ones is NaN), FNUZ
// (finite, no negative zero: 0x80 is NaN) or none at all (float4e2m1).
struct MiniFloat {
  enum class Special { Ieee, Fn, Fnuz, None };
  int exp_bits, mant_bits, bias;
  Special special;
  double max;  // largest finite value

  int bits() const { return 1 + exp_bits + mant_bits; }
  uint32_t sign_bit() const { return 1u << (bits() - 1); }
  uint32_t exp_max() const { return (1u << exp_bits) - 1; }
};

const MiniFloat& mini_float(DType t) {
  using S = MiniFloat::Special;
  static const MiniFloat e4m3fn{4, 3, 7, S::Fn, 448.0}, e4m3fnuz{4, 3, 8, S::Fnuz, 240.0},
      e5m2{5, 2, 15, S::Ieee, 57344.0}, e5m2fnuz{5, 2, 16, S::Fnuz, 57344.0}, e2m1{2, 1, 1, S::None, 6.0};
  switch (t) {
    case DType::Float8E4M3FN: return e4m3fn;
    case DType::Float8E4M3FNUZ: return e4m3fnuz;
    case DType::Float8E5M2: return e5m2;
    case DType::Float8E5M2FNUZ: return e5m2fnuz;
    case DType::Float4E2M1: return e2m1;
    default: throw Error("not a small float type: " + dtype_name(t));
  }
}

double decode(const MiniFloat& f, uint32_t b) {
  using S = MiniFloat::Special;
  const bool neg = (b & f.sign_bit()) != 0;
  const uint32_t exp = (b >> f.mant_bits) & f.exp_max();
  const uint32_t mant = b & ((1u << f.mant_bits) - 1);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (f.special == S::Fnuz && b == f.sign_bit()) return nan;
  if (f.special == S::Fn && exp == f.exp_max() && mant == (1u << f.mant_bits) - 1) return nan;
  if (f.special == S::Ieee && exp == f.exp_max())
    return mant ? nan : (neg ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity());
  const double mag = exp == 0 ? std::ldexp(static_cast<double>(mant), 1 - f.bias - f.mant_bits)
                              : std::ldexp(static_cast<double>(mant + (1u << f.mant_bits)),
                                           static_cast<int>(exp) - f.bias - f.mant_bits);
  return neg ? -mag : mag;
}

uint8_t encode(const MiniFloat& f, double v, bool saturate) {
  using S = MiniFloat::Special;
  const uint32_t s = std::signbit(v) ? f.sign_bit() : 0;
  const bool uz = f.special == S::Fnuz;
  // float4e2m1 has no NaN; ONNX's reference writes its sign bit alone (negative zero).
  const uint32_t nan = uz || f.special == S::None ? f.sign_bit() : (s | (f.sign_bit() - 1));
  if (std::isnan(v)) return static_cast<uint8_t>(nan);
  saturate = saturate || f.special == S::None;
  double a = std::fabs(v);
  const uint32_t zero = uz ? 0 : s;
  if (a == 0) return static_cast<uint8_t>(zero);
  if (!std::isinf(a)) {
    // Round to nearest even on the grid of a's binade (the subnormal grid below the normals).
    const int emin = 1 - f.bias;
    const int e = std::max(std::ilogb(a), emin);
    const double quantum = std::ldexp(1.0, e - f.mant_bits);
    a = std::nearbyint(a / quantum) * quantum;
  }
  if (a > f.max) {
    if (saturate) a = f.max;
    else if (f.special == S::Ieee) return static_cast<uint8_t>(s | (f.exp_max() << f.mant_bits));
    else return static_cast<uint8_t>(nan);
  }
  if (a == 0) return static_cast<uint8_t>(zero);
  const int emin = 1 - f.bias;
  const int e = std::ilogb(a);
  uint32_t exp = 0, mant = 0;
  if (e < emin) {
    mant = static_cast<uint32_t>(a / std::ldexp(1.0, emin - f.mant_bits));
  } else {
    exp = static_cast<uint32_t>(e + f.bias);
    mant = static_cast<uint32_t>(a / std::ldexp(1.0, e - f.mant_bits)) - (1u << f.mant_bits);
  }
  return static_cast<uint8_t>(s | (exp << f.mant_bits) | mant);
}

// float8e8m0: an unsigned power of two 2^(code - 127), 0xFF is NaN. Rounds on float32's
// exponent and mantissa bits as ONNX's reference does.
uint8_t encode_e8m0(double v, bool saturate, PowerRounding rounding) {
  const uint32_t b = std::bit_cast<uint32_t>(static_cast<float>(v));
  uint32_t e = (b >> 23) & 0xffu;
  const uint32_t m = b & 0x7fffffu;
  if (e == 0xffu) return (m || !saturate) ? 0xff : 0xfe;
  if ((rounding == PowerRounding::Up && m != 0) || (rounding == PowerRounding::Nearest && (m & 0x400000u))) ++e;
  if (e == 0xffu) return saturate ? 0xfe : 0xff;
  return static_cast<uint8_t>(e);
}

// Integer part of v as Cast computes it for integers (NaN -> 0, saturating to int64).
int64_t integer_part(double v) {
  if (std::isnan(v)) return 0;
  if (v <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  if (v >= 9223372036854775808.0) return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(v);
}

// w's low `bits` bits, sign-extended when `is_signed`, as the stored byte.
uint8_t wrap_int(int64_t w, int bits, bool is_signed) {
  const int64_t mask = (int64_t{1} << bits) - 1;
  int64_t low = w & mask;
  if (is_signed && (low >> (bits - 1))) low -= mask + 1;
  return static_cast<uint8_t>(static_cast<int8_t>(low));
}

}  // namespace

PowerRounding power_rounding_from_name(std::string_view name) {
  if (name == "up") return PowerRounding::Up;
  if (name == "down") return PowerRounding::Down;
  if (name == "nearest") return PowerRounding::Nearest;
  throw Error("round_mode '" + std::string(name) + "' is not one of up, down, nearest");
}

double narrow_to_double(DType t, uint8_t stored) {
  switch (t) {
    case DType::Int4: case DType::Int2: return static_cast<int8_t>(stored);
    case DType::UInt4: case DType::UInt2: return stored;
    case DType::Float8E8M0:
      return stored == 0xff ? std::numeric_limits<double>::quiet_NaN() : std::ldexp(1.0, static_cast<int>(stored) - 127);
    default: return decode(mini_float(t), stored);
  }
}

uint8_t narrow_from_double(DType t, double v, bool saturate, PowerRounding rounding) {
  switch (t) {
    case DType::Int4: return wrap_int(integer_part(v), 4, true);
    case DType::UInt4: return wrap_int(integer_part(v), 4, false);
    case DType::Int2: return wrap_int(integer_part(v), 2, true);
    case DType::UInt2: return wrap_int(integer_part(v), 2, false);
    case DType::Float8E8M0: return encode_e8m0(v, saturate, rounding);
    default: return encode(mini_float(t), v, saturate);
  }
}

int64_t packed_bytes(DType t, int64_t n) {
  const int bits = dtype_bits(t);
  return (n * bits + 7) / 8;
}

void unpack_narrow(DType t, const uint8_t* packed, int64_t n, uint8_t* out) {
  const int bits = dtype_bits(t);
  const int per = 8 / bits;
  const uint32_t mask = (1u << bits) - 1;
  const bool is_signed = t == DType::Int4 || t == DType::Int2;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t v = (packed[i / per] >> ((i % per) * bits)) & mask;
    out[i] = is_signed ? wrap_int(v, bits, true) : static_cast<uint8_t>(v);
  }
}

void pack_narrow(DType t, const uint8_t* in, int64_t n, uint8_t* packed) {
  const int bits = dtype_bits(t);
  const int per = 8 / bits;
  const uint32_t mask = (1u << bits) - 1;
  std::memset(packed, 0, static_cast<size_t>(packed_bytes(t, n)));
  for (int64_t i = 0; i < n; ++i)
    packed[i / per] = static_cast<uint8_t>(packed[i / per] | ((in[i] & mask) << ((i % per) * bits)));
}

}  // namespace kiln::ir
