// Static types of IR values: a dtype and a shape whose dims are integers or named symbols
// ("batch", "seq"), or a shape of unknown rank.
#pragma once
#include <kiln/dtype.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::ir {

struct Dim {
  int64_t value = -1;  // >= 0 when static
  std::string symbol;  // non-empty when symbolic; both empty/-1 = unknown

  Dim() = default;
  Dim(int64_t v) : value(v) {}  // NOLINT: ints convert implicitly
  static Dim sym(std::string s) { Dim d; d.symbol = std::move(s); return d; }
  static Dim unknown() { return Dim(); }
  bool is_static() const { return value >= 0; }
  bool is_symbolic() const { return value < 0 && !symbol.empty(); }
  bool operator==(const Dim& o) const { return value == o.value && symbol == o.symbol; }
  // True when both are known to be the same extent (equal ints or the same symbol).
  bool same_as(const Dim& o) const {
    return is_static() ? value == o.value : (!symbol.empty() && symbol == o.symbol);
  }
  std::string str() const;
};

// The type of a tensor value, or of a sequence of tensors / an optional (then dtype and dims
// describe the element).
struct TensorType {
  DType dtype = DType::Undefined;
  bool rank_known = false;
  std::vector<Dim> dims;
  bool is_sequence = false;
  bool is_optional = false;

  TensorType() = default;
  TensorType(DType t, std::vector<Dim> d) : dtype(t), rank_known(true), dims(std::move(d)) {}
  static TensorType unranked(DType t) { TensorType r; r.dtype = t; return r; }
  static TensorType from_dims(DType t, const std::vector<int64_t>& d);

  int rank() const { return static_cast<int>(dims.size()); }
  bool is_static() const;
  // Only for static shapes; throws kiln::Error otherwise.
  std::vector<int64_t> static_dims() const;
  std::optional<int64_t> static_numel() const;
  bool is_tensor() const { return !is_sequence && !is_optional; }
  // "float[batch,3,224,224]", "int64[?]", "float[*]" (unknown rank), "seq<float[*]>",
  // "optional<float[2]>".
  std::string str() const;
};

}  // namespace kiln::ir
