// kiln's channels-last 1x1 convolution (pointwise_conv.cpp): written for few pixels and wide
// weights streaming from L3; inside kiln.ConvConcat also for squeezenet's expand 1x1 convs,
// writing their channel slice in place.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/aligned_floats.h"
#include "kernels/pointwise_rows.h"
#include "ops/core/activation.h"
#include "plan/kernel_spec.h"

namespace kiln::backends::cpu {

// The 1x1 conv itself, on pixels at hand: a kiln.ConvChain runs its 1x1 layers on the rows of
// its line buffers with it. Up to 24 outputs it works in pair mode (two input channels per
// broadcast, pointwise_conv.cpp), else in blocks of up to 64 outputs. Needs AVX-512 (the caller
// checks has_avx512()).
// The choices kiln's 1x1 kernel runs by (its KernelSpec parameters "depth", "pair", "split").
struct PointwiseChoice {
  int64_t depth = 64;          // input channels per range for 64 outputs (their weights stay in L1)
  bool pair = false;           // pair mode: two input channels per broadcast (up to 24 outputs)
  bool split_outputs = false;  // threads split the output blocks rather than the pixels
};
// The rule: depth 64 at one thread, 128 in teams; pair mode up to 24 outputs and kPairMaxK
// inputs; outputs split from `split_min_bytes` of weights where each thread gets two blocks and
// the split pays for its `rows` (outputs_split_pays; 0: not known, the weights decide).
PointwiseChoice pointwise_rule(int64_t K, int64_t N, int threads, int64_t split_min_bytes, int64_t rows = 0);
// Whether a team of `threads` splitting the N outputs of `rows` rows of K inputs beats splitting
// the rows (true where `rows` is 0): the input each thread would read from the other cores' caches
// against the weights each would stream in full (team_costs.h).
bool outputs_split_pays(int64_t rows, int64_t K, int64_t N, int threads);
// The rows (images x output pixels) of N outputs the split rule weighs for a 1x1 conv `node`: 0
// (the weights alone decide) where its output's shape is not static, or where a depthwise conv
// (a group per channel) or a global pool reads it: those follow its channel split
// (row_conv_split, global_pool_split), so their halos and sums stay on the core that wrote them.
int64_t pointwise_split_rows(const ir::Node& node, int64_t N);
std::map<std::string, plan::ParamValue> pointwise_params(const PointwiseChoice& c);
// The choice a spec holds; nullopt when a parameter is missing or invalid for K x N at the
// spec's threads.
std::optional<PointwiseChoice> pointwise_choice_of(const plan::KernelSpec& s, int64_t K, int64_t N);
plan::ParamChoices pointwise_choices(int64_t K, int64_t N, int threads);
// A factory's choose() and choices() (kernels.h) for an implementation on this kernel, whose
// nodes' K and N `dims_of` reads (nullopt: another form, no parameters).
using PointwiseDimsOf = std::optional<std::pair<int64_t, int64_t>> (*)(const ir::Node&);
std::function<std::map<std::string, plan::ParamValue>(const ir::Node&, int)> pointwise_chooser(PointwiseDimsOf dims_of,
                                                                                               int64_t split_min_bytes);
std::function<plan::ParamChoices(const ir::Node&, int)> pointwise_lister(PointwiseDimsOf dims_of);

// Pair mode (pointwise_conv.cpp) up to this many input channels.
constexpr int64_t kPairMaxK = kiln_kernels::kPointwisePairMaxK;

// Weights of N outputs by K inputs, as the model holds them: [N][K] (a conv's), or k_major
// [K][N] (a MatMul's B), read once when they are packed.
struct RowWeights {
  RowWeights(const float* d, bool km = false) : data(d), k_major(km) {}  // NOLINT: a pointer is [N][K]
  float at(int64_t n, int64_t k, int64_t K, int64_t N) const { return k_major ? data[k * N + n] : data[n * K + k]; }
  const float* data;
  bool k_major;
};

class PointwiseRows {
 public:
  // w: ONNX's [N, K, 1, 1]; bias: N floats or nullptr; `ldy` >= N: floats between output pixels;
  // `threads`: of the team that runs the conv (it picks the depth of the input-channel ranges).
  PointwiseRows(int64_t K, int64_t N, RowWeights w, const float* bias, ops::Activation act, int64_t ldy,
                int threads = 1);
  // With the depth and pair mode of `c`.
  PointwiseRows(int64_t K, int64_t N, RowWeights w, const float* bias, ops::Activation act, int64_t ldy,
                const PointwiseChoice& c);

