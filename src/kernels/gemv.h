// Matrix-vector products with constant weights, bound by reading the weights once (a CNN's
// classifier at batch 1, an MLP's layers, a 1x1 conv of a 1x1 image): the weights packed in
// column blocks of up to 64 outputs, each [K][width] with width a multiple of 16 (zero-padded),
// so a block's outputs accumulate as y[l] += w[j][l] * x[j], one vector FMA per 16 outputs held
// in registers, independent chains and no horizontal sums, reading the block as one stream.
// kiln's CPU backend runs its gemv kernels and recurrent cells' products on it, and emitted code
// its one-row Gemms: plain loops the compiler vectorizes for the CPU it compiles for.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "activation.h"
#include "parallel.h"

namespace kiln_kernels {

// The packed form of alpha * W for n outputs of k inputs.
struct GemvLayout {
  static constexpr int64_t kBlock = 64;
  int64_t n = 0, k = 0;

  static int64_t round16(int64_t v) { return (v + 15) / 16 * 16; }
  int64_t blocks() const { return (n + kBlock - 1) / kBlock; }
  int64_t block_outputs(int64_t blk) const { return std::min(kBlock, n - blk * kBlock); }  // [blk * kBlock, + this)
  int64_t width(int64_t blk) const { return round16(block_outputs(blk)); }
  // Every block before the last is kBlock wide.
  int64_t offset(int64_t blk) const { return blk * kBlock * k; }
  int64_t packed_size() const { return n == 0 ? 0 : offset(blocks() - 1) + k * width(blocks() - 1); }

