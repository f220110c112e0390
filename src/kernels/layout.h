// Layout changes a banded chain runs on rows (codegen's conv chains).
#pragma once
#include "common.h"

namespace kiln_kernels {

// Rows of an NCHW image as NHWC rows: the shape of the band (N = 1, H rows of the band, PH = 0,
// OH = H) with `planes` the image's full H (the distance between channel planes is planes * W).
struct TransposeRows {
  int64_t N, H, W, C, planes, PH;
  int64_t OH = 0;
};

// y[r][w][c] = x[c][r][w] for the band's rows r < OH; x points at the band's first row of plane 0.
inline void nchw_rows_to_nhwc(const TransposeRows& s, const float* KILN_RESTRICT x, float* KILN_RESTRICT y) {
  const int64_t plane = s.planes * s.W;
  for (int64_t r = 0; r < s.OH; ++r)
    for (int64_t w = 0; w < s.W; ++w)
      for (int64_t c = 0; c < s.C; ++c) y[(r * s.W + w) * s.C + c] = x[c * plane + r * s.W + w];
}

}  // namespace kiln_kernels
