// Max and average pooling of an emitted CUDA project, channels last. Each Pool is set up once at
// kiln_model_create and run many times:
//   - KILN_CUDA_CUDNN: cudnnPoolingForward for every pool cuDNN can express (pads alike on both
//     sides, no dilation, and the output size cuDNN's floor rule gives: not a ceil_mode window
//     past the padding);
//   - else, and for the rest: kernels/cuda/device.cuh's pool2d_nhwc, a thread per output.
#pragma once
#include "conv.cuh"

namespace kiln_cuda {

using kiln_kernels::PoolShape;

struct PoolSpec {
  PoolShape s;
  bool max;        // else average
  bool count_pad;  // an average counts the padding
};

struct Pool {
  PoolSpec p{};

  // Sets the pool up. An error message, or null.
  const char* init(const PoolSpec& spec, const Dnn& dnn) {
    p = spec;
#ifdef KILN_CUDA_WITH_CUDNN
    use_dnn = init_dnn(dnn);
#else
    (void)dnn;
#endif
    return nullptr;
  }

  const char* run(const Dnn& dnn, const float* x, float* y, cudaStream_t stream) const {
#ifdef KILN_CUDA_WITH_CUDNN
    if (use_dnn) {
      const float alpha = 1.f, beta = 0.f;
      return cudnnPoolingForward(dnn.handle, pd, &alpha, xd, x, &beta, yd, y) == CUDNN_STATUS_SUCCESS
                 ? nullptr
                 : "cudnnPoolingForward failed";
    }
#else
    (void)dnn;
#endif
    const int64_t n = p.s.N * p.s.OH * p.s.OW * p.s.C;
    KILN_LAUNCH(kiln_kernels::pool2d_nhwc, kiln_kernels::blocks_for(n), kiln_kernels::kThreads, stream)(p.s, p.max,
                                                                                                      p.count_pad, x, y);
    return nullptr;
  }

  void destroy() {
#ifdef KILN_CUDA_WITH_CUDNN
    if (xd) cudnnDestroyTensorDescriptor(xd);
    if (yd) cudnnDestroyTensorDescriptor(yd);
    if (pd) cudnnDestroyPoolingDescriptor(pd);
    xd = yd = nullptr;
    pd = nullptr;
#endif
  }

#ifdef KILN_CUDA_WITH_CUDNN
  bool use_dnn = false;
  cudnnTensorDescriptor_t xd = nullptr, yd = nullptr;
  cudnnPoolingDescriptor_t pd = nullptr;

  bool init_dnn(const Dnn&) {
    const PoolShape& s = p.s;
    if (s.ph != s.ph_end || s.pw != s.pw_end || s.dh != 1 || s.dw != 1) return false;
    const auto i = [](int64_t v) { return static_cast<int>(v); };
    const cudnnPoolingMode_t mode = p.max         ? CUDNN_POOLING_MAX
                                    : p.count_pad ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                  : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    if (cudnnCreateTensorDescriptor(&xd) != CUDNN_STATUS_SUCCESS || cudnnCreateTensorDescriptor(&yd) != CUDNN_STATUS_SUCCESS ||
        cudnnCreatePoolingDescriptor(&pd) != CUDNN_STATUS_SUCCESS)
      return false;
    if (cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, i(s.N), i(s.C), i(s.H), i(s.W)) != CUDNN_STATUS_SUCCESS ||
        cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, i(s.N), i(s.C), i(s.OH), i(s.OW)) != CUDNN_STATUS_SUCCESS ||
        cudnnSetPooling2dDescriptor(pd, mode, CUDNN_NOT_PROPAGATE_NAN, i(s.KH), i(s.KW), i(s.ph), i(s.pw), i(s.sh), i(s.sw)) !=
            CUDNN_STATUS_SUCCESS)
      return false;
    int n = 0, c = 0, h = 0, w = 0;
    return cudnnGetPooling2dForwardOutputDim(pd, xd, &n, &c, &h, &w) == CUDNN_STATUS_SUCCESS && n == s.N && c == s.C &&
           h == s.OH && w == s.OW;
  }
#endif
};

}  // namespace kiln_cuda