  // alpha * W with W [n, k] row-major at `w`, or with `k_major` [k, n], into packed_size()
  // floats at `out`.
  void pack(const float* w, bool k_major, float alpha, float* out) const {
    std::fill(out, out + packed_size(), 0.f);
    for (int64_t blk = 0; blk < blocks(); ++blk) {
      const int64_t n0 = blk * kBlock, valid = block_outputs(blk), wd = width(blk);
      float* dst = out + offset(blk);
      if (k_major)
        for (int64_t j = 0; j < k; ++j)
          for (int64_t l = 0; l < valid; ++l) dst[j * wd + l] = alpha * w[j * n + n0 + l];
      else
        for (int64_t l = 0; l < valid; ++l)
          for (int64_t j = 0; j < k; ++j) dst[j * wd + l] = alpha * w[(n0 + l) * k + j];
    }
  }
};

namespace gemv_detail {

// Sums of U consecutive inputs kept apart, so that W / 16 * U vector FMAs are independent:
// eight, as many as two FMA units with four cycles of latency keep busy. One chain per 16
// outputs alone (a 10-output classifier: one) waits on each FMA's latency, not on the weights.
template <int W>
inline constexpr int kChainInputs = W >= 64 ? 2 : 128 / W;

template <int W>
__attribute__((always_inline)) inline void block_fma(const float* __restrict__ w, const float* __restrict__ x, int64_t k,
                                                     float* __restrict__ acc) {
  constexpr int U = kChainInputs<W>;
  float a[U][W] = {};
  auto step = [&](int u, int64_t j) {
    const float xv = x[j];
    const float* wr = w + j * W;
    // The weights come from memory (activations evicted them since the last run): asking
    // 4 KiB ahead keeps more misses in flight than the hardware prefetcher does alone.
    for (int l = 0; l < W; l += 16) __builtin_prefetch(wr + 1024 + l);
    for (int l = 0; l < W; ++l) a[u][l] += wr[l] * xv;
  };
  int64_t j = 0;
  for (; j + U <= k; j += U)
    for (int u = 0; u < U; ++u) step(u, j + u);
  for (int u = 0; j < k; ++j, ++u) step(u, j);
  for (int l = 0; l < W; ++l) {
    float sum = a[0][l];
    for (int u = 1; u < U; ++u) sum += a[u][l];
    acc[l] = sum;
  }
}

}  // namespace gemv_detail

// acc[0, block_outputs(blk)) = block blk's outputs over inputs [k0, k1) of x (x indexed from 0);
// acc holds kBlock floats.
__attribute__((always_inline)) inline void gemv_block(const GemvLayout& L, const float* packed, int64_t blk,
                                                      const float* x, int64_t k0, int64_t k1, float* acc) {
  const int64_t wd = L.width(blk);
  const float* w = packed + L.offset(blk) + k0 * wd;
  switch (wd) {
    case 16: gemv_detail::block_fma<16>(w, x + k0, k1 - k0, acc); break;
    case 32: gemv_detail::block_fma<32>(w, x + k0, k1 - k0, acc); break;
    case 48: gemv_detail::block_fma<48>(w, x + k0, k1 - k0, acc); break;
    default: gemv_detail::block_fma<64>(w, x + k0, k1 - k0, acc); break;
  }
}

// y = W x, block by block, finish(acc, first output, outputs) writing each block's outputs (bias,
// activation). `threads` share the work: blocks where there are enough, else the inputs (each
// thread a share of the rows, one adding the shares up); split(parts, f) runs f(begin, end) over
// [0, parts) on the team. `block` computes one block (gemv_block, or a caller's compiled copy).
template <typename Block, typename Split, typename Finish>
void gemv(const GemvLayout& L, const float* x, int threads, Block&& block, Split&& split, Finish&& finish) {
  constexpr int64_t kBlock = GemvLayout::kBlock;
  const int64_t blocks = L.blocks();
  if (threads > 1 && blocks < threads) {
    // Fewer blocks than threads (a squeeze-excitation's first FC: 28-48 outputs): the threads
    // split the inputs instead.
    const int team = static_cast<int>(std::min<int64_t>(threads, L.k));
    std::vector<float> partial(static_cast<size_t>(team * blocks * kBlock));
    split(team, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t k0 = L.k * t / team, k1 = L.k * (t + 1) / team;
        for (int64_t blk = 0; blk < blocks; ++blk) block(blk, x, k0, k1, partial.data() + (t * blocks + blk) * kBlock);
      }
    });
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t valid = L.block_outputs(blk);
      float* acc = partial.data() + blk * kBlock;
      for (int t = 1; t < team; ++t)
        for (int64_t i = 0; i < valid; ++i) acc[i] += partial[(t * blocks + blk) * kBlock + i];
      finish(acc, blk * kBlock, valid);
    }
    return;
  }
  auto run = [&](int64_t bb, int64_t be) {
    alignas(64) float acc[kBlock];
    for (int64_t blk = bb; blk < be; ++blk) {
      block(blk, x, 0, L.k, acc);
      finish(acc, blk * kBlock, L.block_outputs(blk));
    }
  };
  if (threads > 1) split(blocks, run);
  else run(0, blocks);
}

// The threads worth splitting a product over: from 16K multiply-adds (efficientnet_b0's
// squeeze-excitation FCs, 28-48 x 240-1152, are bound by reading their weights from L3, which
// two cores do in half the time), else one.
inline int gemv_threads(const GemvLayout& L, int threads) { return L.n * L.k >= (1 << 14) ? threads : 1; }

// y = act(W x + bias) on the team (emitted code's entry): `packed` is L.pack's, bias n floats or
// nullptr.
template <Act A>
void gemv_act(const GemvLayout& L, const float* packed, const float* x, const float* bias, float* y, float a, float b,
              Team* team = nullptr) {
  gemv(
      L, x, gemv_threads(L, team ? team->size() : 1),
      [&](int64_t blk, const float* xv, int64_t k0, int64_t k1, float* acc) { gemv_block(L, packed, blk, xv, k0, k1, acc); },
      [&](int64_t parts, auto&& f) { parallel_for(team, parts, f); },
      [&](const float* acc, int64_t n0, int64_t valid) {
        for (int64_t i = 0; i < valid; ++i) y[n0 + i] = activate<A>(acc[i] + (bias ? bias[n0 + i] : 0.f), a, b);
      });
}

}  // namespace kiln_kernels
