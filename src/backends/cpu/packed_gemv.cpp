#include "backends/cpu/packed_gemv.h"

#include <algorithm>

#include "backends/cpu/simd.h"

namespace kiln::backends::cpu {

namespace {

template <int W>
__attribute__((always_inline)) inline void block_fma(const float* __restrict w, const float* __restrict x,
                                                     int64_t k, float* __restrict acc) {
  float a[W] = {};
  for (int64_t j = 0; j < k; ++j) {
    const float xv = x[j];
    const float* wr = w + j * W;
    // The weights come from memory (activations evicted them since the last run): asking
    // 4 KiB ahead keeps more misses in flight than the hardware prefetcher does alone.
    for (int l = 0; l < W; l += 16) __builtin_prefetch(wr + 1024 + l);
    for (int l = 0; l < W; ++l) a[l] += wr[l] * xv;
  }
  for (int l = 0; l < W; ++l) acc[l] = a[l];
}

KILN_SIMD void gemv_block(const float* w, const float* x, int64_t k, int64_t width, float* acc) {
  switch (width) {
    case 16: block_fma<16>(w, x, k, acc); break;
    case 32: block_fma<32>(w, x, k, acc); break;
    case 48: block_fma<48>(w, x, k, acc); break;
    default: block_fma<64>(w, x, k, acc); break;
  }
}

}  // namespace

PackedGemv::PackedGemv(const float* w, bool k_major, float alpha, int64_t n, int64_t k, const std::string& key)
    : n_(n), k_(k) {
  int64_t total = 0;
  for (int64_t n0 = 0; n0 < n_; n0 += kBlock) {
    offset_.push_back(total);
    total += k_ * round16(std::min(kBlock, n_ - n0));
  }
  packed_ = packed_floats(static_cast<size_t>(total), key, [&](float* packed) {
    for (size_t blk = 0; blk < offset_.size(); ++blk) {
      const int64_t n0 = static_cast<int64_t>(blk) * kBlock, valid = std::min(kBlock, n_ - n0), width = round16(valid);
      float* dst = packed + offset_[blk];
      if (k_major)
        for (int64_t j = 0; j < k_; ++j)
          for (int64_t l = 0; l < valid; ++l) dst[j * width + l] = alpha * w[j * n_ + n0 + l];
      else
        for (int64_t l = 0; l < valid; ++l)
          for (int64_t j = 0; j < k_; ++j) dst[j * width + l] = alpha * w[(n0 + l) * k_ + j];
    }
  });
}

int64_t PackedGemv::block_outputs(int64_t blk) const { return std::min(kBlock, n_ - blk * kBlock); }

void PackedGemv::block(int64_t blk, const float* x, int64_t k0, int64_t k1, float* acc) const {
  const int64_t width = round16(block_outputs(blk));
  gemv_block(packed_.get() + offset_[static_cast<size_t>(blk)] + k0 * width, x + k0, k1 - k0, width, acc);
}

void PackedGemv::apply(const float* x, const float* bias, float* y) const {
  alignas(64) float acc[kBlock];
  for (int64_t blk = 0; blk < blocks(); ++blk) {
    const int64_t n0 = blk * kBlock, valid = block_outputs(blk);
    block(blk, x, 0, k_, acc);
    for (int64_t i = 0; i < valid; ++i) y[n0 + i] = acc[i] + (bias ? bias[n0 + i] : 0.f);
  }
}

void PackedGemv::apply_rows(const float* x, int64_t rows, int64_t x_stride, const float* bias, float* y,
                            int64_t y_stride) const {
  alignas(64) float acc[kBlock];
  for (int64_t blk = 0; blk < blocks(); ++blk) {
    const int64_t n0 = blk * kBlock, valid = block_outputs(blk);
    for (int64_t i = 0; i < rows; ++i) {
      block(blk, x + i * x_stride, 0, k_, acc);
      float* yi = y + i * y_stride + n0;
      for (int64_t l = 0; l < valid; ++l) yi[l] = acc[l] + (bias ? bias[n0 + l] : 0.f);
    }
  }
}

}  // namespace kiln::backends::cpu
