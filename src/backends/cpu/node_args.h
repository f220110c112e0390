// Checks the data-movement and reduction factories share: which values have a static shape and
// an element type that can be moved by bytes, and the compile-time integer lists (axes, starts,
// split sizes) some ops take as constant inputs.
#pragma once
#include <kiln/tensor.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace kiln::backends::cpu {

// Bytes per element when v is a tensor of static shape whose elements are plain bytes; 0 when
// it is not (unknown dims, strings, sequences), so the caller declines.
inline size_t plain_elem_size(const ir::Value* v) {
  if (!v || !v->type.is_tensor() || !v->type.rank_known || !v->type.is_static()) return 0;
  if (v->type.dtype == DType::String || v->type.dtype == DType::Undefined) return 0;
  return dtype_size(v->type.dtype);
}

// axis in [-rank, rank) mapped to [0, rank); nullopt when out of range.
inline std::optional<int64_t> axis_in(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

// The values of constant integer input i; nullopt when it is absent, not constant or not an
// integer tensor of rank <= 1.
inline std::optional<std::vector<int64_t>> constant_ints(const ir::Node& node, int i) {
  const ir::Value* v = node.input(i);
  if (!v || !v->is_constant()) return std::nullopt;
  const Tensor& t = v->constant();
  if (!t.defined() || t.kind() != ValueKind::Tensor || !dtype_is_integer(t.dtype()) || t.rank() > 1)
    return std::nullopt;
  return t.to_int64_vector();
}

inline int64_t dims_product(const std::vector<int64_t>& d, size_t b, size_t e) {
  int64_t p = 1;
  for (size_t i = b; i < e && i < d.size(); ++i) p *= d[i];
  return p;
}

}  // namespace kiln::backends::cpu
