// Matrix products.
//
//   gemm_packed  y[m][n] = act(sum_k a[m][k] * B[k][n] + bias[n] + z[m][n]) with constant B
//                packed at compile time in panels of PANEL columns, [N/PANEL][K][PANEL], the last
//                panel [K][Panel::width] (zeros past N; Gemm's alpha and transB already
//                applied); tiles of rows by one panel
//                accumulate in registers (tile.h). A panel stays in cache while the rows stream.
//   matmul       y = a . b for row-major a [M][K] and b [K][N], both computed at run time.
#pragma once

#include "tile.h"

namespace kiln_kernels {

namespace detail {

template <Act A, int PANEL, int R, int W>
[[gnu::always_inline]] inline void gemm_tile(int64_t K, const float* a, int64_t lda, const float* b, int64_t m0, int64_t n0, int64_t n,
                      const float* bias, const float* z, int64_t ldz, float* y, int64_t ldy, float p, float q) {
  using P = Panel<PANEL>;
  typename P::V acc[R][P::NV] = {};
  const float* rows[R];
  for (int r = 0; r < R; ++r) rows[r] = a + (m0 + r) * lda;
  P::template accumulate<R, W>(K, rows, b, acc);
  for (int r = 0; r < R; ++r)
    P::template finish<A, W>(acc[r], n, bias ? bias + n0 : nullptr, z ? z + (m0 + r) * ldz + n0 : nullptr,
                             y + (m0 + r) * ldy + n0, p, q);
}

}  // namespace detail

// With a team, the threads split the row tiles, or the panels when there are few rows.
template <Act A, int PANEL>
void gemm_packed(int64_t M, int64_t K, int64_t N, const float* a, int64_t lda, const float* bp, const float* bias,
                 const float* z, int64_t ldz, float* y, int64_t ldy, float p = 0.f, float q = 0.f, Team* team = nullptr) {
  constexpr int R = Tile<PANEL>::kRows;
  const int64_t panels = (N + PANEL - 1) / PANEL, tiles = (M + R - 1) / R;
  auto part = [&](int64_t j0, int64_t j1, int64_t t0, int64_t t1) {
    for (int64_t j = j0; j < j1; ++j) {
      const float* b = bp + j * K * PANEL;
      const int64_t n0 = j * PANEL, n = std::min<int64_t>(PANEL, N - n0);
      with_count<Panel<PANEL>::NV>(static_cast<int>(Panel<PANEL>::width(N, j) / Panel<PANEL>::L), [&](auto w) {
        constexpr int W = decltype(w)::value;
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t m0 = t * R;
          if (m0 + R <= M) detail::gemm_tile<A, PANEL, R, W>(K, a, lda, b, m0, n0, n, bias, z, ldz, y, ldy, p, q);
          else
            with_count<R - 1>(static_cast<int>(M - m0), [&](auto rows) {
              detail::gemm_tile<A, PANEL, decltype(rows)::value, W>(K, a, lda, b, m0, n0, n, bias, z, ldz, y, ldy, p, q);
            });
        }
      });
    }
  };
  const int threads = team ? team->size() : 1;
  if (tiles >= 2 * threads) parallel_for(team, tiles, [&](int64_t t0, int64_t t1) { part(0, panels, t0, t1); });
  else parallel_for(team, panels, [&](int64_t j0, int64_t j1) { part(j0, j1, 0, tiles); });
}

// The floats gemm_packed's B takes for K x N: every panel's width times K.
template <int PANEL>
inline int64_t packed_size(int64_t K, int64_t N) {
  const int64_t np = (N + PANEL - 1) / PANEL;
  return K * ((np - 1) * PANEL + Panel<PANEL>::width(N, np - 1));
}

// B [K][N] with rows ldb apart (trans: B^T given as [N][K], rows ldb apart) times alpha, into
// out (packed_size floats) as gemm_packed reads it: panel j is [K][its width] at j * K * PANEL,
// zeros past N. kiln packs constant weights with it at compile time; attention packs its keys
// and values with it at run time.
template <int PANEL>
inline void pack_panels(const float* b, int64_t K, int64_t N, int64_t ldb, bool trans, float alpha, float* out) {
  const int64_t np = (N + PANEL - 1) / PANEL;
  for (int64_t j = 0; j < np; ++j) {
    const int64_t w = Panel<PANEL>::width(N, j), n0 = j * PANEL, n = std::min<int64_t>(PANEL, N - n0);
    float* pj = out + j * K * PANEL;
    for (int64_t k = 0; k < K; ++k) {
      float* row = pj + k * w;
      for (int64_t c = 0; c < n; ++c) row[c] = alpha * (trans ? b[(n0 + c) * ldb + k] : b[k * ldb + n0 + c]);
      for (int64_t c = n; c < w; ++c) row[c] = 0.f;
    }
  }
}

inline void matmul(int64_t M, int64_t K, int64_t N, const float* KILN_RESTRICT a, const float* KILN_RESTRICT b,
                   float* KILN_RESTRICT y) {
  for (int64_t m = 0; m < M; ++m) {
    float* yr = y + m * N;
    for (int64_t n = 0; n < N; ++n) yr[n] = 0.f;
    for (int64_t k = 0; k < K; ++k) {
      const float x = a[m * K + k];
      const float* br = b + k * N;
      for (int64_t n = 0; n < N; ++n) yr[n] += x * br[n];
    }
  }
}

}  // namespace kiln_kernels
