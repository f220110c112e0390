// kiln.NhwcGlobalAveragePool / NhwcGlobalMaxPool: [N, H, W, C] -> [N, 1, 1, C]. An image that
// fits one core's L2 (a network's last feature map) is pooled by one thread: there the
// hand-off, the partials and their combining cost more than the read they would share. A
// larger one is split by pixels, not channels: each
// thread sums (or maxes) a contiguous run of pixels into its own row of partials, and the
// partials are combined after. A conv that ran on two threads left each half of its output in
// the cache of the core that wrote it, and this split reads those halves where they are
// (oneDNN's pooling splits channels, which reads every pixel from both cores; reading the other
// core's freshly written lines costs several times reading one's own, parallel.h).
#include <algorithm>
#include <limits>
#include <memory>
#include <vector>

#include "backends/cpu/cache_size.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/nhwc_global_pool.h"
#include "backends/cpu/onednn_common.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/simd.h"

namespace kiln::backends::cpu {

KILN_SIMD void sum_pixels(const float* __restrict x, int64_t n, int64_t C, float* __restrict acc) {
  int64_t p = 0;
  for (; p + 4 <= n; p += 4) {
    const float *a = x + p * C, *b = a + C, *c = b + C, *d = c + C;
    for (int64_t k = 0; k < C; ++k) acc[k] += (a[k] + b[k]) + (c[k] + d[k]);
  }
  for (; p < n; ++p)
    for (int64_t k = 0; k < C; ++k) acc[k] += x[p * C + k];
}

namespace {

// acc[c] = max(acc[c], x[p * C + c]) over pixels p in [0, n).
KILN_SIMD void max_pixels(const float* __restrict x, int64_t n, int64_t C, float* __restrict acc) {
  for (int64_t p = 0; p < n; ++p)
    for (int64_t k = 0; k < C; ++k) acc[k] = std::max(acc[k], x[p * C + k]);
}

class NhwcGlobalPoolKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  NhwcGlobalPoolKernel(int64_t n, int64_t pixels, int64_t c, bool is_max, int threads)
      : n_(n), pixels_(pixels), c_(c), is_max_(is_max),
        team_(static_cast<int>(std::min<int64_t>(
            pixels * c * static_cast<int64_t>(sizeof(float)) > l2_cache_bytes() ? threads : 1, pixels))) {}

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const float* x = inputs[0]->data<float>();
    float* y = outputs[0]->data<float>();
    const float init = is_max_ ? -std::numeric_limits<float>::infinity() : 0.f;
    const int team = team_;
    for (int64_t b = 0; b < n_; ++b) {
      const float* xb = x + b * pixels_ * c_;
      float* yb = y + b * c_;
      if (team <= 1) {
        std::fill(yb, yb + c_, init);
        reduce(xb, 0, pixels_, yb);
      } else {
        std::vector<float> partial(static_cast<size_t>(team * c_), init);
        parallel_for(team, team, [&](int64_t t0, int64_t t1) {
          for (int64_t t = t0; t < t1; ++t)
            reduce(xb, pixels_ * t / team, pixels_ * (t + 1) / team, partial.data() + t * c_);
        });
        std::copy(partial.begin(), partial.begin() + c_, yb);
        for (int t = 1; t < team; ++t)
          for (int64_t k = 0; k < c_; ++k)
            yb[k] = is_max_ ? std::max(yb[k], partial[t * c_ + k]) : yb[k] + partial[t * c_ + k];
      }
      if (!is_max_)
        for (int64_t k = 0; k < c_; ++k) yb[k] /= static_cast<float>(pixels_);
    }
  }

 private:
  void reduce(const float* x, int64_t p0, int64_t p1, float* acc) const {
    if (is_max_) max_pixels(x + p0 * c_, p1 - p0, c_, acc);
    else sum_pixels(x + p0 * c_, p1 - p0, c_, acc);
  }

  int64_t n_, pixels_, c_;
  bool is_max_;
  int team_;  // the threads that split the pixels: 1 below a core's L2
};

std::unique_ptr<Kernel> make_nhwc_global_pool(const ir::Node& node, int threads) {
  if (node.num_inputs() != 1 || node.num_outputs() != 1) return nullptr;
  const ir::Value* x = node.input(0);
  if (!dnnl_util::static_float(x) || !dnnl_util::static_float(node.output(0))) return nullptr;
  const auto d = x->type.static_dims();
  if (d.size() < 3) return nullptr;
  int64_t pixels = 1;
  for (size_t i = 1; i + 1 < d.size(); ++i) pixels *= d[i];
  if (pixels < 1 || d.back() < 1) return nullptr;
  return std::make_unique<NhwcGlobalPoolKernel>(d[0], pixels, d.back(), node.op_type() == "NhwcGlobalMaxPool",
                                                threads);
}

}  // namespace

void add_nhwc_global_pool_kernels(std::vector<KernelFactory>& table) {
  table.push_back({"kiln", "NhwcGlobalAveragePool", make_nhwc_global_pool, "kiln"});
  table.push_back({"kiln", "NhwcGlobalMaxPool", make_nhwc_global_pool, "kiln"});
}

}  // namespace kiln::backends::cpu
