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

// Rows [m0, m0 + R) by columns [n0, n0 + CB).
template <Act A, int CB, int R>
inline void gemm_block(int64_t K, int64_t N, int64_t Np, const float* KILN_RESTRICT a, int64_t lda,
                       const float* KILN_RESTRICT bp, const float* bias, const float* z, int64_t ldz, float* y,
                       int64_t ldy, int64_t m0, int64_t n0, float p, float q) {
  float acc[R][CB] = {};
  const float* ar[R];
  for (int r = 0; r < R; ++r) ar[r] = a + (m0 + r) * lda;
  for (int64_t k = 0; k < K; ++k) {
    const float* KILN_RESTRICT br = bp + k * Np + n0;
    float x[R];
    for (int r = 0; r < R; ++r) x[r] = ar[r][k];
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < CB; ++c) acc[r][c] += x[r] * br[c];
  }
  const int64_t n = std::min<int64_t>(CB, N - n0);
  for (int r = 0; r < R; ++r) {
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

template <Act A, int CB>
inline void gemm_rows(int rows, int64_t K, int64_t N, int64_t Np, const float* a, int64_t lda, const float* bp,
                      const float* bias, const float* z, int64_t ldz, float* y, int64_t ldy, int64_t m0, int64_t n0,
                      float p, float q) {
  switch (rows) {
    case 1: gemm_block<A, CB, 1>(K, N, Np, a, lda, bp, bias, z, ldz, y, ldy, m0, n0, p, q); break;
    case 2: gemm_block<A, CB, 2>(K, N, Np, a, lda, bp, bias, z, ldz, y, ldy, m0, n0, p, q); break;
    case 3: gemm_block<A, CB, 3>(K, N, Np, a, lda, bp, bias, z, ldz, y, ldy, m0, n0, p, q); break;
    default: gemm_block<A, CB, 4>(K, N, Np, a, lda, bp, bias, z, ldz, y, ldy, m0, n0, p, q); break;
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
        detail::gemm_rows<A, 64>(rows, K, N, Np, a, lda, bp, bias, z, ldz, y, ldy, m0, n0, p, q);
      else if (left == 48)
        detail::gemm_rows<A, 48>(rows, K, N, Np, a, lda, bp, bias, z, ldz, y, ldy, m0, n0, p, q);
      else if (left == 32)
        detail::gemm_rows<A, 32>(rows, K, N, Np, a, lda, bp, bias, z, ldz, y, ldy, m0, n0, p, q);
      else
        detail::gemm_rows<A, 16>(rows, K, N, Np, a, lda, bp, bias, z, ldz, y, ldy, m0, n0, p, q);
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
