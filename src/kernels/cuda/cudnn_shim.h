// The cuDNN subset an emitted CUDA project calls (kernels/cuda/conv.cuh, pool.cuh), run on the
// CPU with the host shim (host_shim.h), for a project built with KILN_CUDA_ON_CPU and
// KILN_CUDA_CUDNN: the descriptors hold what they are set to, and a convolution or pooling runs
// as a plain loop with cuDNN's documented meaning, queued on the handle's stream. So the
// arguments the project gives cuDNN (layouts, pads, strides, groups, output sizes, the
// workspace, alpha and beta) are checked against reference outputs without a GPU.
//
//   convolution:  y = alpha * conv(x, w) + beta * y   (cross-correlation; beta 0: y not read)
//   with bias and activation:  y = act(alpha1 * conv(x, w) + alpha2 * z + bias)   (ReLU, or
//                 identity with the precomputed implicit GEMM algorithm only; z may be y)
//   pooling:      max (padding never wins), or average counting or excluding the padding
//
// 4-D tensors and filters in NCHW or NHWC, float data. A call with arguments cuDNN would refuse
// (sizes that do not agree, a workspace smaller than the algorithm asked for) returns
// CUDNN_STATUS_BAD_PARAM, as cuDNN does.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "host_shim.h"

enum cudnnStatus_t { CUDNN_STATUS_SUCCESS = 0, CUDNN_STATUS_BAD_PARAM = 2000, CUDNN_STATUS_NOT_SUPPORTED = 3000 };
enum cudnnTensorFormat_t { CUDNN_TENSOR_NCHW = 0, CUDNN_TENSOR_NHWC = 1 };
enum cudnnDataType_t { CUDNN_DATA_FLOAT = 0 };
enum cudnnConvolutionMode_t { CUDNN_CONVOLUTION = 0, CUDNN_CROSS_CORRELATION = 1 };
enum cudnnMathType_t { CUDNN_DEFAULT_MATH = 0, CUDNN_TENSOR_OP_MATH = 1, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION = 2, CUDNN_FMA_MATH = 3 };
enum cudnnDeterminism_t { CUDNN_NON_DETERMINISTIC = 0, CUDNN_DETERMINISTIC = 1 };
enum cudnnConvolutionFwdAlgo_t {
  CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM = 0,
  CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM = 1,
  CUDNN_CONVOLUTION_FWD_ALGO_GEMM = 2,
  CUDNN_CONVOLUTION_FWD_ALGO_DIRECT = 3,
  CUDNN_CONVOLUTION_FWD_ALGO_FFT = 4,
  CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING = 5,
  CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD = 6,
  CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED = 7,
  CUDNN_CONVOLUTION_FWD_ALGO_COUNT = 8
};
enum cudnnPoolingMode_t {
  CUDNN_POOLING_MAX = 0,
  CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING = 1,
  CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING = 2,
  CUDNN_POOLING_MAX_DETERMINISTIC = 3
};
enum cudnnNanPropagation_t { CUDNN_NOT_PROPAGATE_NAN = 0, CUDNN_PROPAGATE_NAN = 1 };
enum cudnnActivationMode_t {
  CUDNN_ACTIVATION_SIGMOID = 0,
  CUDNN_ACTIVATION_RELU = 1,
  CUDNN_ACTIVATION_TANH = 2,
  CUDNN_ACTIVATION_CLIPPED_RELU = 3,
  CUDNN_ACTIVATION_ELU = 4,
  CUDNN_ACTIVATION_IDENTITY = 5,
  CUDNN_ACTIVATION_SWISH = 6
};

struct cudnnConvolutionFwdAlgoPerf_t {
  cudnnConvolutionFwdAlgo_t algo;
  cudnnStatus_t status;
  float time;
  size_t memory;
  cudnnDeterminism_t determinism;
  cudnnMathType_t mathType;
  int reserved[3];
};

