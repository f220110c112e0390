#include "backends/cpu/packed_gemv.h"

#include <algorithm>

#include "backends/cpu/simd.h"

namespace kiln::backends::cpu {

namespace {

// The shared block product compiled once per ISA level (KILN_SIMD).
KILN_SIMD void block_product(const kiln_kernels::GemvLayout& L, const float* packed, int64_t blk, const float* x, int64_t k0,
                          int64_t k1, float* acc) {
  kiln_kernels::gemv_block(L, packed, blk, x, k0, k1, acc);
}

}  // namespace

PackedGemv::PackedGemv(const float* w, bool k_major, float alpha, int64_t n, int64_t k, const std::string& key)
    : layout_{n, k} {
  packed_ = packed_floats(static_cast<size_t>(layout_.packed_size()), key,
                          [&](float* packed) { layout_.pack(w, k_major, alpha, packed); });
}

void PackedGemv::block(int64_t blk, const float* x, int64_t k0, int64_t k1, float* acc) const {
  block_product(layout_, packed_.get(), blk, x, k0, k1, acc);
}

void PackedGemv::apply(const float* x, const float* bias, float* y) const {
  alignas(64) float acc[kBlock];
  for (int64_t blk = 0; blk < blocks(); ++blk) {
    const int64_t n0 = blk * kBlock, valid = block_outputs(blk);
    block(blk, x, 0, layout_.k, acc);
    for (int64_t i = 0; i < valid; ++i) y[n0 + i] = acc[i] + (bias ? bias[n0 + i] : 0.f);
  }
}

void PackedGemv::apply_rows(const float* x, int64_t rows, int64_t x_stride, const float* bias, float* y,
                            int64_t y_stride) const {
  alignas(64) float acc[kBlock];
  for (int64_t blk = 0; blk < blocks(); ++blk) {
    const int64_t n0 = blk * kBlock, valid = block_outputs(blk);
    for (int64_t i = 0; i < rows; ++i) {
      block(blk, x + i * x_stride, 0, layout_.k, acc);
      float* yi = y + i * y_stride + n0;
      for (int64_t l = 0; l < valid; ++l) yi[l] = acc[l] + (bias ? bias[n0 + l] : 0.f);
    }
  }
}

}  // namespace kiln::backends::cpu
