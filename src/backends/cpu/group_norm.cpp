// InstanceNormalization and GroupNormalization, float32, channels-first ([N, C, spatial...]):
// each (image, group) is one contiguous block of C/G channels' planes, normalized on its own.
// Two passes find the block's mean and the variance about it (as LayerNorm, layernorm.cpp), a
// third writes y = x * a[c] + b[c] with each channel's scale and shift folded from the block's
// statistics and the node's scale and bias. The team splits the blocks. Scale and bias are read
// at run time: per channel ([C], InstanceNorm and GroupNormalization-21) or per group ([G],
// GroupNormalization-18).
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
  const std::vector<int64_t> d = x->type.static_dims();
  if (d.size() < 3) return nullptr;
  const int64_t c = d[1];
  int64_t plane = 1;
  for (size_t i = 2; i < d.size(); ++i) plane *= d[i];
  const bool instance = node.op_type() == "InstanceNormalization";
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
  return std::make_unique<GroupNormKernel>(d[0], c, g, plane, per_group, node.attr_float("epsilon", 1e-5f), threads);
}

}  // namespace

void add_group_norm_kernels(std::vector<KernelFactory>& table) {
  table.push_back({"", "InstanceNormalization", make_group_norm});
  table.push_back({"", "GroupNormalization", make_group_norm});
}

}  // namespace kiln::backends::cpu