namespace kiln_cudnn_shim {

struct Handle {
  cudaStream_t stream = nullptr;
};
// An element's place in a 4-D tensor of `format`: n, c, h, w in their dims.
struct Dims4 {
  cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;
  int n = 0, c = 0, h = 0, w = 0;
  bool set = false;
  int64_t at(int64_t in, int64_t ic, int64_t ih, int64_t iw) const {
    return format == CUDNN_TENSOR_NHWC ? ((in * h + ih) * w + iw) * c + ic : ((in * c + ic) * h + ih) * w + iw;
  }
};
struct Conv {
  int ph = 0, pw = 0, sh = 1, sw = 1, dh = 1, dw = 1, groups = 1;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  bool set = false;
};
struct Activation {
  cudnnActivationMode_t mode = CUDNN_ACTIVATION_IDENTITY;
  bool set = false;
};
struct Pool {
  cudnnPoolingMode_t mode = CUDNN_POOLING_MAX;
  int kh = 1, kw = 1, ph = 0, pw = 0, sh = 1, sw = 1;
  bool set = false;
};
// What the one algorithm the shim offers asks for as workspace (so that a project passing none
// is seen).
constexpr size_t kWorkspace = 64;

inline int out_dim(int in, int pad, int k, int dilation, int stride) {
  return 1 + (in + 2 * pad - ((k - 1) * dilation + 1)) / stride;
}

inline bool positive(int a, int b, int c, int d) { return a > 0 && b > 0 && c > 0 && d > 0; }

// How many convolutions and pools ran, printed at exit when KILN_CUDNN_SHIM_REPORT is set (so a
// check can tell that cuDNN's path ran).
struct Report {
  int convolutions = 0, pools = 0;
  ~Report() {
    if (std::getenv("KILN_CUDNN_SHIM_REPORT"))
      std::fprintf(stderr, "cudnn shim: %d convolutions, %d pools\n", convolutions, pools);
  }
};
inline Report report;

}  // namespace kiln_cudnn_shim

typedef kiln_cudnn_shim::Handle* cudnnHandle_t;
typedef kiln_cudnn_shim::Dims4* cudnnTensorDescriptor_t;
typedef kiln_cudnn_shim::Dims4* cudnnFilterDescriptor_t;
typedef kiln_cudnn_shim::Conv* cudnnConvolutionDescriptor_t;
typedef kiln_cudnn_shim::Pool* cudnnPoolingDescriptor_t;
typedef kiln_cudnn_shim::Activation* cudnnActivationDescriptor_t;

inline cudnnStatus_t cudnnCreate(cudnnHandle_t* h) {
  *h = new kiln_cudnn_shim::Handle;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnDestroy(cudnnHandle_t h) {
  delete h;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnSetStream(cudnnHandle_t h, cudaStream_t s) {
  if (!h) return CUDNN_STATUS_BAD_PARAM;
  h->stream = s;
  return CUDNN_STATUS_SUCCESS;
}

inline cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* d) {
  *d = new kiln_cudnn_shim::Dims4;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) {
  delete d;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t f, cudnnDataType_t t,
                                                int n, int c, int h, int w) {
  if (!d || t != CUDNN_DATA_FLOAT || !kiln_cudnn_shim::positive(n, c, h, w)) return CUDNN_STATUS_BAD_PARAM;
  *d = {f, n, c, h, w, true};
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* d) {
  *d = new kiln_cudnn_shim::Dims4;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d) {
  delete d;
  return CUDNN_STATUS_SUCCESS;
}
// A filter's k (output channels) is a tensor's n.
inline cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t t, cudnnTensorFormat_t f,
                                                int k, int c, int h, int w) {
  return cudnnSetTensor4dDescriptor(d, f, t, k, c, h, w);
}

inline cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* d) {
  *d = new kiln_cudnn_shim::Conv;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d) {
  delete d;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int pad_h, int pad_w, int u, int v,
                                                     int dilation_h, int dilation_w, cudnnConvolutionMode_t mode,
                                                     cudnnDataType_t t) {
  if (!d || t != CUDNN_DATA_FLOAT || pad_h < 0 || pad_w < 0 || !kiln_cudnn_shim::positive(u, v, dilation_h, dilation_w))
    return CUDNN_STATUS_BAD_PARAM;
  d->ph = pad_h, d->pw = pad_w, d->sh = u, d->sw = v, d->dh = dilation_h, d->dw = dilation_w, d->mode = mode;
  d->set = true;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int groups) {
  if (!d || groups < 1) return CUDNN_STATUS_BAD_PARAM;
  d->groups = groups;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t m) {
  if (!d) return CUDNN_STATUS_BAD_PARAM;
  d->math = m;
  return CUDNN_STATUS_SUCCESS;
}

