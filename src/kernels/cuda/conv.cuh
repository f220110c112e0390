// Convolutions of an emitted CUDA project, channels last, with their epilogue:
// y = act(conv(x, w) + bias + z), the weights [M][KH][KW][C/G] (cuDNN's NHWC filter layout), z a
// residual (maybe y itself). Each Conv is set up once at kiln_model_create (init: descriptors
// and algorithm, and the workspace bytes it needs) and run many times.
//   - KILN_CUDA_CUDNN: cuDNN, the fastest algorithm cudnnFindConvolutionForwardAlgorithm measures
//     among those whose math is FP32 (no TF32), for every conv cuDNN can express (with
//     KILN_CUDA_ON_CPU, cuDNN's calls as loops: cudnn_shim.h); with a bias and a ReLU (or no
//     activation, where the algorithm is the precomputed implicit GEMM, as cuDNN requires) the
//     whole epilogue in the same call, cudnnConvolutionBiasActivationForward;
//   - else, and for the rest: im2col (kernels/cuda/device.cuh) into the workspace, skipped for a
//     1x1 unit-stride conv, and one product per group (blas.cuh).
// What cuDNN does not fuse is the bias_act kernel after the product.
#pragma once
#include "blas.cuh"

#if defined(KILN_CUDA_CUDNN)
#define KILN_CUDA_WITH_CUDNN 1
#ifdef KILN_CUDA_ON_CPU
#include "cudnn_shim.h"
#else
#include <cudnn.h>
#endif
#endif

namespace kiln_cuda {

using kiln_kernels::ConvShape;

struct Dnn {
#ifdef KILN_CUDA_WITH_CUDNN
  cudnnHandle_t handle = nullptr;
  bool create(cudaStream_t stream) {
    if (cudnnCreate(&handle) != CUDNN_STATUS_SUCCESS) return false;
    return cudnnSetStream(handle, stream) == CUDNN_STATUS_SUCCESS;
  }
  void destroy() {
    if (handle) cudnnDestroy(handle);
    handle = nullptr;
  }
#else
  bool create(cudaStream_t) { return true; }
  void destroy() {}
#endif
};

struct Conv {
  ConvShape s{};

  // A 1x1 unit-stride unpadded conv of one group reads its input as the product's rows.
  bool direct() const {
    return s.KH == 1 && s.KW == 1 && s.sh == 1 && s.sw == 1 && s.ph == 0 && s.pw == 0 && s.G == 1;
  }
  int64_t K() const { return s.KH * s.KW * (s.C / s.G); }
  int64_t im2col_bytes() const { return direct() ? 0 : s.N * s.OH * s.OW * s.G * K() * static_cast<int64_t>(sizeof(float)); }

  // Sets the conv up; *workspace_bytes: what run needs. An error message, or null.
  const char* init(const ConvShape& shape, const Dnn& dnn, int64_t* workspace_bytes) {
    s = shape;
    *workspace_bytes = im2col_bytes();
#ifdef KILN_CUDA_WITH_CUDNN
    if (init_dnn(dnn)) *workspace_bytes = static_cast<int64_t>(workspace);
#else
    (void)dnn;
#endif
    return nullptr;
  }

  // y = act(conv(x, w) + bias + z); bias and z may be null, z may be y (a residual in place).
  template <kiln_kernels::Act A>
  const char* run(const Dnn& dnn, const Blas& blas, const float* x, const float* w, const float* bias, const float* z,
                  float* y, void* ws, float a, float b) const {
#ifdef KILN_CUDA_WITH_CUDNN
    if (use_dnn && bias &&
        (A == kiln_kernels::Act::Relu ||
         (A == kiln_kernels::Act::None && algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM))) {
      const float alpha1 = 1.f, alpha2 = z ? 1.f : 0.f;
      return cudnnConvolutionBiasActivationForward(dnn.handle, &alpha1, xd, x, wd, w, cd, algo, ws, workspace, &alpha2,
                                                   yd, z ? z : y, bd, bias, A == kiln_kernels::Act::Relu ? relu : identity,
                                                   yd, y) == CUDNN_STATUS_SUCCESS
                 ? nullptr
                 : "cudnnConvolutionBiasActivationForward failed";
    }
#endif
    const bool in_place = z && z == y;
    if (const char* e = product(dnn, blas, x, w, in_place ? 1.f : 0.f, y, ws)) return e;
    const int64_t n = s.N * s.OH * s.OW * s.M;
    if (bias || (z && !in_place) || A != kiln_kernels::Act::None)
      KILN_LAUNCH(kiln_kernels::bias_act<A>, kiln_kernels::blocks_for(n), kiln_kernels::kThreads, blas.stream)(
          n, s.M, y, bias, in_place ? nullptr : z, a, b);
    return nullptr;
  }

