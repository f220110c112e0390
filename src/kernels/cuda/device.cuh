// What every kernel of an emitted CUDA project shares: the launch macros, the activations of
// fused epilogues, block reductions (a warp shuffle tree, then one word per warp in shared
// memory), and the kernels model.cu instantiates with its constants: the convolution's im2col
// and epilogue, depthwise convolution, pools, row normalizations, softmax and attention.
//
// Compiled by nvcc, or, with KILN_CUDA_ON_CPU defined, as host C++ through host_shim.h, which
// runs the grid serially: every kernel here keeps to what the shim emulates (static shared
// arrays, __syncthreads and warp shuffles reached by every thread of the block, which then is
// launched with KILN_LAUNCH_SYNC).
#pragma once
#ifdef KILN_CUDA_ON_CPU
#include "host_shim.h"
#else
#include <cuda_runtime.h>
#define KILN_LAUNCH(kernel, grid, block, stream) kernel<<<grid, block, 0, stream>>>
#define KILN_LAUNCH_SYNC(kernel, grid, block, stream) kernel<<<grid, block, 0, stream>>>
#endif
#include <cmath>
#include <cstdint>

namespace kiln_kernels {

namespace math {
__device__ __forceinline__ float tanh(float x) { return tanhf(x); }
__device__ __forceinline__ float erf(float x) { return erff(x); }
__device__ __forceinline__ float sigmoid(float x) { return 1.f / (1.f + expf(-x)); }
__device__ __forceinline__ float silu(float x) { return x / (1.f + expf(-x)); }
}  // namespace math

// The fused activations (the same names as the C++ target's kernels/common.h).
enum class Act { None, Relu, Clip, Sigmoid, Tanh, SiLU, Gelu, GeluTanh, HardSigmoid, HardSwish, LeakyRelu };

template <Act A>
__device__ __forceinline__ float activate(float x, float a, float b) {
  if constexpr (A == Act::Relu) return x > 0.f ? x : 0.f;
  if constexpr (A == Act::Clip) return fminf(fmaxf(x, a), b);
  if constexpr (A == Act::Sigmoid) return math::sigmoid(x);
  if constexpr (A == Act::Tanh) return tanhf(x);
  if constexpr (A == Act::SiLU) return math::silu(x);
  if constexpr (A == Act::Gelu) return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
  if constexpr (A == Act::GeluTanh) return 0.5f * x * (1.f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
  if constexpr (A == Act::HardSigmoid) return fmaxf(0.f, fminf(1.f, a * x + b));
  if constexpr (A == Act::HardSwish) return x * fmaxf(0.f, fminf(1.f, x / 6.f + 0.5f));
  if constexpr (A == Act::LeakyRelu) return x >= 0.f ? x : a * x;
  return x;
}

// Threads per block of the row kernels (a multiple of the warp).
constexpr int kRowThreads = 256;
constexpr int kWarp = 32;

struct SumOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct MinOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fminf(a, b); }
};

// The reduction of v over the block (every thread gets it); `scratch` holds a word per warp.
// Every thread of the block must call it.
template <class Op>
__device__ __forceinline__ float block_reduce(float v, float* scratch, Op op) {
  for (int d = kWarp / 2; d > 0; d /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, d));
  const int warp = static_cast<int>(threadIdx.x) / kWarp, lane = static_cast<int>(threadIdx.x) % kWarp;
  const int warps = static_cast<int>(blockDim.x + kWarp - 1) / kWarp;
  __syncthreads();  // scratch may still be read by a previous reduction
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float r = scratch[0];
  for (int w = 1; w < warps; ++w) r = op(r, scratch[w]);
  return r;
}

// y[i] = act(y[i] + bias[i % C] + z[i]): the epilogue of a convolution or product run by cuBLAS.
template <Act A>
__global__ void bias_act(int64_t n, int64_t C, float* __restrict__ y, const float* __restrict__ bias,
                         const float* __restrict__ z, float a, float b) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = y[i];
  if (bias) v += bias[i % C];
  if (z) v += z[i];
  y[i] = activate<A>(v, a, b);
}

// The convolution's rows: col[(n, oh, ow)][g][kh][kw][c] = x[n][oh*sh - ph + kh*dh][ow*sw - pw + kw*dw][g*Cg + c]
// (0 outside), so that group g's product reads a [rows][KH*KW*Cg] matrix at col + g*KH*KW*Cg.
struct ConvShape {
  int64_t N, H, W, C, OH, OW, M, KH, KW, sh, sw, ph, pw, dh, dw, G;
};

