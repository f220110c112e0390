// A constant matrix packed for matrix-vector products bound by reading it once, in the layout of
// src/kernels/gemv.h (column blocks of up to kBlock outputs, shared with emitted code). The gemv
// kernels (a Gemm of one row, a 1x1 conv of one pixel) and the recurrent cells' per-step
// products use it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/aligned_floats.h"
#include "kernels/gemv.h"

namespace kiln::backends::cpu {

class PackedGemv {
 public:
  static constexpr int64_t kBlock = kiln_kernels::GemvLayout::kBlock;

  PackedGemv() = default;
  // alpha * W with W [N, K] row-major at `w`, or with `k_major` [K, N]. `key` names the packed
  // format for stored plans (aligned_floats.h).
  PackedGemv(const float* w, bool k_major, float alpha, int64_t n, int64_t k, const std::string& key);

  int64_t n() const { return layout_.n; }
  int64_t k() const { return layout_.k; }
  const kiln_kernels::GemvLayout& layout() const { return layout_; }
  int64_t blocks() const { return layout_.blocks(); }
  int64_t block_outputs(int64_t blk) const { return layout_.block_outputs(blk); }  // outputs [blk * kBlock, + this)
  // acc[0, block_outputs) = the block's outputs over inputs [k0, k1) of x (x indexed from 0);
  // acc holds kBlock floats.
  void block(int64_t blk, const float* x, int64_t k0, int64_t k1, float* acc) const;
  // y[n] = (W x)[n] + (bias ? bias[n] : 0) for every output, on the calling thread.
  void apply(const float* x, const float* bias, float* y) const;
  // The same for `rows` vectors x + i * x_stride into y + i * y_stride, block by block, so each
  // block is read from memory once for all of them rather than once per vector.
  void apply_rows(const float* x, int64_t rows, int64_t x_stride, const float* bias, float* y, int64_t y_stride) const;

 private:
  AlignedFloats packed_;  // 64-byte aligned: each row of a block is whole cache lines
  kiln_kernels::GemvLayout layout_;
};

}  // namespace kiln::backends::cpu