inline cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(cudnnConvolutionDescriptor_t cd, cudnnTensorDescriptor_t x,
                                                           cudnnFilterDescriptor_t w, int* n, int* c, int* h, int* wo) {
  if (!cd || !x || !w || !cd->set || !x->set || !w->set || x->c != w->c * cd->groups || w->n % cd->groups)
    return CUDNN_STATUS_BAD_PARAM;
  *n = x->n;
  *c = w->n;
  *h = kiln_cudnn_shim::out_dim(x->h, cd->ph, w->h, cd->dh, cd->sh);
  *wo = kiln_cudnn_shim::out_dim(x->w, cd->pw, w->w, cd->dw, cd->sw);
  return *h > 0 && *wo > 0 ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
}

// One algorithm, in the math the descriptor asks for.
inline cudnnStatus_t cudnnFindConvolutionForwardAlgorithm(cudnnHandle_t h, cudnnTensorDescriptor_t x,
                                                          cudnnFilterDescriptor_t w, cudnnConvolutionDescriptor_t cd,
                                                          cudnnTensorDescriptor_t y, int requested, int* returned,
                                                          cudnnConvolutionFwdAlgoPerf_t* perf) {
  int n = 0, c = 0, oh = 0, ow = 0;
  if (!h || requested < 1 || cudnnGetConvolution2dForwardOutputDim(cd, x, w, &n, &c, &oh, &ow) != CUDNN_STATUS_SUCCESS ||
      !y || y->n != n || y->c != c || y->h != oh || y->w != ow)
    return CUDNN_STATUS_BAD_PARAM;
  perf[0] = {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_STATUS_SUCCESS, 0.f, kiln_cudnn_shim::kWorkspace,
             CUDNN_DETERMINISTIC, cd->math == CUDNN_DEFAULT_MATH ? CUDNN_FMA_MATH : cd->math, {}};
  *returned = 1;
  return CUDNN_STATUS_SUCCESS;
}

