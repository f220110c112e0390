// Resize along at most two axes from per-axis tap tables (ops/core/resize_geometry.h plans
// them): y [outer][a.out][mid][b.out][inner] from x [outer][a.in][mid][b.in][inner]. Separable:
// per output row along a, the source rows are blended (a unit-stride loop over the whole row),
// then each output along b takes its taps from the blend. One axis: b null, y
// [outer][a.out][inner]. The CPU backend runs Resize with it, and emitted code calls it.
#pragma once
#include "common.h"

namespace kiln_kernels {

struct ResizeAxis {
  int taps;            // 1 nearest, 2 linear, 4 cubic, more for antialiased downscales
  int64_t in, out;     // extents
  const int64_t* idx;  // out * taps input indices
  const float* w;      // out * taps weights
};

namespace detail {

// One blended row along b with T taps per output, the elements one apart (inner == 1).
template <int T>
inline void resize_taps(int64_t mid, int64_t bin, int64_t bout, const ResizeAxis& b, const float* KILN_RESTRICT blend,
                        float* KILN_RESTRICT yr) {
  for (int64_t m = 0; m < mid; ++m) {
    const float* KILN_RESTRICT src = blend + m * bin;
    float* KILN_RESTRICT yp = yr + m * bout;
    for (int64_t i1 = 0; i1 < bout; ++i1) {
      float acc = 0.f;
#pragma GCC unroll 4
      for (int k = 0; k < T; ++k) acc += b.w[i1 * T + k] * src[b.idx[i1 * T + k]];
      yp[i1] = acc;
    }
  }
}

}  // namespace detail

// Output rows [row0, row1) of the outer * a.out rows; `blend`: mid * b.in * inner floats of
// scratch (unused without b).
inline void resize_rows(int64_t row0, int64_t row1, int64_t mid, int64_t inner, const ResizeAxis& a,
                        const ResizeAxis* b, const float* KILN_RESTRICT x, float* KILN_RESTRICT y,
                        float* KILN_RESTRICT blend) {
  const int64_t bin = b ? b->in : 1, bout = b ? b->out : 1;
  const int64_t in_block = mid * bin * inner, out_block = mid * bout * inner;
  for (int64_t r = row0; r < row1; ++r) {
    const int64_t o = r / a.out, i0 = r % a.out;
    float* KILN_RESTRICT t = b ? blend : y + r * out_block;
    for (int64_t j = 0; j < in_block; ++j) t[j] = 0.f;
    for (int k = 0; k < a.taps; ++k) {
      const float w = a.w[i0 * a.taps + k];
      if (w == 0.f) continue;
      const float* KILN_RESTRICT src = x + (o * a.in + a.idx[i0 * a.taps + k]) * in_block;
      for (int64_t j = 0; j < in_block; ++j) t[j] += w * src[j];
    }
    if (!b) continue;
    float* KILN_RESTRICT yr = y + r * out_block;
    if (inner == 1 && (b->taps == 1 || b->taps == 2 || b->taps == 4)) {
      if (b->taps == 1) detail::resize_taps<1>(mid, bin, bout, *b, blend, yr);
      else if (b->taps == 2) detail::resize_taps<2>(mid, bin, bout, *b, blend, yr);
      else detail::resize_taps<4>(mid, bin, bout, *b, blend, yr);
      continue;
    }
    for (int64_t m = 0; m < mid; ++m)
      for (int64_t i1 = 0; i1 < bout; ++i1) {
        float* KILN_RESTRICT yp = yr + (m * bout + i1) * inner;
        for (int64_t i = 0; i < inner; ++i) yp[i] = 0.f;
        for (int k = 0; k < b->taps; ++k) {
          const float w = b->w[i1 * b->taps + k];
          const float* KILN_RESTRICT src = blend + (m * bin + b->idx[i1 * b->taps + k]) * inner;
          for (int64_t i = 0; i < inner; ++i) yp[i] += w * src[i];
        }
      }
  }
}

}  // namespace kiln_kernels
