// InstanceNormalization and GroupNormalization, float32, channels-first ([N, C, spatial...]) or
// channels-last (kiln.Nhwc*, [N, H, W, C], where the layout assignment leaves them after a conv).
// Two passes find each (image, group)'s mean and the variance about it (as LayerNorm,
// layernorm.cpp), a third writes y = x * a[c] + b[c] with each channel's scale and shift folded
// from its group's statistics and the node's scale and bias. Channels-first, each (image, group)
// is one contiguous block and the team splits the blocks; channels-last, the team splits each
// image's pixels, each thread summing its pixels per channel (in double) before the groups are
// formed. Scale and bias are read at run time: per channel ([C], InstanceNorm and
// GroupNormalization-21) or per group ([G], GroupNormalization-18).
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "backends/cpu/kernels.h"
#include "backends/cpu/onednn_common.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/simd.h"
#include "backends/cpu/simd_reduce.h"

namespace kiln::backends::cpu {

namespace {

// y[j] = x[j] * a + b for one channel's plane.
KILN_SIMD void scale_shift(const float* x, float* y, int64_t n, float a, float b) {
  for (int64_t j = 0; j < n; ++j) y[j] = x[j] * a + b;
}

// The mean and 1 / stddev of a block of n floats.
KILN_SIMD void block_stats(const float* x, int64_t n, float eps, float* mean, float* inv) {
  *mean = simd::sum(x, n) / static_cast<float>(n);
  *inv = 1.f / std::sqrt(simd::sum_sq_dev(x, n, *mean) / static_cast<float>(n) + eps);
}

// acc[c] += x[p * C + c] (pass 1), or (x[p * C + c] - mean[c])^2 (pass 2, mean non-null), over
// pixels [0, n).
KILN_SIMD void channel_sums(const float* x, int64_t n, int64_t C, const double* mean, double* acc) {
  for (int64_t p = 0; p < n; ++p) {
    const float* row = x + p * C;
    if (mean) {
      for (int64_t c = 0; c < C; ++c) {
        const double d = static_cast<double>(row[c]) - mean[c];
        acc[c] += d * d;
      }
    } else {
      for (int64_t c = 0; c < C; ++c) acc[c] += static_cast<double>(row[c]);
    }
  }
}

// y[p * C + c] = x[p * C + c] * a[c] + b[c] over pixels [0, n).
KILN_SIMD void channel_scale_shift(const float* x, float* y, int64_t n, int64_t C, const float* a, const float* b) {
  for (int64_t p = 0; p < n; ++p)
    for (int64_t c = 0; c < C; ++c) y[p * C + c] = x[p * C + c] * a[c] + b[c];
}

class NhwcGroupNormKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  NhwcGroupNormKernel(int64_t images, int64_t channels, int64_t groups, int64_t pixels, bool per_group, float eps,
                      int threads)
      : n_(images), c_(channels), g_(groups), pixels_(pixels), per_group_(per_group), eps_(eps),
        team_(static_cast<int>(std::min<int64_t>(product_team(images * channels * pixels, 0, threads), pixels))) {}

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const float* scale = inputs[1]->data<float>();
    const float* bias = inputs[2]->data<float>();
    const int64_t C = c_, cg = c_ / g_, P = pixels_, team = team_;
    std::vector<double> partial(static_cast<size_t>(team * C)), mean(static_cast<size_t>(C));
    std::vector<float> a(static_cast<size_t>(C)), b(static_cast<size_t>(C));
    // Each group's value of the per-channel sums in `partial`, divided by its element count,
    // spread over the group's channels into `to`.
    auto per_group = [&](std::vector<double>& to) {
      for (int64_t g = 0; g < g_; ++g) {
        double s = 0;
        for (int64_t t = 0; t < team; ++t)
          for (int64_t c = g * cg; c < (g + 1) * cg; ++c) s += partial[static_cast<size_t>(t * C + c)];
        for (int64_t c = g * cg; c < (g + 1) * cg; ++c) to[static_cast<size_t>(c)] = s / static_cast<double>(cg * P);
      }
    };
    std::vector<double> var(static_cast<size_t>(C));
    for (int64_t i = 0; i < n_; ++i) {
      const float* x = inputs[0]->data<float>() + i * P * C;
      float* y = outputs[0]->data<float>() + i * P * C;
      for (const bool second : {false, true}) {
        std::fill(partial.begin(), partial.end(), 0.0);
        parallel_for(team, static_cast<int>(team), [&](int64_t t0, int64_t t1) {
          for (int64_t t = t0; t < t1; ++t) {
            const int64_t p0 = P * t / team, p1 = P * (t + 1) / team;
            channel_sums(x + p0 * C, p1 - p0, C, second ? mean.data() : nullptr, partial.data() + t * C);
          }
        });
        per_group(second ? var : mean);
      }
      for (int64_t c = 0; c < C; ++c) {
        const int64_t k = per_group_ ? c / cg : c;
        const double inv = 1.0 / std::sqrt(var[static_cast<size_t>(c)] + eps_);
        a[static_cast<size_t>(c)] = static_cast<float>(inv * scale[k]);
        b[static_cast<size_t>(c)] = static_cast<float>(bias[k] - mean[static_cast<size_t>(c)] * inv * scale[k]);
      }
      parallel_for(P, static_cast<int>(team), [&](int64_t p0, int64_t p1) {
        channel_scale_shift(x + p0 * C, y + p0 * C, p1 - p0, C, a.data(), b.data());
      });
    }
  }

