// The register tile the matrix kernels (gemm.h, conv2d.h) are built on: R rows of A times one
// panel of packed B (PANEL columns, contiguous per k) accumulated in R x 4 vector registers.
//
//   for k:  x[r] = broadcast(a[r][k])             r < R
//           for v < 4:  b = B[k][v*L .. v*L+L)    one load, reused R times
//                       acc[r][v] += x[r] * b
//
// The vectors are GCC/Clang vector extensions, not intrinsics: PANEL 64 is 4 vectors of 16
// floats (one zmm each under -mavx512f; 6 rows: 24 accumulators, 6 broadcasts and a load fit the
// 32 registers), PANEL 32 is 4 of 8 (one ymm each under -mavx2; 3 rows fit its 16 registers).
// The emitter packs B for the panel its target's ISA wants and passes PANEL to the kernel.
#pragma once
#include "common.h"

namespace kiln_kernels {

template <int PANEL>
struct Tile;
template <>
struct Tile<64> {
  static constexpr int kLanes = 16, kRows = 6;
};
template <>
struct Tile<32> {
  static constexpr int kLanes = 8, kRows = 3;
};

template <int PANEL>
struct Panel {
  static constexpr int L = Tile<PANEL>::kLanes, NV = PANEL / Tile<PANEL>::kLanes;
  typedef float V __attribute__((vector_size(L * sizeof(float))));

  static V load(const float* p) {
    V v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
  }
  static void store(float* p, V v) { __builtin_memcpy(p, &v, sizeof v); }
  // One value in every lane: s - 0 is s for every float (while -0 + 0 is +0), so this compiles
  // to a lone broadcast.
  static V splat(float s) { return s - V{}; }

  // acc[r][v] += sum over k < K of a[r][k] * b[k * PANEL + v * L + lane].
  template <int R>
  static inline void accumulate(int64_t K, const float* const* a, const float* KILN_RESTRICT b, V (&acc)[R][NV]) {
    for (int64_t k = 0; k < K; ++k) {
      V x[R];
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) x[r] = splat(a[r][k]);
      const float* bk = b + k * PANEL;
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        const V bv = load(bk + v * L);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[r][v] += x[r] * bv;
      }
    }
  }

  // Row r's n <= PANEL outputs: act(acc + bias + z) into y (bias, z may be null).
  template <Act A, int R>
  static inline void finish(const V (&acc)[R][NV], int r, int64_t n, const float* bias, const float* z, float* y,
                            float p, float q) {
    alignas(64) float t[PANEL];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) store(t + v * L, acc[r][v]);
    if (bias)
      for (int64_t c = 0; c < n; ++c) t[c] += bias[c];
    if (z)
      for (int64_t c = 0; c < n; ++c) t[c] += z[c];
    for (int64_t c = 0; c < n; ++c) y[c] = activate<A>(t[c], p, q);
  }
};

}  // namespace kiln_kernels
