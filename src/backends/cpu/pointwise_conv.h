// kiln's channels-last 1x1 convolution (pointwise_conv.cpp): written for few pixels and wide
// weights streaming from L3; inside kiln.ConvConcat also for squeezenet's expand 1x1 convs,
// writing their channel slice in place.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/aligned_floats.h"
#include "ops/core/activation.h"

namespace kiln::backends::cpu {

// As the default kernel: up to this many pixels per image (squeezenet's 55x55 and 27x27
// squeeze convs, efficientnet's 56x56 and 28x28 ones). 256 on the Xeon, where beyond that the
// weights were reused enough for oneDNN's blocking to win; on Zen 5 kiln's kernel wins there
// too: 4096 against 256, squeezenet1_1 0.956-0.990x the time at 1 thread and 0.976-0.983x at 2,
// efficientnet_b0 0.979-1.0x / 0.965-0.995x, mobilenet_v2 0.99-1.01x (paired).
constexpr int64_t kMaxPixels = 4096;

// The 1x1 conv itself, on pixels at hand: a kiln.ConvChain runs its 1x1 layers on the rows of
// its line buffers with it. Up to 24 outputs it works in pair mode (two input channels per
// broadcast, pointwise_conv.cpp), else in blocks of up to 64 outputs. Needs AVX-512 (the caller
// checks has_avx512(), simd.h).
class PointwiseRows {
 public:
  // w: ONNX's [N, K, 1, 1]; bias: N floats or nullptr; `ldy` >= N: floats between output pixels;
  // `threads`: of the team that runs the conv (it picks the depth of the input-channel ranges).
  PointwiseRows(int64_t K, int64_t N, const float* w, const float* bias, ops::Activation act, int64_t ldy,
                int threads = 1);

  // y[m] = act(x[m] * W + bias (+ z[m])) for pixels m in [m0, m1): x's pixels K floats apart,
  // y's ldy, z's (the residual, or nullptr) N; `s` (or nullptr) scales input channel k by s[k].
  void rows(const float* x, int64_t m0, int64_t m1, float* y, const float* z, const float* s) const;
  // The same for the outputs of parts [part0, part1) only (of parts(): blocks of up to 64
  // outputs; one part in pair mode), so that threads can split the outputs.
  void rows(const float* x, int64_t m0, int64_t m1, float* y, const float* z, const float* s, int64_t part0,
            int64_t part1) const;
  int64_t parts() const;

  int64_t K() const { return K_; }
  int64_t N() const { return N_; }

  // A block of up to 64 output channels, its weights packed [K][nv * 16] at `offset` (zeros
  // past N); `tail` masks its last vector's outputs.
  struct Block {
    int64_t n0, nv, offset;
    __mmask16 tail;
  };

 private:
  // Pair mode (pointwise_conv.cpp) up to this many input channels.
  static constexpr int64_t kPairMaxK = 1024;

  int64_t K_, N_, ldy_;
  ops::Activation act_;
  int64_t pair_vectors_ = 0;  // vectors of 8 outputs in pair mode, 0 in blocks
  int64_t depth_;             // input channels per range for 64 outputs (pointwise_conv.cpp)
  AlignedFloats packed_;
  std::vector<float> bias_;
  std::vector<Block> blocks_;
};

// The kernel for `rows` rows of K floats times constant weights w ([N][K], copied) into rows of
// N floats, with PointwiseRows' epilogue (bias, activation): a linear layer
// (matmul_rows.cpp). nullptr without AVX-512.
std::unique_ptr<Kernel> make_pointwise_rows_kernel(int64_t rows, int64_t K, int64_t N, const float* w,
                                                   const float* bias, ops::Activation act, int threads);

// The kernel for a channels-last 1x1 stride-1 FusedConv (group 1, no channel scale) of at most
// `max_pixels` pixels per image, or nullptr (also without AVX-512); `out_channels_total` > 0
// makes its output a channel slice of a tensor with that many channels.
std::unique_ptr<Kernel> make_kiln_pointwise(const ir::Node& node, int threads, int64_t out_channels_total = 0,
                                            int64_t max_pixels = kMaxPixels);

}  // namespace kiln::backends::cpu
