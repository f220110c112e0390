// kiln.NhwcGlobalAveragePool / NhwcGlobalMaxPool: [N, H, W, C] -> [N, 1, 1, C]. A conv that ran
// on two threads left each part of its output in the cache of the core that wrote it, and the
// pool reads those parts where they are (reading the other core's freshly written lines costs
// several times reading one's own, parallel.h). After a kiln_depthwise whose team split the
// channels (a squeeze-excitation's pool after a depthwise conv after a 1x1 conv that split its
// outputs), the pool's team splits the same 64-channel parts. Otherwise an image that fits one
// core's L2 (a network's last feature map) is pooled by one thread: there the hand-off, the
// partials and their combining cost more than the read they would share. A larger one is split
// by pixels: each thread sums (or maxes) a contiguous run of pixels into its own row of
// partials, and the partials are combined after (oneDNN's pooling splits channels, which reads
// every pixel from both cores).
#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "backends/cpu/cache_size.h"
#include "backends/cpu/depthwise_conv.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/nhwc_global_pool.h"
#include "backends/cpu/onednn_common.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/row_conv.h"
#include "backends/cpu/simd.h"

namespace kiln::backends::cpu {

namespace {

// acc[c] += x[p * ld + c] for c in [0, width) over pixels p in [0, n).
KILN_SIMD void sum_pixel_slices(const float* __restrict x, int64_t n, int64_t ld, int64_t width,
                                float* __restrict acc) {
  int64_t p = 0;
  for (; p + 4 <= n; p += 4) {
    const float *a = x + p * ld, *b = a + ld, *c = b + ld, *d = c + ld;
    for (int64_t k = 0; k < width; ++k) acc[k] += (a[k] + b[k]) + (c[k] + d[k]);
  }
  for (; p < n; ++p)
    for (int64_t k = 0; k < width; ++k) acc[k] += x[p * ld + k];
}

// acc[c] = max(acc[c], x[p * ld + c]) for c in [0, width) over pixels p in [0, n).
KILN_SIMD void max_pixel_slices(const float* __restrict x, int64_t n, int64_t ld, int64_t width,
                                float* __restrict acc) {
  for (int64_t p = 0; p < n; ++p)
    for (int64_t k = 0; k < width; ++k) acc[k] = std::max(acc[k], x[p * ld + k]);
}

}  // namespace

void sum_pixels(const float* x, int64_t n, int64_t C, float* acc) { sum_pixel_slices(x, n, C, C, acc); }

namespace {

class NhwcGlobalPoolKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  // `channel_team` > 0: that team splits the channels in parts of kChannelSplitPart, as the
  // producer's did; else pixels as above.
  NhwcGlobalPoolKernel(int64_t n, int64_t pixels, int64_t c, bool is_max, int threads, int channel_team)
      : n_(n), pixels_(pixels), c_(c), is_max_(is_max), channel_team_(channel_team),
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
      if (channel_team_ > 0) {
        parallel_for((c_ + kChannelSplitPart - 1) / kChannelSplitPart, channel_team_, [&](int64_t p0, int64_t p1) {
          const int64_t c0 = p0 * kChannelSplitPart, c1 = std::min(c_, p1 * kChannelSplitPart);
          std::fill(yb + c0, yb + c1, init);
          if (is_max_) {
            max_pixel_slices(xb + c0, pixels_, c_, c1 - c0, yb + c0);
          } else {
            sum_pixel_slices(xb + c0, pixels_, c_, c1 - c0, yb + c0);
            for (int64_t k = c0; k < c1; ++k) yb[k] /= static_cast<float>(pixels_);
          }
        });
        continue;
      }
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
    if (is_max_) max_pixel_slices(x + p0 * c_, p1 - p0, c_, c_, acc);
    else sum_pixel_slices(x + p0 * c_, p1 - p0, c_, c_, acc);
  }

  int64_t n_, pixels_, c_;
  bool is_max_;
  int channel_team_;  // > 0: the threads that split the channels as the producer did
  int team_;          // else the threads that split the pixels: 1 below a core's L2
};

}  // namespace

std::optional<int> global_pool_channel_team(const ir::Node& pool, int threads) {
  const ir::Node* producer = pool.num_inputs() == 1 && pool.input(0) ? pool.input(0)->producer() : nullptr;
  return producer && threads > 1 ? depthwise_channel_team(*producer, threads) : std::nullopt;
}

namespace {

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
                                                threads, global_pool_channel_team(node, threads).value_or(0));
}

}  // namespace

void add_nhwc_global_pool_kernels(std::vector<KernelFactory>& table) {
  table.push_back({"kiln", "NhwcGlobalAveragePool", make_nhwc_global_pool, "kiln"});
  table.push_back({"kiln", "NhwcGlobalMaxPool", make_nhwc_global_pool, "kiln"});
}

}  // namespace kiln::backends::cpu
