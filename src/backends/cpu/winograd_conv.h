// kiln's Winograd convolution, F(4x4, 3x3) or F(2x2, 3x3), on channels-last activations
// (winograd_conv.cpp): 3x3 stride-1 dense convs, written for few input channels (squeezenet1_1's
// expand convs).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/aligned_floats.h"
#include "ops/core/activation.h"
#include "plan/kernel_spec.h"

namespace kiln::backends::cpu {

struct WinogradShape {
  int64_t H = 0, W = 0, C = 0, OH = 0, OW = 0, OC = 0, KH = 3, KW = 3, PT = 0, PL = 0;
};

// Output tiles per block at least (the GEMMs' rows).
constexpr int64_t kWinogradBlockTiles = 24;
// The output tile's side: F(4x4, 3x3) does 36 products per 16 outputs where F(2x2, 3x3) does
// 16 per 4 (make_kiln_winograd picks per image size).
constexpr int kWinogradTile = 4;

class WinogradConv {
 public:
  // weights: [OC, C, 3, 3] as in ONNX; bias: OC floats or nullptr. Needs AVX-512.
  // `tile`: the output tile's side, 2 (F(2x2, 3x3)) or 4 (F(4x4, 3x3)).
  // `split_outputs`: the threads share out the 64-wide output blocks (each transforms the whole
  // input and reads its part of the weights) instead of the tiles (each reads all the weights).
  WinogradConv(const WinogradShape& s, const float* weights, const float* bias, ops::Activation act, int threads,
               int tile = kWinogradTile, int64_t min_block_tiles = kWinogradBlockTiles, bool split_outputs = false);

  // One image: x is [H, W, C]; output pixel (oy, ox) goes to y + (oy * OW + ox) * ldc, its OC
  // channels contiguous (ldc >= OC: a channel slice of a wider tensor). z, when given, is a
  // residual [OH, OW, OC] added before the activation (it may be y itself when ldc == OC).
  void run(const float* x, float* y, int64_t ldc, const float* z = nullptr) const;

  const WinogradShape& shape() const { return s_; }

 private:
  size_t scratch_floats() const;
  // Output tiles [t0, t1) (N x N pixels each, row-major over the image), with the thread's
  // scratch v and m.
  // Outputs [n0, n1) only (n0 a multiple of 64).
  template <int N>
  void block(const float* x, float* y, int64_t ldc, const float* z, int64_t t0, int64_t t1, float* v, float* m,
             int64_t n0, int64_t n1) const;

  WinogradShape s_;
  ops::Activation act_;
  int threads_;
  bool split_outputs_ = false;
  int n_ = 4, positions_ = 36;
  int64_t C16_ = 0, OC16_ = 0, tiles_w_ = 1, tiles_ = 1, blocks_ = 1, max_block_tiles_ = 1;
  AlignedFloats u_;  // transformed weights [positions][OC16 / 64][C16][64] (last block narrower), aligned
  std::vector<float> bias_;  // [OC16]
};

// Whether make_kiln_winograd takes the node (with the rule's parameters): a channels-last 3x3
// stride-1 FusedConv of one group, not blocked, without a channel scale, on a CPU with AVX-512,
// where Winograd pays (winograd_pays).
bool kiln_winograd_accepts(const ir::Node& node);

// winograd_pays' costs, in multiply-adds: a byte of weights streamed costs Winograd 6.7 of them
// and the direct conv 7.5 (its loads overlap its products less), and a oneDNN call about 5 us
// (its memory objects, and at 2+ threads an OpenMP region). Fitted on both kernels' times on
// 3x3 to 14x14 images of 128 to 512 channels at 1 thread
// (bench/results/experiments-20261207-session47.md); kiln.ConvConcat's dealing weighs convs so too.
constexpr double kWinogradWeightByteCost = 6.7, kDirectWeightByteCost = 7.5, kOnednnCallCost = 5e5;

// Whether Winograd (with kiln's n x n output tiles for the shape, winograd_params' "tile")
// beats a direct conv for this shape, by a cost model of each: multiply-adds plus the weights
// each run streams from beyond the caches. A direct conv uses each weight at every output
// pixel; Winograd's transformed weights are (n + 2)^2 / 9 as many and each is used once per
// tile, so on a few pixels of many channels (a late layer of a small input) their stream
// outweighs the products Winograd saves.
bool winograd_pays(const WinogradShape& s);
// The same for a conv node with a 3x3 kernel and static 4-D input and output, channels-last
// (the "channels_last" attribute) or NCHW; false for any other node. oneDNN's Winograd asks it
// too, in the blocked-layout pass and as a kernel.
bool winograd_pays(const ir::Node& node);

// The kernel for such a FusedConv (its residual Z added before the activation), or nullptr; `out_channels_total` > 0 makes its output a channel slice of a tensor
// with that many channels. `tile` (2 or 4) and `block_tiles` (>= 1) as winograd_params
// chooses them when 0; nullptr for other values.
// `split`: "tiles" or "outputs" (WinogradConv's split_outputs), "" for the rule's.
std::unique_ptr<Kernel> make_kiln_winograd(const ir::Node& node, int threads, int64_t out_channels_total = 0,
                                           int tile = 0, int64_t block_tiles = 0, const std::string& split = "");

// The rule's parameters for a node run by `threads`: {"tile": 4 from 20 output pixels a side,
// else 2; "block_tiles": winograd_block_tiles; "split": winograd_split}; empty when the node has
// no static 4-D output.
// Tiles per block: kWinogradBlockTiles where the transformed weights stay in a core's L2 from
// one block to the next (at most half of it). Larger ones, they come from memory again for
// every block (resnet50's 14x14 256 -> 256 convs: 4 MiB, twice per run in 24-tile blocks), so
// the blocks are as few as the L2 holds: each at most what fits beside the two weight panels in
// flight, per thread's share of the tiles.
int64_t winograd_block_tiles(const WinogradShape& s, int tile, int threads);
std::map<std::string, plan::ParamValue> winograd_params(const ir::Node& node, int threads);
// How a team splits a conv (blocks of at least `block_tiles` tiles): "outputs" where the
// transformed weights do not fit a core's L2, the 64-wide output blocks share out evenly, a
// thread's share of the tiles is less than a block (a small image), and the weights each
// thread reads, all of them for each of its blocks of tiles, exceed by more than the input
// (which every thread then reads and transforms) its part of them for every block; else "tiles".
std::string winograd_split(const WinogradShape& s, int tile, int threads, int64_t block_tiles = kWinogradBlockTiles);

}  // namespace kiln::backends::cpu
