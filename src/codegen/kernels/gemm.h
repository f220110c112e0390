// Matrix products.
//
//   gemm_packed  y[m][n] = act(sum_k a[m][k] * B[k][n] + bias[n] + z[m][n]) with constant B
//                packed at compile time as [K][Np] (Np = N rounded up to 16, zeros past N;
//                Gemm's alpha and transB already applied): blocks of 4 rows by up to 64
//                columns accumulate in registers, the innermost loop a unit-stride vector FMA.
//   matmul       y = a . b for row-major a [M][K] and b [K][N], both computed at run time.
#pragma once
#include "common.h"

namespace kiln_kernels {

namespace detail {

template <Act A, int CB>
inline void gemm_block(int64_t K, int64_t N, int64_t Np, const float* KILN_RESTRICT a, int64_t lda,
                       const float* KILN_RESTRICT bp, const float* bias, const float* z, int64_t ldz, float* y,
                       int64_t ldy, int64_t m0, int rows, int64_t n0, float p, float q) {
  float acc[4][CB] = {};
  const float* ar[4];
  for (int r = 0; r < 4; ++r) ar[r] = a + (m0 + (r < rows ? r : 0)) * lda;
  for (int64_t k = 0; k < K; ++k) {
    const float* KILN_RESTRICT br = bp + k * Np + n0;
    const float x0 = ar[0][k], x1 = ar[1][k], x2 = ar[2][k], x3 = ar[3][k];
    for (int c = 0; c < CB; ++c) {
      acc[0][c] += x0 * br[c];
      acc[1][c] += x1 * br[c];
      acc[2][c] += x2 * br[c];
      acc[3][c] += x3 * br[c];
    }
  }
  const int64_t n = std::min<int64_t>(CB, N - n0);
  for (int r = 0; r < rows; ++r) {
    float* KILN_RESTRICT yr = y + (m0 + r) * ldy + n0;
    const float* zr = z ? z + (m0 + r) * ldz + n0 : nullptr;
    for (int64_t c = 0; c < n; ++c) {
      float v = acc[r][c];
      if (bias) v += bias[n0 + c];
      if (zr) v += zr[c];
      yr[c] = activate<A>(v, p, q);
    }
  }
}

}  // namespace detail

template <Act A>
void gemm_packed(int64_t M, int64_t K, int64_t N, const float* a, int64_t lda, const float* bp, const float* bias,
                 const float* z, int64_t ldz, float* y, int64_t ldy, float p = 0.f, float q = 0.f) {
  const int64_t Np = (N + 15) / 16 * 16;
  for (int64_t m0 = 0; m0 < M; m0 += 4) {
    const int rows = static_cast<int>(std::min<int64_t>(4, M - m0));
    for (int64_t n0 = 0; n0 < Np; n0 += 64) {
      const int64_t left = Np - n0;
      if (left >= 64)
        detail::gemm_block<A, 64>(K, N, Np, a, lda, bp, bias, z, ldz, y, ldy, m0, rows, n0, p, q);
      else if (left == 48)
        detail::gemm_block<A, 48>(K, N, Np, a, lda, bp, bias, z, ldz, y, ldy, m0, rows, n0, p, q);
      else if (left == 32)
        detail::gemm_block<A, 32>(K, N, Np, a, lda, bp, bias, z, ldz, y, ldy, m0, rows, n0, p, q);
      else
        detail::gemm_block<A, 16>(K, N, Np, a, lda, bp, bias, z, ldz, y, ldy, m0, rows, n0, p, q);
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
