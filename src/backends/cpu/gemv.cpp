// Gemm with a single row (M == 1) and constant weights: the classifier of every CNN here
// (1280 -> 1000 on mobilenet/efficientnet). It is a matrix-vector product bound by reading
// the weights once, so the weights are repacked at creation as [N, K] rows (alpha folded in)
// and each output is one contiguous dot product; threads split the rows.
#include <cstring>
#include <memory>
#include <vector>

#include "backends/cpu/kernels.h"
#include "backends/cpu/node_args.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/simd.h"

namespace kiln::backends::cpu {

namespace {

// y[r] = dot(w[r, :], x) + b[r] for r < rows; four rows at a time share each load of x.
KILN_SIMD void gemv_rows(const float* __restrict w, const float* __restrict x, const float* b, float* __restrict y,
                         int64_t rows, int64_t k) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const float* w0 = w + r * k;
    float a0[16] = {}, a1[16] = {}, a2[16] = {}, a3[16] = {};
    int64_t j = 0;
    for (; j + 16 <= k; j += 16)
      for (int l = 0; l < 16; ++l) {
        const float xv = x[j + l];
        a0[l] += w0[j + l] * xv;
        a1[l] += w0[k + j + l] * xv;
        a2[l] += w0[2 * k + j + l] * xv;
        a3[l] += w0[3 * k + j + l] * xv;
      }
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (; j < k; ++j) {
      s0 += w0[j] * x[j];
      s1 += w0[k + j] * x[j];
      s2 += w0[2 * k + j] * x[j];
      s3 += w0[3 * k + j] * x[j];
    }
    for (int l = 0; l < 16; ++l) s0 += a0[l], s1 += a1[l], s2 += a2[l], s3 += a3[l];
    y[r] = s0 + (b ? b[r] : 0.f);
    y[r + 1] = s1 + (b ? b[r + 1] : 0.f);
    y[r + 2] = s2 + (b ? b[r + 2] : 0.f);
    y[r + 3] = s3 + (b ? b[r + 3] : 0.f);
  }
  for (; r < rows; ++r) {
    const float* wr = w + r * k;
    float a[16] = {};
    int64_t j = 0;
    for (; j + 16 <= k; j += 16)
      for (int l = 0; l < 16; ++l) a[l] += wr[j + l] * x[j + l];
    float s = 0;
    for (; j < k; ++j) s += wr[j] * x[j];
    for (int l = 0; l < 16; ++l) s += a[l];
    y[r] = s + (b ? b[r] : 0.f);
  }
}

class GemvKernel : public Kernel {
 public:
  GemvKernel(std::vector<float> w, std::vector<float> bias, int64_t n, int64_t k, int threads)
      : w_(std::move(w)), bias_(std::move(bias)), n_(n), k_(k), threads_(threads) {}
  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const float* x = inputs[0]->data<float>();
    float* y = outputs[0]->data<float>();
    const float* b = bias_.empty() ? nullptr : bias_.data();
    // Blocks of 16 rows keep the four-row inner loop busy on every thread.
    const int64_t blocks = (n_ + 15) / 16;
    const int threads = n_ * k_ >= (1 << 16) ? threads_ : 1;
    parallel_for(blocks, threads, [&](int64_t bb, int64_t be) {
      const int64_t r0 = bb * 16, r1 = std::min(n_, be * 16);
      gemv_rows(w_.data() + r0 * k_, x, b ? b + r0 : nullptr, y + r0, r1 - r0, k_);
    });
  }

 private:
  std::vector<float> w_, bias_;
  int64_t n_, k_;
  int threads_;
};

const Tensor* float_constant(const ir::Value* v) {
  if (!v || !v->is_constant() || v->type.dtype != DType::Float || !v->type.is_static()) return nullptr;
  return &v->constant();
}

std::unique_ptr<Kernel> make_gemv(const ir::Node& node, int threads) {
  if (node.num_inputs() < 2 || node.num_outputs() != 1) return nullptr;
  const ir::Value* a = node.input(0);
  const Tensor* bt = float_constant(node.input(1));
  if (!bt || !plain_elem_size(a) || a->type.dtype != DType::Float || !plain_elem_size(node.output(0))) return nullptr;
  const auto ad = a->type.static_dims(), bd = node.input(1)->type.static_dims();
  if (ad.size() != 2 || bd.size() != 2) return nullptr;
  const bool ta = node.attr_int("transA", 0) != 0, tb = node.attr_int("transB", 0) != 0;
  const int64_t M = ad[ta ? 1 : 0], K = ad[ta ? 0 : 1], N = bd[tb ? 0 : 1];
  if (M != 1 || bd[tb ? 1 : 0] != K || K == 0 || N == 0) return nullptr;
  const float alpha = node.attr_float("alpha", 1.f), beta = node.attr_float("beta", 1.f);
  std::vector<float> w(static_cast<size_t>(N * K));
  const float* src = bt->data<float>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) w[n * K + k] = alpha * (tb ? src[n * K + k] : src[k * N + n]);
  std::vector<float> bias;
  if (node.num_inputs() >= 3 && node.input(2) && beta != 0.f) {
    const Tensor* c = float_constant(node.input(2));
    if (!c) return nullptr;
    const auto cd = node.input(2)->type.static_dims();
    if (cd.size() > 2 || (cd.size() == 2 && cd[0] != 1)) return nullptr;
    const int64_t cn = cd.empty() ? 1 : cd.back();
    if (cn != 1 && cn != N) return nullptr;
    bias.resize(static_cast<size_t>(N));
    for (int64_t n = 0; n < N; ++n) bias[n] = beta * c->data<float>()[cn == 1 ? 0 : n];
  }
  return std::make_unique<GemvKernel>(std::move(w), std::move(bias), N, K, threads);
}

}  // namespace

void add_gemv_kernels(std::vector<KernelFactory>& table) { table.push_back({"", "Gemm", make_gemv, "gemv"}); }

}  // namespace kiln::backends::cpu
