#include "codegen/cpp/emit_context.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace kiln::codegen::cpp {

std::string ctype(DType t) {
  switch (t) {
    case DType::Float: return "float";
    case DType::Double: return "double";
    case DType::Int8: return "int8_t";
    case DType::UInt8: return "uint8_t";
    case DType::Int16: return "int16_t";
    case DType::UInt16: return "uint16_t";
    case DType::Int32: return "int32_t";
    case DType::UInt32: return "uint32_t";
    case DType::Int64: return "int64_t";
    case DType::UInt64: return "uint64_t";
    case DType::Bool: return "bool";
    default: throw UnsupportedError("generated C++ has no element type " + dtype_name(t) + " yet");
  }
}

std::string literal_float(float v) {
  if (std::isnan(v)) return "NAN";
  if (std::isinf(v)) return v > 0 ? "INFINITY" : "-INFINITY";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + "f";
}

std::string c_string(const std::string& s) {
  std::string r = "\"";
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') {
      r += '\\';
      r += static_cast<char>(ch);
    } else if (ch < 32 || ch >= 127) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", ch);
      r += buf;
    } else {
      r += static_cast<char>(ch);
    }
  }
  return r + "\"";
}

std::string literal(DType t, double v) {
  if (t == DType::Float) return literal_float(static_cast<float>(v));
  if (t == DType::Double) {
    if (std::isnan(v)) return "double(NAN)";
    if (std::isinf(v)) return v > 0 ? "double(INFINITY)" : "double(-INFINITY)";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    std::string s = buf;
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return s;
  }
  if (t == DType::Bool) return v != 0 ? "true" : "false";
  if (t == DType::Int64 && v == static_cast<double>(std::numeric_limits<int64_t>::min())) return "INT64_MIN";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return ctype(t) + "(" + buf + (t == DType::UInt64 ? "ull" : t == DType::Int64 ? "ll" : "") + ")";
}

std::string EmitContext::ptr(const Operand& o, bool writable) const {
  const std::string t = (writable ? "" : "const ") + ctype(o.dtype) + "*";
  switch (o.storage.kind) {
    case StorageKind::Input:
      if (writable) throw unsupported("writes its input " + o.value->name() + ", a caller's input");
      return "static_cast<" + t + ">(c.in[" + std::to_string(o.storage.index) + "])";
    case StorageKind::Output:
      return "static_cast<" + t + ">(c.out[" + std::to_string(o.storage.index) + "])";
    case StorageKind::Arena:
      return "reinterpret_cast<" + t + ">(c.arena + " + std::to_string(o.storage.offset) + ")";
    case StorageKind::Constant: {
      if (writable) throw unsupported("writes the constant " + o.value->name());
      const Tensor& c = o.value->constant();
      return const_cast<EmitContext*>(this)->weights(
          "const:" + o.value->name(), std::string_view(static_cast<const char*>(c.raw()), c.nbytes()), o.dtype);
    }
  }
  return "";
}

std::string EmitContext::weights(const std::string& key, std::string_view bytes, DType t) {
  const int64_t at = weights_.add(key, bytes);
  return "reinterpret_cast<const " + ctype(t) + "*>(c.w + " + std::to_string(at) + ")";
}

std::string EmitContext::state(const std::string& type, const std::string& args) {
  if (!states) throw unsupported("this target keeps no per-model state");
  const std::string name = "st_" + function + (state_made_++ ? "_" + std::to_string(state_made_) : "");
  states->push_back({type, name, args});
  return "c.state->" + name;
}

const Tensor& EmitContext::constant(int i) const {
  if (!is_constant(i)) throw unsupported("input " + std::to_string(i) + " must be a constant");
  return step.inputs[i].value->constant();
}

UnsupportedError EmitContext::unsupported(const std::string& why) const {
  return UnsupportedError(std::string("kiln compile --target ") + (cuda ? "cuda" : "cpp") + ": " + node.describe() + " [" + step.instruction->spec.str() +
                          "]: " + why);
}

}  // namespace kiln::codegen::cpp