__global__ void im2col_nhwc(ConvShape s, const float* __restrict__ x, float* __restrict__ col) {
  const int64_t Cg = s.C / s.G, K = s.KH * s.KW * Cg;
  const int64_t total = s.N * s.OH * s.OW * s.G * K;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  int64_t r = i;
  const int64_t c = r % Cg;
  r /= Cg;
  const int64_t kw = r % s.KW;
  r /= s.KW;
  const int64_t kh = r % s.KH;
  r /= s.KH;
  const int64_t g = r % s.G;
  r /= s.G;
  const int64_t ow = r % s.OW;
  r /= s.OW;
  const int64_t oh = r % s.OH;
  const int64_t n = r / s.OH;
  const int64_t ih = oh * s.sh - s.ph + kh * s.dh, iw = ow * s.sw - s.pw + kw * s.dw;
  col[i] = ih >= 0 && ih < s.H && iw >= 0 && iw < s.W ? x[((n * s.H + ih) * s.W + iw) * s.C + g * Cg + c] : 0.f;
}

// A depthwise convolution (G == C == M), weights [KH][KW][C], a thread per output element.
template <Act A>
__global__ void depthwise_nhwc(ConvShape s, const float* __restrict__ x, const float* __restrict__ w,
                               const float* __restrict__ bias, const float* __restrict__ z, float* __restrict__ y,
                               float a, float b) {
  const int64_t total = s.N * s.OH * s.OW * s.C;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t c = i % s.C;
  int64_t r = i / s.C;
  const int64_t ow = r % s.OW;
  r /= s.OW;
  const int64_t oh = r % s.OH;
  const int64_t n = r / s.OH;
  float acc = bias ? bias[c] : 0.f;
  for (int64_t kh = 0; kh < s.KH; ++kh) {
    const int64_t ih = oh * s.sh - s.ph + kh * s.dh;
    if (ih < 0 || ih >= s.H) continue;
    for (int64_t kw = 0; kw < s.KW; ++kw) {
      const int64_t iw = ow * s.sw - s.pw + kw * s.dw;
      if (iw < 0 || iw >= s.W) continue;
      acc += x[((n * s.H + ih) * s.W + iw) * s.C + c] * w[(kh * s.KW + kw) * s.C + c];
    }
  }
  if (z) acc += z[i];
  y[i] = activate<A>(acc, a, b);
}

struct PoolShape {
  int64_t N, H, W, C, OH, OW, KH, KW, sh, sw, ph, pw, ph_end, pw_end, dh, dw;
};

// Max or average pooling, channels last, a thread per output element.
__global__ void pool2d_nhwc(PoolShape s, bool max, bool count_pad, const float* __restrict__ x, float* __restrict__ y) {
  const int64_t total = s.N * s.OH * s.OW * s.C;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t c = i % s.C;
  int64_t r = i / s.C;
  const int64_t ow = r % s.OW;
  r /= s.OW;
  const int64_t oh = r % s.OH;
  const int64_t n = r / s.OH;
  float acc = max ? -INFINITY : 0.f;
  int64_t count = 0;
  for (int64_t kh = 0; kh < s.KH; ++kh) {
    const int64_t ih = oh * s.sh - s.ph + kh * s.dh;
    for (int64_t kw = 0; kw < s.KW; ++kw) {
      const int64_t iw = ow * s.sw - s.pw + kw * s.dw;
      if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) {
        count += count_pad && ih >= -s.ph && ih < s.H + s.ph_end && iw >= -s.pw && iw < s.W + s.pw_end ? 1 : 0;
        continue;
      }
      const float v = x[((n * s.H + ih) * s.W + iw) * s.C + c];
      acc = max ? fmaxf(acc, v) : acc + v;
      ++count;
    }
  }
  y[i] = max ? acc : acc / static_cast<float>(count > 0 ? count : 1);
}

// The mean or max over the P positions of each (n, c) of [N][P][C]: a thread per output.
__global__ void global_pool_nhwc(int64_t N, int64_t P, int64_t C, bool max, const float* __restrict__ x,
                                 float* __restrict__ y) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= N * C) return;
  const int64_t n = i / C, c = i % C;
  const float* xp = x + n * P * C + c;
  float acc = max ? -INFINITY : 0.f;
  for (int64_t p = 0; p < P; ++p) acc = max ? fmaxf(acc, xp[p * C]) : acc + xp[p * C];
  y[i] = max ? acc : acc / static_cast<float>(P);
}

