// kiln.NhwcGlobalAveragePool / NhwcGlobalMaxPool: [N, H, W, C] -> [N, 1, 1, C]. A kernel that
// ran on two threads left each part of its output in the cache of the core that wrote it, and
// the pool reads those parts where they are: reading lines the other core has just written
// costs several times reading one's own (parallel.h), more than the hand-off to the team and the
// combining of partial sums cost even on a 7x7 image. So the pool's team splits as its
// producer's did (global_pool_split): the same 64-channel parts after a depthwise conv that
// split its channels or a 1x1 conv that split its outputs (a squeeze-excitation's pool, a
// network's last feature map), else the pixels, each thread summing (or maxing) a contiguous run
// into its own row of partials, combined after (oneDNN's pooling splits channels, which reads
// every pixel from both cores). After a producer too small for a team, one thread pools, and so
// it does an image within one core's L2 where the workers are not waiting for a job now (the
// first job of a team held after an OpenMP kernel: the hand-off would wait for them to start).
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
#include "backends/cpu/pointwise_conv.h"
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
  NhwcGlobalPoolKernel(int64_t n, int64_t pixels, int64_t c, bool is_max, const GlobalPoolSplit& split)
      : n_(n), pixels_(pixels), c_(c), is_max_(is_max), channel_team_(split.channels ? split.team : 0),
        team_(split.channels ? 1 : static_cast<int>(std::min<int64_t>(split.team, pixels))),
        big_(pixels * c * static_cast<int64_t>(sizeof(float)) > l2_cache_bytes()) {}

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
        // The same `team` parts of the pixels, each summed into its own row and combined in
        // order, however many threads run them: the result does not depend on the run's team
        // (a stretch run on one thread, workers not waiting), so every run gives the same bits.
        // The rows are the calling thread's, kept from run to run; the team writes them through
        // `rows` (a thread_local named inside the lambda would be each worker's own).
        thread_local std::vector<float> partial;
        partial.assign(static_cast<size_t>(team * c_), init);
        float* rows = partial.data();
        auto parts = [&](int64_t t0, int64_t t1) {
          for (int64_t t = t0; t < t1; ++t) reduce(xb, pixels_ * t / team, pixels_ * (t + 1) / team, rows + t * c_);
        };
        // A split whose hand-off would wait for workers still starting or blocked costs more
        // than the pool itself, unless the image is beyond one core's L2.
        const HeldTeam* held = HeldTeam::current();
        if (!big_ && !(held && held->workers_waiting())) parts(0, team);
        else parallel_for(team, team, parts);
        std::copy(rows, rows + c_, yb);
        for (int t = 1; t < team; ++t)
          for (int64_t k = 0; k < c_; ++k) yb[k] = is_max_ ? std::max(yb[k], rows[t * c_ + k]) : yb[k] + rows[t * c_ + k];
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
  int channel_team_;  // > 0: the threads that split the channels in parts of kChannelSplitPart
  int team_;          // else the threads that split the pixels
  bool big_;          // an image beyond one core's L2
};

}  // namespace

GlobalPoolSplit global_pool_split(const ir::Node& pool, int threads) {
  const ir::Value* x = pool.num_inputs() == 1 ? pool.input(0) : nullptr;
  if (threads < 2 || !x || !x->type.is_static()) return {};
  int64_t elements = 1;
  for (int64_t d : x->type.static_dims()) elements *= d;
  const ir::Node* producer = x->producer();
  if (!producer)
    return {elements * static_cast<int64_t>(sizeof(float)) > l2_cache_bytes() ? threads : 1, false};
  if (std::optional<int> team = depthwise_channel_team(*producer, threads)) return {*team, true};
  if (std::optional<int> team = pointwise_output_team(*producer, threads)) return {*team, true};
  return {elements >= kParallelMinElements ? threads : 1, false};
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
                                                global_pool_split(node, threads));
}

}  // namespace

void add_nhwc_global_pool_kernels(std::vector<KernelFactory>& table) {
  table.push_back({"kiln", "NhwcGlobalAveragePool", make_nhwc_global_pool, "kiln"});
  table.push_back({"kiln", "NhwcGlobalMaxPool", make_nhwc_global_pool, "kiln"});
}

}  // namespace kiln::backends::cpu
