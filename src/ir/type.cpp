#include "ir/type.h"

#include <kiln/error.h>

namespace kiln::ir {

std::string Dim::str() const {
  if (is_static()) return std::to_string(value);
  return symbol.empty() ? "?" : symbol;
}

TensorType TensorType::from_dims(DType t, const std::vector<int64_t>& d) {
  std::vector<Dim> dims(d.begin(), d.end());
  return TensorType(t, std::move(dims));
}

bool TensorType::is_static() const {
  if (!rank_known) return false;
  for (const Dim& d : dims)
    if (!d.is_static()) return false;
  return true;
}

std::vector<int64_t> TensorType::static_dims() const {
  if (!is_static()) throw Error("shape " + str() + " is not static");
  std::vector<int64_t> out;
  out.reserve(dims.size());
  for (const Dim& d : dims) out.push_back(d.value);
  return out;
}

std::optional<int64_t> TensorType::static_numel() const {
  if (!is_static()) return std::nullopt;
  int64_t n = 1;
  for (const Dim& d : dims) n *= d.value;
  return n;
}

std::string TensorType::str() const {
  std::string s = dtype_name(dtype) + "[";
  if (!rank_known) {
    s += "*]";
  } else {
    for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + dims[i].str();
    s += "]";
  }
  if (is_sequence) s = "seq<" + s + ">";
  if (is_optional) s = "optional<" + s + ">";
  return s;
}

}  // namespace kiln::ir