// Layer normalization of rows of H (kiln.SkipLayerNorm with skip and bias; sum: x + skip + bias
// written too). A block per row, kRowThreads threads.
__global__ void layernorm_rows(int64_t H, const float* __restrict__ x, const float* __restrict__ skip,
                               const float* __restrict__ gamma, const float* __restrict__ beta,
                               const float* __restrict__ bias, float eps, float* __restrict__ y,
                               float* __restrict__ sum) {
  __shared__ float scratch[kRowThreads / kWarp];
  const int64_t row = blockIdx.x;
  const float* xr = x + row * H;
  float* yr = y + row * H;
  float s = 0.f;
  for (int64_t i = threadIdx.x; i < H; i += blockDim.x) {
    float v = xr[i];
    if (skip) v += skip[row * H + i];
    if (bias) v += bias[i];
    yr[i] = v;  // the pre-norm value, read back below by this same thread
    s += v;
  }
  const float mean = block_reduce(s, scratch, SumOp{}) / static_cast<float>(H);
  float q = 0.f;
  for (int64_t i = threadIdx.x; i < H; i += blockDim.x) {
    const float d = yr[i] - mean;
    q += d * d;
  }
  const float inv = 1.f / sqrtf(block_reduce(q, scratch, SumOp{}) / static_cast<float>(H) + eps);
  for (int64_t i = threadIdx.x; i < H; i += blockDim.x) {
    const float v = yr[i];
    if (sum) sum[row * H + i] = v;
    yr[i] = (v - mean) * inv * gamma[i] + (beta ? beta[i] : 0.f);
  }
}

// Softmax over A of [outer][A] (inner == 1): a block per row.
__global__ void softmax_rows(int64_t A, const float* __restrict__ x, float* __restrict__ y) {
  __shared__ float scratch[kRowThreads / kWarp];
  const float* xr = x + static_cast<int64_t>(blockIdx.x) * A;
  float* yr = y + static_cast<int64_t>(blockIdx.x) * A;
  float m = -INFINITY;
  for (int64_t i = threadIdx.x; i < A; i += blockDim.x) m = fmaxf(m, xr[i]);
  m = block_reduce(m, scratch, MaxOp{});
  float s = 0.f;
  for (int64_t i = threadIdx.x; i < A; i += blockDim.x) {
    const float e = expf(xr[i] - m);
    yr[i] = e;
    s += e;
  }
  const float inv = 1.f / block_reduce(s, scratch, SumOp{});
  for (int64_t i = threadIdx.x; i < A; i += blockDim.x) yr[i] *= inv;
}

// Softmax over the middle axis of [outer][A][inner]: a thread per (outer, inner).
__global__ void softmax_strided(int64_t outer, int64_t A, int64_t inner, const float* __restrict__ x,
                                float* __restrict__ y) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= outer * inner) return;
  const int64_t base = i / inner * A * inner + i % inner;
  float m = -INFINITY, s = 0.f;
  for (int64_t a = 0; a < A; ++a) m = fmaxf(m, x[base + a * inner]);
  for (int64_t a = 0; a < A; ++a) s += expf(x[base + a * inner] - m);
  for (int64_t a = 0; a < A; ++a) y[base + a * inner] = expf(x[base + a * inner] - m) / s;
}

// The most keys an attention row keeps in shared memory.
constexpr int kAttentionMaxKeys = 4096;

struct AttentionShape {
  int64_t Sq, D, Sk, Dv, mq, mk;
  float scale;
};