 private:
  int64_t n_, c_, g_, pixels_;
  bool per_group_;
  float eps_;
  int team_;
};

class GroupNormKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  // `per_group`: scale and bias hold one value per group, else one per channel.
  GroupNormKernel(int64_t images, int64_t channels, int64_t groups, int64_t plane, bool per_group, float eps, int threads)
      : n_(images), c_(channels), g_(groups), plane_(plane), per_group_(per_group), eps_(eps),
        team_(product_team(images * channels * plane, 0, threads)) {}

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const float* x = inputs[0]->data<float>();
    const float* scale = inputs[1]->data<float>();
    const float* bias = inputs[2]->data<float>();
    float* y = outputs[0]->data<float>();
    const int64_t cg = c_ / g_, block = cg * plane_;
    parallel_for(n_ * g_, team_, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t group = b % g_;
        float mean, inv;
        block_stats(x + b * block, block, eps_, &mean, &inv);
        for (int64_t k = 0; k < cg; ++k) {
          const int64_t p = per_group_ ? group : group * cg + k;
          const float a = inv * scale[p];
          scale_shift(x + b * block + k * plane_, y + b * block + k * plane_, plane_, a, bias[p] - mean * a);
        }
      }
    });
  }

 private:
  int64_t n_, c_, g_, plane_;
  bool per_group_;
  float eps_;
  int team_;
};

std::unique_ptr<Kernel> make_group_norm(const ir::Node& node, int threads) {
  if (node.num_inputs() != 3 || node.num_outputs() != 1) return nullptr;
  const ir::Value* x = node.input(0);
  if (!dnnl_util::static_float(x) || !dnnl_util::static_float(node.output(0))) return nullptr;
  std::vector<int64_t> d = x->type.static_dims();
  const bool nhwc = node.domain() == "kiln";  // kiln.Nhwc*: [N, H, W, C]
  if (d.size() < 3 || (nhwc && d.size() != 4)) return nullptr;
  if (nhwc) d = {d[0], d[3], d[1], d[2]};
  const int64_t c = d[1];
  int64_t plane = 1;
  for (size_t i = 2; i < d.size(); ++i) plane *= d[i];
  const bool instance = node.op_type().ends_with("InstanceNormalization");
  const int64_t g = instance ? c : node.attr_int("num_groups", 0);
  if (d[0] < 1 || c < 1 || plane < 1 || g < 1 || c % g != 0) return nullptr;
  // GroupNormalization-21 computes in stash_type's precision: float only here.
  if (!instance && node.attr_int("stash_type", 1) != 1) return nullptr;
  bool per_group = false;
  for (int i = 1; i <= 2; ++i) {
    const ir::Value* p = node.input(i);
    if (!dnnl_util::static_float(p) || p->type.rank() != 1) return nullptr;
    const int64_t len = p->type.static_dims()[0];
    if (len != c && (instance || len != g)) return nullptr;
    if (i == 2 && (len == c) == per_group) return nullptr;  // scale and bias of one kind
    per_group = len != c;
  }
  const float eps = node.attr_float("epsilon", 1e-5f);
  if (nhwc) return std::make_unique<NhwcGroupNormKernel>(d[0], c, g, plane, per_group, eps, threads);
  return std::make_unique<GroupNormKernel>(d[0], c, g, plane, per_group, eps, threads);
}

}  // namespace

void add_group_norm_kernels(std::vector<KernelFactory>& table) {
  table.push_back({"", "InstanceNormalization", make_group_norm});
  table.push_back({"", "GroupNormalization", make_group_norm});
  table.push_back({"kiln", "NhwcInstanceNormalization", make_group_norm});
  table.push_back({"kiln", "NhwcGroupNormalization", make_group_norm});
}

}  // namespace kiln::backends::cpu
