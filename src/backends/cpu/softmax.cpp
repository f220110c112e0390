// Softmax, float32: opset 13's single-axis form and the older flatten-to-2-D form. Both are a
// normalization over `n` elements at stride `inner`, `outer` times (as in src/ops/softmax.cpp).
// Contiguous rows (inner == 1, the attention case) go through softmax_row; a strided axis is
// normalized column-block by column-block so the inner loops still walk memory contiguously.
#include <algorithm>
#include <limits>
#include <memory>
#include <vector>

#include "backends/cpu/kernels.h"
#include "backends/cpu/onednn_common.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/simd.h"
#include "backends/cpu/simd_reduce.h"
#include "backends/cpu/softmax_row.h"
#include "kernels/avx512_activation.h"
#include "kernels/norm.h"

namespace kiln::backends::cpu {

namespace {

// The rows of kernels/norm.h (shared with emitted code), compiled per ISA.
KILN_SIMD void softmax_row_simd(const float* x, float* y, int64_t n, float scale, const float* add, float add_const) {
  kiln_kernels::softmax_row(x, y, n, scale, add, add_const);
}

}  // namespace

void softmax_row(const float* x, float* y, int64_t n, float scale, const float* add, float add_const) {
  if (has_avx512()) kiln_kernels::softmax_row_avx512(x, y, n, scale, add, add_const);
  else softmax_row_simd(x, y, n, scale, add, add_const);
}

namespace {

// Softmax over j of x[j * inner + i] for each column i < w of one [n, inner] block; mx and sum
// are w floats of scratch.
KILN_SIMD void softmax_columns(const float* x, float* y, int64_t n, int64_t inner, int64_t w, float* mx, float* sum) {
  std::fill(mx, mx + w, -std::numeric_limits<float>::infinity());
  std::fill(sum, sum + w, 0.f);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < w; ++i) mx[i] = std::max(mx[i], x[j * inner + i]);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < w; ++i) {
      const float e = kiln_kernels::underflow_to_zero(x[j * inner + i] - mx[i]);
      y[j * inner + i] = e;
      sum[i] += e;
    }
  for (int64_t i = 0; i < w; ++i) sum[i] = 1.f / sum[i];
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < w; ++i) y[j * inner + i] *= sum[i];
}

class SoftmaxKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  SoftmaxKernel(int64_t outer, int64_t n, int64_t inner, int threads)
      : outer_(outer), n_(n), inner_(inner), threads_(threads) {}

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const float* x = inputs[0]->data<float>();
    float* y = outputs[0]->data<float>();
    const int64_t n = n_, inner = inner_, block = n * inner;
    if (inner == 1) {
      parallel_for(outer_, threads_, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) softmax_row(x + o * n, y + o * n, n, 1.f, nullptr, 0.f);
      });
      return;
    }
    constexpr int64_t kCols = 256;  // columns per work item: the scratch and one row stay in L1
    const int64_t chunks = (inner + kCols - 1) / kCols;
    parallel_for(outer_ * chunks, threads_, [&](int64_t b, int64_t e) {
      float scratch[2 * kCols];
      for (int64_t item = b; item < e; ++item) {
        const int64_t o = item / chunks, i0 = item % chunks * kCols, w = std::min(kCols, inner - i0);
        softmax_columns(x + o * block + i0, y + o * block + i0, n, inner, w, scratch, scratch + kCols);
      }
    });
  }

 private:
  int64_t outer_, n_, inner_;
  int threads_;
};

int64_t product(const std::vector<int64_t>& d, size_t b, size_t e) {
  int64_t p = 1;
  for (size_t i = b; i < e; ++i) p *= d[i];
  return p;
}

std::unique_ptr<Kernel> make_softmax(const ir::Node& node, int threads) {
  if (node.num_inputs() != 1 || node.num_outputs() < 1 || !node.owner()) return nullptr;
  if (!dnnl_util::static_float(node.input(0)) || !dnnl_util::static_float(node.output(0))) return nullptr;
  const std::vector<int64_t> d = node.input(0)->type.static_dims();
  if (node.output(0)->type.static_dims() != d) return nullptr;
  const int64_t rank = static_cast<int64_t>(d.size());
  const bool legacy = node.owner()->opset("") < 13;
  int64_t axis = node.attr_int("axis", legacy ? 1 : -1);
  int64_t outer, n, inner;
  if (legacy) {
    const int64_t r = std::max<int64_t>(rank, 1);
    if (axis < -r || axis > r) return nullptr;
    if (axis < 0) axis += r;
    outer = product(d, 0, std::min(axis, rank));
    n = product(d, std::min(axis, rank), rank);
    inner = 1;
  } else {
    if (rank == 0 || axis < -rank || axis >= rank) return nullptr;
    if (axis < 0) axis += rank;
    outer = product(d, 0, axis);
    n = d[axis];
    inner = product(d, axis + 1, rank);
  }
  if (outer * n * inner == 0) return nullptr;
  return std::make_unique<SoftmaxKernel>(outer, n, inner, threads);
}

}  // namespace

void add_softmax_kernels(std::vector<KernelFactory>& table) { table.push_back({"", "Softmax", make_softmax}); }

}  // namespace kiln::backends::cpu