  // y[m] = act(x[m] * W + bias (+ z[m])) for pixels m in [m0, m1): x's pixels K floats apart,
  // y's ldy, z's (the residual, or nullptr) N; `s` (or nullptr) scales input channel k by s[k].
  void rows(const float* x, int64_t m0, int64_t m1, float* y, const float* z, const float* s) const;
  // The same for the outputs of parts [part0, part1) only (of parts(): blocks of up to 64
  // outputs; one part in pair mode), so that threads can split the outputs; with `stride`,
  // output pixel m reads input pixel stride.input_pixel(m) of x.
  void rows(const float* x, int64_t m0, int64_t m1, float* y, const float* z, const float* s, int64_t part0,
            int64_t part1, const kiln_kernels::PixelStride& stride = {}) const;
  int64_t parts() const;

  int64_t K() const { return layout_.K(); }
  int64_t N() const { return layout_.N(); }

 private:
  kiln_kernels::PointwiseLayout layout_;  // src/kernels/pointwise_rows.h: the kernel itself
  ops::Activation act_;
  AlignedFloats packed_;
  std::vector<float> bias_;
};

// The kernel for `rows` rows of K floats times constant weights w (packed) into rows of
// N floats, with PointwiseRows' epilogue (bias, activation): a linear layer
// (matmul_rows.cpp). nullptr without AVX-512.
std::unique_ptr<Kernel> make_pointwise_rows_kernel(int64_t rows, int64_t K, int64_t N, RowWeights w,
                                                   const float* bias, ops::Activation act, int threads,
                                                   const PointwiseChoice& c);
// Threads split a linear layer's rows by the pointwise rule: it sits between row-split ops
// (LayerNorm, Gelu, the next layer), so splitting its weights has each core read the other's
// half of the activations. matmul_rows_split_outputs names the exception.
constexpr int64_t kRowsSplitMinWeightBytes = std::numeric_limits<int64_t>::max();
// Whether a team splits a linear layer of `rows` rows (K -> N) by its outputs: where its weights
// come from beyond a core's L2 and are at least twice its input and output rows (a transformer's
// last stage: 49 rows through 768 x 3072 weights, 9.4 MB), each core streaming all the weights
// for its half of the rows costs more than reading the rows it did not write.
bool matmul_rows_split_outputs(int64_t rows, int64_t K, int64_t N, int threads);

// A channels-last 1x1 FusedConv kiln's 1x1 kernel takes (group 1, plain layout, constant
// weights, an epilogue it applies, no padding or dilation; needs AVX-512): its images, output
// pixels per image, K, N, activation and stride, or nullopt. Stride 1 only unless `strided`.
struct PointwiseConvShape {
  int64_t images, pixels, K, N;
  ops::Activation act;
  kiln_kernels::PixelStride stride;  // unit, or the conv's strides over an in_w-wide image
  int64_t in_pixels;                 // input pixels per image
};
std::optional<PointwiseConvShape> pointwise_conv_shape(const ir::Node& node, bool strided = false);

// The kernel for a channels-last 1x1 FusedConv (group 1), or nullptr (also without AVX-512);
// `out_channels_total` > 0 makes its output a channel slice of a tensor with that many channels.
// The default kernel for every image size: its work per pixel does not change with the pixels'
// count, and it runs inside a held team (Kernel::runs_in_team), where a oneDNN conv in the middle
// of a run splits the team's stretch in two.
std::unique_ptr<Kernel> make_kiln_pointwise(const ir::Node& node, int threads, int64_t out_channels_total = 0,
                                            const PointwiseChoice* choice = nullptr);
// From this many bytes of weights, threads split the outputs rather than the pixels where the
// rows are few against the outputs (outputs_split_pays): each core then streams its half of
// weights that come from L3 (squeezenet1_1's 512 -> 1000 classifier, the 7x7 layers of
// mobilenet_v2 and efficientnet_b0, ResNet-50's last stages) instead of all of them. Below it,
// reading the other core's pixels costs more than the weights save
// (bench/results/history-code-comments.md).
constexpr int64_t kSplitOutputsMinWeightBytes = 512 << 10;
// Where kiln_pointwise takes `node` and its rule splits the output blocks (parts of 64 outputs,
// as kChannelSplitPart): the team that splits them, for a reader of its output to split the
// channels the same way; else nullopt.
std::optional<int> pointwise_output_team(const ir::Node& node, int threads);
// K and N of a 1x1 FusedConv's weights ([N, K, 1, 1]); nullopt for another form.
std::optional<std::pair<int64_t, int64_t>> pointwise_dims(const ir::Node& node);

}  // namespace kiln::backends::cpu
