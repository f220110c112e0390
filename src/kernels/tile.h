// The register tile the matrix kernels (gemm.h, conv2d.h) are built on: R rows of A times one
// panel of packed B (PANEL columns, contiguous per k) accumulated in R x 4 vector registers.
//
//   for k:  x[r] = broadcast(a[r][k])             r < R
//           for v < 4:  b = B[k][v*L .. v*L+L)    one load, reused R times
//                       acc[r][v] += x[r] * b
//
// Everything here is always inlined: the accumulators must stay in registers, which they do not
// once a tile function is compiled out of line (GCC's inlining budget runs out across the many
// tile shapes a model instantiates).
//
// The vectors are GCC/Clang vector extensions, not intrinsics: PANEL 64 is 4 vectors of 16
// floats (one zmm each under -mavx512f; 6 rows: 24 accumulators, 6 broadcasts and a load fit the
// 32 registers), PANEL 32 is 4 of 8 (one ymm each under -mavx2; 3 rows fit its 16 registers).
// The emitter packs B for the panel its target's ISA wants and passes PANEL to the kernel; the
// last panel is only as wide as the vectors it needs (Panel::width).
#pragma once
#include <type_traits>

#include "common.h"

// -Wpsabi: as in common.h.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

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

  [[gnu::always_inline]] static V load(const float* p) {
    V v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
  }
  [[gnu::always_inline]] static void store(float* p, V v) { __builtin_memcpy(p, &v, sizeof v); }
  // One value in every lane: s - 0 is s for every float (while -0 + 0 is +0), so this compiles
  // to a lone broadcast.
  [[gnu::always_inline]] static V splat(float s) { return s - V{}; }

  // The width in floats of panel j of N columns: PANEL, but the last one only as wide as the
  // vectors it needs (16 outputs of 96 take one vector of a second panel, not four).
  static int64_t width(int64_t N, int64_t j) { return std::min<int64_t>(PANEL, (N - j * PANEL + L - 1) / L * L); }

  // acc[r][v] += sum over k < K of a[r][k] * b[k * W * L + v * L + lane], v < W (the panel's
  // vectors).
  template <int R, int W>
  [[gnu::always_inline]] static inline void accumulate(int64_t K, const float* const* a, const float* KILN_RESTRICT b, V (&acc)[R][NV]) {
    for (int64_t k = 0; k < K; ++k) {
      V x[R];
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) x[r] = splat(a[r][k]);
      const float* bk = b + k * W * L;
#pragma GCC unroll 4
      for (int v = 0; v < W; ++v) {
        const V bv = load(bk + v * L);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[r][v] += x[r] * bv;
      }
    }
  }

  // The activation on a whole vector: Relu and Clip as vector compares, the others lane by lane
  // over a fixed 16 or 8 lanes (a loop the compiler vectorizes, the math being branch-free).
  template <Act A>
  [[gnu::always_inline]] static inline V activate_vector(V x, float p, float q) {
    if constexpr (A == Act::None) {
      return x;
    } else if constexpr (A == Act::Relu) {
      return x > V{} ? x : V{};
    } else if constexpr (A == Act::Clip) {
      const V lo = splat(p), hi = splat(q);
      x = x < lo ? lo : x;
      return x > hi ? hi : x;
    } else {
      alignas(64) float t[L];
      store(t, x);
      for (int l = 0; l < L; ++l) t[l] = activate<A>(t[l], p, q);
      return load(t);
    }
  }

  // One row's n <= W * L outputs: act(acc + bias + z) into y (bias, z may be null).
  template <Act A, int W>
  [[gnu::always_inline]] static inline void finish(const V (&acc)[NV], int64_t n, const float* bias, const float* z, float* y, float p,
                            float q) {
    if (n == W * L) {
#pragma GCC unroll 4
      for (int v = 0; v < W; ++v) {
        V t = acc[v];
        if (bias) t += load(bias + v * L);
        if (z) t += load(z + v * L);
        store(y + v * L, activate_vector<A>(t, p, q));
      }
      return;
    }
    alignas(64) float t[PANEL] = {};  // n <= W * L of it are read; zeroed so the compiler can see that
#pragma GCC unroll 4
    for (int v = 0; v < W; ++v) store(t + v * L, acc[v]);
    if (bias)
      for (int64_t c = 0; c < n; ++c) t[c] += bias[c];
    if (z)
      for (int64_t c = 0; c < n; ++c) t[c] += z[c];
    for (int64_t c = 0; c < n; ++c) y[c] = activate<A>(t[c], p, q);
  }
};

// f(std::integral_constant<int, rows>) for rows in [1, R]: a run-time count as a template argument.
template <int R, typename F>
inline void with_count(int rows, F&& f) {
  if constexpr (R > 0) {
    if (rows == R) f(std::integral_constant<int, R>{});
    else with_count<R - 1>(rows, f);
  }
}

}  // namespace kiln_kernels

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