namespace kiln_cudnn_shim {

// The checks cudnnConvolutionForward and cudnnConvolutionBiasActivationForward share; then
// y = act(alpha1 * conv(x, w) + alpha2 * z + bias) queued on the handle's stream (bias, z may be
// null; z may be y).
inline cudnnStatus_t convolve(cudnnHandle_t h, float alpha1, cudnnTensorDescriptor_t xd, const void* x,
                              cudnnFilterDescriptor_t wd, const void* w, cudnnConvolutionDescriptor_t cd, void* workspace,
                              size_t workspace_bytes, float alpha2, const void* z, const void* bias, bool relu,
                              cudnnTensorDescriptor_t yd, void* y, const char* call) {
  int n = 0, m = 0, oh = 0, ow = 0;
  if (!h || !x || !w || !y || cudnnGetConvolution2dForwardOutputDim(cd, xd, wd, &n, &m, &oh, &ow) != 0 || !yd ||
      !yd->set || yd->n != n || yd->c != m || yd->h != oh || yd->w != ow || !workspace || workspace_bytes < kWorkspace)
    return CUDNN_STATUS_BAD_PARAM;
  const Dims4 X = *xd, F = *wd, Y = *yd;
  const Conv C = *cd;
  const float* xs = static_cast<const float*>(x);
  const float* ws = static_cast<const float*>(w);
  const float* zs = static_cast<const float*>(z);
  const float* bs = static_cast<const float*>(bias);
  float* ys = static_cast<float*>(y);
  kiln_cuda_shim::submit(
      h->stream,
      [=] {
        ++report.convolutions;
        const int mg = F.n / C.groups;
        for (int in = 0; in < Y.n; ++in)
          for (int om = 0; om < Y.c; ++om)
            for (int oy = 0; oy < Y.h; ++oy)
              for (int ox = 0; ox < Y.w; ++ox) {
                const int g = om / mg;
                double acc = 0;
                for (int ic = 0; ic < F.c; ++ic)
                  for (int ky = 0; ky < F.h; ++ky)
                    for (int kx = 0; kx < F.w; ++kx) {
                      const int iy = oy * C.sh - C.ph + ky * C.dh, ix = ox * C.sw - C.pw + kx * C.dw;
                      if (iy < 0 || iy >= X.h || ix < 0 || ix >= X.w) continue;
                      // Convolution mode flips the filter; cross-correlation does not.
                      const int fy = C.mode == CUDNN_CONVOLUTION ? F.h - 1 - ky : ky;
                      const int fx = C.mode == CUDNN_CONVOLUTION ? F.w - 1 - kx : kx;
                      acc += static_cast<double>(xs[X.at(in, g * F.c + ic, iy, ix)]) * ws[F.at(om, ic, fy, fx)];
                    }
                const int64_t at = Y.at(in, om, oy, ox);
                float v = alpha1 * static_cast<float>(acc) + (alpha2 != 0.f ? alpha2 * zs[at] : 0.f);
                if (bs) v += bs[om];
                ys[at] = relu ? std::max(v, 0.f) : v;
              }
      },
      call);
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace kiln_cudnn_shim

inline cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t h, const void* alpha, cudnnTensorDescriptor_t xd, const void* x,
                                             cudnnFilterDescriptor_t wd, const void* w, cudnnConvolutionDescriptor_t cd,
                                             cudnnConvolutionFwdAlgo_t, void* workspace, size_t workspace_bytes,
                                             const void* beta, cudnnTensorDescriptor_t yd, void* y) {
  if (!alpha || !beta) return CUDNN_STATUS_BAD_PARAM;
  return kiln_cudnn_shim::convolve(h, *static_cast<const float*>(alpha), xd, x, wd, w, cd, workspace, workspace_bytes,
                                   *static_cast<const float*>(beta), y, nullptr, false, yd, y, "cudnnConvolutionForward");
}

inline cudnnStatus_t cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t* d) {
  *d = new kiln_cudnn_shim::Activation;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t d) {
  delete d;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t d, cudnnActivationMode_t mode,
                                                  cudnnNanPropagation_t, double) {
  if (!d) return CUDNN_STATUS_BAD_PARAM;
  *d = {mode, true};
  return CUDNN_STATUS_SUCCESS;
}

// ReLU, or identity with the precomputed implicit GEMM only; the bias [1][C][1][1]; z shaped as y.
inline cudnnStatus_t cudnnConvolutionBiasActivationForward(
    cudnnHandle_t h, const void* alpha1, cudnnTensorDescriptor_t xd, const void* x, cudnnFilterDescriptor_t wd, const void* w,
    cudnnConvolutionDescriptor_t cd, cudnnConvolutionFwdAlgo_t algo, void* workspace, size_t workspace_bytes,
    const void* alpha2, cudnnTensorDescriptor_t zd, const void* z, cudnnTensorDescriptor_t bd, const void* bias,
    cudnnActivationDescriptor_t ad, cudnnTensorDescriptor_t yd, void* y) {
  if (!alpha1 || !alpha2 || !z || !bias || !ad || !ad->set || !zd || !bd || !yd || !bd->set || !zd->set || bd->n != 1 ||
      bd->h != 1 || bd->w != 1 || bd->c != yd->c || zd->n != yd->n || zd->c != yd->c || zd->h != yd->h || zd->w != yd->w ||
      zd->format != yd->format)
    return CUDNN_STATUS_BAD_PARAM;
  if (ad->mode != CUDNN_ACTIVATION_RELU &&
      !(ad->mode == CUDNN_ACTIVATION_IDENTITY && algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM))
    return CUDNN_STATUS_NOT_SUPPORTED;
  return kiln_cudnn_shim::convolve(h, *static_cast<const float*>(alpha1), xd, x, wd, w, cd, workspace, workspace_bytes,
                                   *static_cast<const float*>(alpha2), z, bias, ad->mode == CUDNN_ACTIVATION_RELU, yd, y,
                                   "cudnnConvolutionBiasActivationForward");
}