// o = softmax(q . k_t * scale + mask) . v of one query row of one head: a block per (head b,
// row i), blockIdx.x = b * Sq + i. q [Sq][D], k_t [D][Sk], v [Sk][Dv], mask [mq][mk] at the
// head's offsets (qo, ko, vo, mo: elements).
__global__ void attention_rows(AttentionShape s, const float* __restrict__ q, const float* __restrict__ k,
                               const float* __restrict__ v, const float* __restrict__ mask,
                               const int64_t* __restrict__ offsets, float* __restrict__ o) {
  __shared__ float scratch[kRowThreads / kWarp];
  __shared__ float p[kAttentionMaxKeys];
  const int64_t b = blockIdx.x / s.Sq, i = blockIdx.x % s.Sq;
  const int64_t* off = offsets + b * 4;
  const float* qr = q + off[0] + i * s.D;
  const float* kb = k + off[1];
  const float* vb = v + off[2];
  const float* mr = mask ? mask + off[3] + (s.mq == 1 ? 0 : i * s.mk) : nullptr;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < s.Sk; j += blockDim.x) {
    float acc = 0.f;
    for (int64_t d = 0; d < s.D; ++d) acc += qr[d] * kb[d * s.Sk + j];
    acc *= s.scale;
    if (mr) acc += mr[s.mk == 1 ? 0 : j];
    p[j] = acc;
    m = fmaxf(m, acc);
  }
  m = block_reduce(m, scratch, MaxOp{});
  float sum = 0.f;
  for (int64_t j = threadIdx.x; j < s.Sk; j += blockDim.x) {
    const float e = expf(p[j] - m);
    p[j] = e;
    sum += e;
  }
  const float inv = 1.f / block_reduce(sum, scratch, SumOp{});  // its barriers also publish p
  float* orow = o + (b * s.Sq + i) * s.Dv;
  for (int64_t d = threadIdx.x; d < s.Dv; d += blockDim.x) {
    float acc = 0.f;
    for (int64_t j = 0; j < s.Sk; ++j) acc += p[j] * vb[j * s.Dv + d];
    orow[d] = acc * inv;
  }
}

// Gather along an axis: y[o][j][r] = x[o][idx[j]][r] for [outer][D][inner], negative indices
// counting from the end. An index outside [-D, D) sets *status to 1 (the run then fails) and
// writes 0.
template <class T, class I>
__global__ void gather_rows(int64_t outer, int64_t D, int64_t n, int64_t inner, const T* __restrict__ x,
                            const I* __restrict__ idx, T* __restrict__ y, int* status) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= outer * n * inner) return;
  const int64_t r = i % inner, j = i / inner % n, o = i / (inner * n);
  int64_t k = static_cast<int64_t>(idx[j]);
  if (k < 0) k += D;
  if (k < 0 || k >= D) {
    *status = 1;
    y[i] = T(0);
    return;
  }
  y[i] = x[(o * D + k) * inner + r];
}

// A separable resize of [outer][X0][mid][X1][inner] to [outer][Y0][mid][Y1][inner]: per output
// coordinate of each resized axis, its input taps idx and weights w (taps of them each;
// ops/core/resize_geometry.h). One resized axis: X1 = Y1 = 1 with one tap of weight 1.
struct ResizeShape {
  int64_t outer, X0, Y0, mid, X1, Y1, inner, taps0, taps1;
};

__global__ void resize_separable(ResizeShape s, const int64_t* __restrict__ idx0, const float* __restrict__ w0,
                                 const int64_t* __restrict__ idx1, const float* __restrict__ w1,
                                 const float* __restrict__ x, float* __restrict__ y) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= s.outer * s.Y0 * s.mid * s.Y1 * s.inner) return;
  const int64_t r = i % s.inner;
  int64_t t = i / s.inner;
  const int64_t j1 = t % s.Y1;
  t /= s.Y1;
  const int64_t m = t % s.mid;
  t /= s.mid;
  const int64_t j0 = t % s.Y0;
  const int64_t o = t / s.Y0;
  float acc = 0.f;
  for (int64_t a = 0; a < s.taps0; ++a) {
    const float* xa = x + ((o * s.X0 + idx0[j0 * s.taps0 + a]) * s.mid + m) * s.X1 * s.inner + r;
    float row = 0.f;
    for (int64_t b = 0; b < s.taps1; ++b) row += w1[j1 * s.taps1 + b] * xa[idx1[j1 * s.taps1 + b] * s.inner];
    acc += w0[j0 * s.taps0 + a] * row;
  }
  y[i] = acc;
}

// The plain RNN's, GRU's and LSTM's steps in the form ops/core/recurrent_form.h reads (default
// activations): a block per (direction, batch element) sequence, its steps in order. xw holds
// every step's input projection W x (no bias) [dirs][rows][G*H], rows in X's order; state is per
// sequence 3H + G*H
// floats of scratch (h, c, r * h, the recurrent products). The block's threads share out the
// products' rows, then the hidden units, with a barrier between.
struct RecurrentDims {
  int64_t seq, batch, hidden, dirs;
  bool lstm, reverse_only, batch_major, linear_before_reset, input_forget, rnn;
};

