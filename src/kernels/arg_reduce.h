// ArgMax and ArgMin for emitted code: x viewed as [outer][A][inner], y [outer][inner] the index
// along A of the largest (smallest) element, the first of equals or, with `last`, the last.
#pragma once
#include <cstdint>

#include "parallel.h"

namespace kiln_kernels {

template <bool Max>
inline void arg_reduce(int64_t outer, int64_t A, int64_t inner, bool last, const float* x, int64_t* y, Team* team) {
  parallel_for(team, outer, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const float* xs = x + o * A * inner + i;
        float best = xs[0];
        int64_t at = 0;
        for (int64_t a = 1; a < A; ++a) {
          const float v = xs[a * inner];
          const bool better = Max ? (last ? v >= best : v > best) : (last ? v <= best : v < best);
          if (better) best = v, at = a;
        }
        y[o * inner + i] = at;
      }
  });
}

}  // namespace kiln_kernels
