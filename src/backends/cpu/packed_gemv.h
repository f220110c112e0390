// A constant matrix packed for matrix-vector products bound by reading it once: column blocks of
// up to kBlock outputs, each [K][width] with width a multiple of 16 (zero-padded), so a block's
// outputs accumulate as y[l] += w[j][l] * x[j], one vector FMA per 16 outputs held in registers,
// independent chains and no horizontal sums, reading the block as one stream. The gemv kernels
// (a Gemm of one row, a 1x1 conv of one pixel) and the recurrent cells' per-step products use it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/aligned_floats.h"

namespace kiln::backends::cpu {

class PackedGemv {
 public:
  static constexpr int64_t kBlock = 64;

  PackedGemv() = default;
  // alpha * W with W [N, K] row-major at `w`, or with `k_major` [K, N]. `key` names the packed
  // format for stored plans (aligned_floats.h).
  PackedGemv(const float* w, bool k_major, float alpha, int64_t n, int64_t k, const std::string& key);

  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  int64_t blocks() const { return static_cast<int64_t>(offset_.size()); }
  int64_t block_outputs(int64_t blk) const;  // outputs [blk * kBlock, + this)
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
  std::vector<int64_t> offset_;  // per block
  int64_t n_ = 0, k_ = 0;
};

}  // namespace kiln::backends::cpu
