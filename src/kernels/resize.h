// Resize along at most two axes from per-axis tap tables (ops/core/resize_geometry.h plans
// them): y [outer][a.out][mid][b.out][inner] from x [outer][a.in][mid][b.in][inner]. Separable,
// in the cheaper order (resize_b_first): per output row along a, the source rows are blended (a
// unit-stride loop over the whole row) and then resized along b, or, upscaling along a, the
// source rows are resized along b once each and the output rows blended from those. One axis:
// b null, y [outer][a.out][inner]. The CPU backend runs Resize with it, and emitted code calls it.
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

// One row block along b: src [mid][b.in][inner] to dst [mid][b.out][inner].
inline void resize_b(int64_t mid, int64_t inner, const ResizeAxis& b, const float* KILN_RESTRICT src,
                     float* KILN_RESTRICT dst) {
  if (inner == 1 && (b.taps == 1 || b.taps == 2 || b.taps == 4)) {
    if (b.taps == 1) resize_taps<1>(mid, b.in, b.out, b, src, dst);
    else if (b.taps == 2) resize_taps<2>(mid, b.in, b.out, b, src, dst);
    else resize_taps<4>(mid, b.in, b.out, b, src, dst);
    return;
  }
  for (int64_t m = 0; m < mid; ++m)
    for (int64_t i1 = 0; i1 < b.out; ++i1) {
      float* KILN_RESTRICT yp = dst + (m * b.out + i1) * inner;
      for (int64_t i = 0; i < inner; ++i) yp[i] = 0.f;
      for (int k = 0; k < b.taps; ++k) {
        const float w = b.w[i1 * b.taps + k];
        const float* KILN_RESTRICT sp = src + (m * b.in + b.idx[i1 * b.taps + k]) * inner;
        for (int64_t i = 0; i < inner; ++i) yp[i] += w * sp[i];
      }
    }
}

// Most taps along a for which the b-first order keeps its source rows.
constexpr int kMaxCachedRows = 8;

}  // namespace detail

// The order of the two passes. An upscale along a reads each source row for several output
// rows: interpolating b once per source row (kept while the output rows still need it) leaves a
// unit-stride blend of whole resized rows per output row, and out/in times fewer taps along b,
// whose reads are gathers. Otherwise a first: blend the source rows, then b per output row.
inline bool resize_b_first(const ResizeAxis& a, const ResizeAxis* b) {
  return b && a.out > a.in && a.taps <= detail::kMaxCachedRows;
}

// Floats of scratch resize_rows needs per call (per thread).
inline int64_t resize_scratch_floats(int64_t mid, int64_t inner, const ResizeAxis& a, const ResizeAxis* b) {
  if (!b) return 1;
  return resize_b_first(a, b) ? a.taps * mid * b->out * inner : mid * b->in * inner;
}

// Output rows [row0, row1) of the outer * a.out rows; `scratch`: resize_scratch_floats floats.
inline void resize_rows(int64_t row0, int64_t row1, int64_t mid, int64_t inner, const ResizeAxis& a,
                        const ResizeAxis* b, const float* KILN_RESTRICT x, float* KILN_RESTRICT y,
                        float* KILN_RESTRICT scratch) {
  const int64_t bin = b ? b->in : 1, bout = b ? b->out : 1;
  const int64_t in_block = mid * bin * inner, out_block = mid * bout * inner;
  if (resize_b_first(a, b)) {
    // A direct-mapped cache of b-resized source rows, slot = row % taps: an upscale's taps are
    // consecutive rows, so the rows one output row needs never evict each other.
    int64_t tags[detail::kMaxCachedRows];
    for (int64_t& t : tags) t = -1;
    for (int64_t r = row0; r < row1; ++r) {
      const int64_t o = r / a.out, i0 = r % a.out;
      float* KILN_RESTRICT yr = y + r * out_block;
      // The row's taps with a weight, their source rows resized first (distinct sources take
      // distinct slots), then one pass over the output row: a linear upscale's two taps are
      // one multiply and one multiply-add per element, not a zeroing and two passes.
      const float* rows[detail::kMaxCachedRows];
      float ws[detail::kMaxCachedRows];
      int n = 0;
      for (int k = 0; k < a.taps; ++k) {
        const float w = a.w[i0 * a.taps + k];
        if (w == 0.f) continue;
        const int64_t src = o * a.in + a.idx[i0 * a.taps + k];
        const int64_t slot = src % a.taps;
        float* KILN_RESTRICT row = scratch + slot * out_block;
        if (tags[slot] != src) {
          detail::resize_b(mid, inner, *b, x + src * in_block, row);
          tags[slot] = src;
        }
        rows[n] = row, ws[n] = w, ++n;
      }
      if (n == 0) {
        for (int64_t j = 0; j < out_block; ++j) yr[j] = 0.f;
      } else if (n == 2) {
        const float* KILN_RESTRICT r0 = rows[0];
        const float* KILN_RESTRICT r1 = rows[1];
        const float w0 = ws[0], w1 = ws[1];
        for (int64_t j = 0; j < out_block; ++j) yr[j] = w0 * r0[j] + w1 * r1[j];
      } else {
        const float* KILN_RESTRICT r0 = rows[0];
        const float w0 = ws[0];
        for (int64_t j = 0; j < out_block; ++j) yr[j] = w0 * r0[j];
        for (int k = 1; k < n; ++k) {
          const float* KILN_RESTRICT rk = rows[k];
          const float wk = ws[k];
          for (int64_t j = 0; j < out_block; ++j) yr[j] += wk * rk[j];
        }
      }
    }
    return;
  }
  for (int64_t r = row0; r < row1; ++r) {
    const int64_t o = r / a.out, i0 = r % a.out;
    float* KILN_RESTRICT t = b ? scratch : y + r * out_block;
    for (int64_t j = 0; j < in_block; ++j) t[j] = 0.f;
    for (int k = 0; k < a.taps; ++k) {
      const float w = a.w[i0 * a.taps + k];
      if (w == 0.f) continue;
      const float* KILN_RESTRICT src = x + (o * a.in + a.idx[i0 * a.taps + k]) * in_block;
      for (int64_t j = 0; j < in_block; ++j) t[j] += w * src[j];
    }
    if (b) detail::resize_b(mid, inner, *b, scratch, y + r * out_block);
  }
}

}  // namespace kiln_kernels
