// A dense copy of a strided view of a tensor, the loop under every transpose, slice, split,
// tile and broadcast copy in kiln: the reference kernels, the layout pass's constants and the
// CPU backend's StridedCopy (which adds a blocked-transpose path and splits rows across threads).
//
//   out[i_0, ..., i_{r-1}] = in[base + sum_k i_k * strides[k]]     out dense, of extents dims
//
// Strides and base count elements; a stride may be 0 (a broadcast axis) or negative (base then
// points at the element the view starts from). The output is walked as rows of its last axis:
// each row reads dims[r-1] elements strides[r-1] apart (one memcpy when that is 1), and an
// odometer over the outer axes steps the input offset from row to row.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace kiln::ir {

// Rows [row_begin, row_end) of the copy, a row being one run along the last axis (rank 0: the
// single element is row 0). For callers that split the rows between threads.
template <typename T>
void strided_copy_rows(const T* in, T* out, const int64_t* dims, const int64_t* strides, int rank, int64_t base,
                       int64_t row_begin, int64_t row_end) {
  if (row_begin >= row_end) return;
  if (rank == 0) {
    out[0] = in[base];
    return;
  }
  const int64_t inner = dims[rank - 1], inner_stride = strides[rank - 1];
  // The input offset of row `row_begin`, then an odometer over the outer axes.
  std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
  int64_t off = base, rest = row_begin;
  for (int k = rank - 2; k >= 0; --k) {
    idx[k] = rest % dims[k];
    rest /= dims[k];
    off += idx[k] * strides[k];
  }
  for (int64_t row = row_begin; row < row_end; ++row) {
    T* o = out + row * inner;
    const T* s = in + off;
    if constexpr (std::is_trivially_copyable_v<T>) {
      if (inner_stride == 1) std::memcpy(o, s, static_cast<size_t>(inner) * sizeof(T));
      else for (int64_t j = 0; j < inner; ++j) o[j] = s[j * inner_stride];
    } else {
      for (int64_t j = 0; j < inner; ++j) o[j] = s[j * inner_stride];
    }
    for (int k = rank - 2; k >= 0; --k) {
      off += strides[k];
      if (++idx[k] < dims[k]) break;
      off -= strides[k] * dims[k];
      idx[k] = 0;
    }
  }
}

// The whole copy.
template <typename T>
void strided_copy(const T* in, T* out, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                  int64_t base = 0) {
  int64_t rows = 1;
  for (size_t k = 0; k + 1 < dims.size(); ++k) rows *= dims[k];
  if (!dims.empty() && dims.back() == 0) rows = 0;
  strided_copy_rows(in, out, dims.data(), strides.data(), static_cast<int>(dims.size()), base, 0, rows);
}

// 16 bytes moved as one element (complex128).
struct Bytes16 {
  uint64_t lo, hi;
};

// Calls f(T{}) with the trivially copyable type of `elem_size` bytes (1, 2, 4, 8 or 16) that moves
// elements of that size; returns false, calling nothing, for any other size.
template <typename F>
bool visit_elem_size(size_t elem_size, F&& f) {
  switch (elem_size) {
    case 1: f(uint8_t{}); return true;
    case 2: f(uint16_t{}); return true;
    case 4: f(uint32_t{}); return true;
    case 8: f(uint64_t{}); return true;
    case 16: f(Bytes16{}); return true;
    default: return false;
  }
}

// strided_copy on raw elements of `elem_size` bytes, for any dtype but String; false (nothing
// copied) for a size visit_elem_size does not move.
inline bool strided_copy_bytes(const void* in, void* out, const std::vector<int64_t>& dims,
                               const std::vector<int64_t>& strides, size_t elem_size, int64_t base = 0) {
  return visit_elem_size(elem_size, [&](auto tag) {
    using T = decltype(tag);
    strided_copy(static_cast<const T*>(in), static_cast<T*>(out), dims, strides, base);
  });
}

}  // namespace kiln::ir