inline cudnnStatus_t cudnnCreatePoolingDescriptor(cudnnPoolingDescriptor_t* d) {
  *d = new kiln_cudnn_shim::Pool;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnDestroyPoolingDescriptor(cudnnPoolingDescriptor_t d) {
  delete d;
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnSetPooling2dDescriptor(cudnnPoolingDescriptor_t d, cudnnPoolingMode_t mode, cudnnNanPropagation_t,
                                                 int window_h, int window_w, int pad_v, int pad_h, int stride_v,
                                                 int stride_h) {
  if (!d || pad_v < 0 || pad_h < 0 || !kiln_cudnn_shim::positive(window_h, window_w, stride_v, stride_h))
    return CUDNN_STATUS_BAD_PARAM;
  *d = {mode, window_h, window_w, pad_v, pad_h, stride_v, stride_h, true};
  return CUDNN_STATUS_SUCCESS;
}
inline cudnnStatus_t cudnnGetPooling2dForwardOutputDim(cudnnPoolingDescriptor_t p, cudnnTensorDescriptor_t x, int* n,
                                                       int* c, int* h, int* w) {
  if (!p || !x || !p->set || !x->set) return CUDNN_STATUS_BAD_PARAM;
  *n = x->n;
  *c = x->c;
  *h = kiln_cudnn_shim::out_dim(x->h, p->ph, p->kh, 1, p->sh);
  *w = kiln_cudnn_shim::out_dim(x->w, p->pw, p->kw, 1, p->sw);
  return *h > 0 && *w > 0 ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
}

inline cudnnStatus_t cudnnPoolingForward(cudnnHandle_t h, cudnnPoolingDescriptor_t pd, const void* alpha,
                                         cudnnTensorDescriptor_t xd, const void* x, const void* beta,
                                         cudnnTensorDescriptor_t yd, void* y) {
  int n = 0, c = 0, oh = 0, ow = 0;
  if (!h || !alpha || !beta || !x || !y || cudnnGetPooling2dForwardOutputDim(pd, xd, &n, &c, &oh, &ow) != 0 || !yd ||
      !yd->set || yd->n != n || yd->c != c || yd->h != oh || yd->w != ow)
    return CUDNN_STATUS_BAD_PARAM;
  const kiln_cudnn_shim::Dims4 X = *xd, Y = *yd;
  const kiln_cudnn_shim::Pool P = *pd;
  const float a = *static_cast<const float*>(alpha), b = *static_cast<const float*>(beta);
  const float* xs = static_cast<const float*>(x);
  float* ys = static_cast<float*>(y);
  kiln_cuda_shim::submit(
      h->stream,
      [=] {
        ++kiln_cudnn_shim::report.pools;
        const bool max = P.mode == CUDNN_POOLING_MAX || P.mode == CUDNN_POOLING_MAX_DETERMINISTIC;
        for (int in = 0; in < Y.n; ++in)
          for (int ic = 0; ic < Y.c; ++ic)
            for (int oy = 0; oy < Y.h; ++oy)
              for (int ox = 0; ox < Y.w; ++ox) {
                float acc = max ? -INFINITY : 0.f;
                int valid = 0;
                for (int ky = 0; ky < P.kh; ++ky)
                  for (int kx = 0; kx < P.kw; ++kx) {
                    const int iy = oy * P.sh - P.ph + ky, ix = ox * P.sw - P.pw + kx;
                    if (iy < 0 || iy >= X.h || ix < 0 || ix >= X.w) continue;
                    const float v = xs[X.at(in, ic, iy, ix)];
                    acc = max ? std::fmax(acc, v) : acc + v;
                    ++valid;
                  }
                if (!max)
                  acc /= static_cast<float>(P.mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING ? P.kh * P.kw
                                                                                             : std::max(valid, 1));
                float& out = ys[Y.at(in, ic, oy, ox)];
                out = a * acc + (b != 0.f ? b * out : 0.f);
              }
      },
      "cudnnPoolingForward");
  return CUDNN_STATUS_SUCCESS;
}