  // y = conv(x, w) + beta * y.
  const char* product(const Dnn& dnn, const Blas& blas, const float* x, const float* w, float beta, float* y, void* ws) const {
#ifdef KILN_CUDA_WITH_CUDNN
    if (use_dnn) {
      const float alpha = 1.f;
      return cudnnConvolutionForward(dnn.handle, &alpha, xd, x, wd, w, cd, algo, ws, workspace, &beta, yd, y) ==
                     CUDNN_STATUS_SUCCESS
                 ? nullptr
                 : "cudnnConvolutionForward failed";
    }
#else
    (void)dnn;
#endif
    const int64_t rows = s.N * s.OH * s.OW, Mg = s.M / s.G, k = K();
    const float* a = x;
    if (!direct()) {
      float* col = static_cast<float*>(ws);
      const int64_t n = rows * s.G * k;
      KILN_LAUNCH(kiln_kernels::im2col_nhwc, kiln_kernels::blocks_for(n), kiln_kernels::kThreads, blas.stream)(s, x, col);
      a = col;
    }
    // Group g: rows [rows][k] at a + g*k (ld G*k) times its weights [Mg][k], transposed.
    return blas.gemm(false, true, rows, Mg, k, 1.f, a, s.G * k, k, w, k, Mg * k, beta, y, s.M, Mg, s.G);
  }

  void destroy() {
#ifdef KILN_CUDA_WITH_CUDNN
    if (xd) cudnnDestroyTensorDescriptor(xd);
    if (yd) cudnnDestroyTensorDescriptor(yd);
    if (wd) cudnnDestroyFilterDescriptor(wd);
    if (cd) cudnnDestroyConvolutionDescriptor(cd);
    if (bd) cudnnDestroyTensorDescriptor(bd);
    if (relu) cudnnDestroyActivationDescriptor(relu);
    if (identity) cudnnDestroyActivationDescriptor(identity);
    bd = nullptr;
    relu = identity = nullptr;
    xd = yd = nullptr;
    wd = nullptr;
    cd = nullptr;
#endif
  }

#ifdef KILN_CUDA_WITH_CUDNN
  bool use_dnn = false;
  cudnnTensorDescriptor_t xd = nullptr, yd = nullptr, bd = nullptr;  // bd: the bias, [1][M][1][1]
  cudnnFilterDescriptor_t wd = nullptr;
  cudnnConvolutionDescriptor_t cd = nullptr;
  cudnnActivationDescriptor_t relu = nullptr, identity = nullptr;
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t workspace = 0;

  // cuDNN pads both sides alike: a conv whose output that does not give (asymmetric pads) stays
  // on im2col, as does one no FP32 algorithm runs.
  bool init_dnn(const Dnn& dnn) {
    const auto i = [](int64_t v) { return static_cast<int>(v); };
    if (cudnnCreateTensorDescriptor(&xd) != CUDNN_STATUS_SUCCESS || cudnnCreateTensorDescriptor(&yd) != CUDNN_STATUS_SUCCESS ||
        cudnnCreateTensorDescriptor(&bd) != CUDNN_STATUS_SUCCESS || cudnnCreateFilterDescriptor(&wd) != CUDNN_STATUS_SUCCESS ||
        cudnnCreateConvolutionDescriptor(&cd) != CUDNN_STATUS_SUCCESS ||
        cudnnCreateActivationDescriptor(&relu) != CUDNN_STATUS_SUCCESS ||
        cudnnCreateActivationDescriptor(&identity) != CUDNN_STATUS_SUCCESS)
      return false;
    if (cudnnSetTensor4dDescriptor(bd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 1, i(s.M), 1, 1) != CUDNN_STATUS_SUCCESS ||
        cudnnSetActivationDescriptor(relu, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0) != CUDNN_STATUS_SUCCESS ||
        cudnnSetActivationDescriptor(identity, CUDNN_ACTIVATION_IDENTITY, CUDNN_NOT_PROPAGATE_NAN, 0.0) != CUDNN_STATUS_SUCCESS)
      return false;
    if (cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, i(s.N), i(s.C), i(s.H), i(s.W)) != CUDNN_STATUS_SUCCESS ||
        cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, i(s.N), i(s.M), i(s.OH), i(s.OW)) != CUDNN_STATUS_SUCCESS ||
        cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, i(s.M), i(s.C / s.G), i(s.KH), i(s.KW)) !=
            CUDNN_STATUS_SUCCESS ||
        cudnnSetConvolution2dDescriptor(cd, i(s.ph), i(s.pw), i(s.sh), i(s.sw), i(s.dh), i(s.dw), CUDNN_CROSS_CORRELATION,
                                        CUDNN_DATA_FLOAT) != CUDNN_STATUS_SUCCESS ||
        cudnnSetConvolutionGroupCount(cd, i(s.G)) != CUDNN_STATUS_SUCCESS ||
        cudnnSetConvolutionMathType(cd, CUDNN_FMA_MATH) != CUDNN_STATUS_SUCCESS)
      return false;
    int n = 0, c = 0, h = 0, w = 0;
    if (cudnnGetConvolution2dForwardOutputDim(cd, xd, wd, &n, &c, &h, &w) != CUDNN_STATUS_SUCCESS || n != s.N ||
        c != s.M || h != s.OH || w != s.OW)
      return false;
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int found = 0;
    if (cudnnFindConvolutionForwardAlgorithm(dnn.handle, xd, wd, cd, yd, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf) !=
        CUDNN_STATUS_SUCCESS)
      return false;
    for (int k = 0; k < found; ++k)
      if (perf[k].status == CUDNN_STATUS_SUCCESS && perf[k].mathType == CUDNN_FMA_MATH) {
        algo = perf[k].algo;
        workspace = perf[k].memory;
        use_dnn = true;
        return true;
      }
    return false;
  }
#endif
};

}  // namespace kiln_cuda
