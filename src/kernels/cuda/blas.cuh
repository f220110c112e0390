// Matrix products of an emitted CUDA project, row-major: cuBLAS's strided batched SGEMM (full
// FP32, no TF32), or with KILN_CUDA_ON_CPU a plain loop with the same meaning.
//
//   for b < batch:  C_b[M][N] = alpha * op(A_b)[M][K] . op(B_b)[K][N] + beta * C_b
//   X_b = X + b * stride_x;  op(A) = A^T when trans_a (A stored [K][M]), likewise B.
#pragma once
#include "device.cuh"

#ifndef KILN_CUDA_ON_CPU
#include <cublas_v2.h>
#endif

namespace kiln_cuda {

#ifdef KILN_CUDA_ON_CPU
struct Blas {
  cudaStream_t stream = nullptr;  // the model's: products are queued on it, as cuBLAS's kernels are
  bool create(cudaStream_t s) {
    stream = s;
    return true;
  }
  void destroy() {}
  // Queued on the stream with its arguments, so it reads A and B when the stream gets to it.
  const char* gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                   int64_t lda, int64_t stride_a, const float* B, int64_t ldb, int64_t stride_b, float beta, float* C,
                   int64_t ldc, int64_t stride_c, int64_t batch) const {
    kiln_cuda_shim::submit(
        stream,
        [=] {
          loop(trans_a, trans_b, M, N, K, alpha, A, lda, stride_a, B, ldb, stride_b, beta, C, ldc, stride_c, batch);
        },
        "kiln_cuda::Blas::gemm");
    return nullptr;
  }
  static void loop(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                   int64_t lda, int64_t stride_a, const float* B, int64_t ldb, int64_t stride_b, float beta, float* C,
                   int64_t ldc, int64_t stride_c, int64_t batch) {
    std::vector<float> row(static_cast<size_t>(N));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < M; ++i) {
        for (int64_t j = 0; j < N; ++j) row[j] = 0.f;
        for (int64_t k = 0; k < K; ++k) {
          const float a = trans_a ? A[b * stride_a + k * lda + i] : A[b * stride_a + i * lda + k];
          const float* bk = B + b * stride_b;
          if (trans_b)
            for (int64_t j = 0; j < N; ++j) row[j] += a * bk[j * ldb + k];
          else
            for (int64_t j = 0; j < N; ++j) row[j] += a * bk[k * ldb + j];
        }
        float* c = C + b * stride_c + i * ldc;
        for (int64_t j = 0; j < N; ++j) c[j] = alpha * row[j] + (beta != 0.f ? beta * c[j] : 0.f);
      }
  }
};
#else
struct Blas {
  cublasHandle_t handle = nullptr;
  cudaStream_t stream = nullptr;  // the model's: cuBLAS's and the library kernels' launches
  bool create(cudaStream_t s) {
    stream = s;
    if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) return false;
    cublasSetStream(handle, stream);
    cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH);  // FP32 products as FP32: no TF32
    return true;
  }
  void destroy() {
    if (handle) cublasDestroy(handle);
    handle = nullptr;
  }
  // Row-major C = A . B is column-major C^T = B^T . A^T: cuBLAS gets B first.
  const char* gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                   int64_t lda, int64_t stride_a, const float* B, int64_t ldb, int64_t stride_b, float beta, float* C,
                   int64_t ldc, int64_t stride_c, int64_t batch) const {
    const cublasStatus_t st = cublasSgemmStridedBatched(
        handle, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(N),
        static_cast<int>(M), static_cast<int>(K), &alpha, B, static_cast<int>(ldb), stride_b, A, static_cast<int>(lda),
        stride_a, &beta, C, static_cast<int>(ldc), stride_c, static_cast<int>(batch));
    return st == CUBLAS_STATUS_SUCCESS ? nullptr : "cublasSgemmStridedBatched failed";
  }
};
#endif

}  // namespace kiln_cuda
