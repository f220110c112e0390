// A copy in which each output coordinate reads the input at a source coordinate given per axis
// by a table (-1: the fill value instead): Pad's reflect, edge and wrap modes (and constant) and
// Tile, for emitted code. The tables are the emitter's, made by the same mapping the runtime's
// kernels use (ops/core/pad_args.h's pad_source, a coordinate modulo the input's extent).
#pragma once
#include <cstdint>

namespace kiln_kernels {

// y [ydims] (rank >= 1): y[o] = x[sum over k of src[k][o_k] * xstrides[k]], or fill where any
// src[k][o_k] is -1. Row by row of the last axis.
template <typename T>
inline void axis_gather(int64_t rank, const int64_t* ydims, const int64_t* xstrides, const int64_t* const* src,
                        const T* x, T* y, T fill) {
  int64_t rows = 1;
  for (int64_t k = 0; k + 1 < rank; ++k) rows *= ydims[k];
  const int64_t inner = ydims[rank - 1], xs = xstrides[rank - 1];
  const int64_t* s = src[rank - 1];
  int64_t at[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // the row's outer coordinates (rank <= 9)
  for (int64_t r = 0; r < rows; ++r) {
    int64_t base = 0;
    bool inside = true;
    for (int64_t k = 0; k + 1 < rank; ++k) {
      const int64_t c = src[k][at[k]];
      if (c < 0) inside = false;
      base += c * xstrides[k];
    }
    T* yr = y + r * inner;
    if (!inside) {
      for (int64_t i = 0; i < inner; ++i) yr[i] = fill;
    } else {
      for (int64_t i = 0; i < inner; ++i) yr[i] = s[i] < 0 ? fill : x[base + s[i] * xs];
    }
    for (int64_t k = rank - 2; k >= 0; --k) {  // the next row's coordinates
      if (++at[k] < ydims[k]) break;
      at[k] = 0;
    }
  }
}

}  // namespace kiln_kernels