__global__ void recurrent_steps(RecurrentDims g, const float* __restrict__ xw, const float* __restrict__ r,
                                const float* __restrict__ wb, const float* __restrict__ rb,
                                const float* __restrict__ p, const float* __restrict__ h0,
                                const float* __restrict__ c0, float* __restrict__ y, float* __restrict__ yh,
                                float* __restrict__ yc, float* __restrict__ state) {
  const int64_t H = g.hidden, GH = (g.lstm ? 4 : g.rnn ? 1 : 3) * H, rows = g.seq * g.batch;
  const int64_t pair = blockIdx.x, d = pair / g.batch, b = pair % g.batch;
  float* h = state + pair * (3 * H + GH);
  float* c = h + H;
  float* rh = c + H;
  float* rg = rh + H;
  const float* rd = r + d * GH * H;
  const float* wbd = wb + d * GH;
  const float* rbd = rb + d * GH;
  const float* pd = p ? p + d * 3 * H : nullptr;
  const int64_t st = (g.batch_major ? b * g.dirs + d : d * g.batch + b) * H;
  for (int64_t j = threadIdx.x; j < H; j += blockDim.x) {
    h[j] = h0 ? h0[st + j] : 0.f;
    c[j] = c0 ? c0[st + j] : 0.f;
  }
  __syncthreads();
  // GRU without linear_before_reset takes r * h into the candidate's recurrent product.
  const int64_t direct = g.lstm || g.rnn || g.linear_before_reset ? GH : 2 * H;
  for (int64_t step = 0; step < g.seq; ++step) {
    const int64_t t = g.reverse_only || d == 1 ? g.seq - 1 - step : step;
    const int64_t row = g.batch_major ? b * g.seq + t : t * g.batch + b;
    const float* xg = xw + (d * rows + row) * GH;
    for (int64_t k = threadIdx.x; k < direct; k += blockDim.x) {
      float s = rbd[k];
      for (int64_t j = 0; j < H; ++j) s += rd[k * H + j] * h[j];
      rg[k] = s;
    }
    __syncthreads();
    if (!g.lstm && !g.rnn && !g.linear_before_reset) {
      for (int64_t j = threadIdx.x; j < H; j += blockDim.x) rh[j] = math::sigmoid(xg[H + j] + wbd[H + j] + rg[H + j]) * h[j];
      __syncthreads();
      for (int64_t k = 2 * H + threadIdx.x; k < GH; k += blockDim.x) {
        float s = rbd[k];
        for (int64_t j = 0; j < H; ++j) s += rd[k * H + j] * rh[j];
        rg[k] = s;
      }
      __syncthreads();
    }
    float* yt = y ? y + (g.batch_major ? (b * g.seq + t) * g.dirs + d : (t * g.dirs + d) * g.batch + b) * H : nullptr;
    for (int64_t j = threadIdx.x; j < H; j += blockDim.x) {
      if (g.lstm) {
        const float pi = pd ? pd[j] * c[j] : 0.f, pf = pd ? pd[2 * H + j] * c[j] : 0.f;
        const float i = math::sigmoid(xg[j] + wbd[j] + rg[j] + pi);
        const float f = g.input_forget ? 1.f - i : math::sigmoid(xg[2 * H + j] + wbd[2 * H + j] + rg[2 * H + j] + pf);
        const float cand = tanhf(xg[3 * H + j] + wbd[3 * H + j] + rg[3 * H + j]);
        const float cn = f * c[j] + i * cand;
        const float o = math::sigmoid(xg[H + j] + wbd[H + j] + rg[H + j] + (pd ? pd[H + j] * cn : 0.f));
        c[j] = cn;
        h[j] = o * tanhf(cn);
      } else if (g.rnn) {
        h[j] = tanhf(xg[j] + wbd[j] + rg[j]);
      } else {
        const float z = math::sigmoid(xg[j] + wbd[j] + rg[j]);
        const float hr = g.linear_before_reset ? math::sigmoid(xg[H + j] + wbd[H + j] + rg[H + j]) * rg[2 * H + j]
                                               : rg[2 * H + j];
        const float cand = tanhf(xg[2 * H + j] + wbd[2 * H + j] + hr);
        h[j] = (1.f - z) * cand + z * h[j];
      }
      if (yt) yt[j] = h[j];
    }
    __syncthreads();
  }
  for (int64_t j = threadIdx.x; j < H; j += blockDim.x) {
    if (yh) yh[st + j] = h[j];
    if (yc) yc[st + j] = c[j];
  }
}

// Blocks of kThreads threads enough for n threads.
constexpr int kThreads = 256;
inline unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

}  // namespace kiln_kernels
