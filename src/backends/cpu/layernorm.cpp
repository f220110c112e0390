// LayerNormalization and RMSNormalization, float32 with float statistics (stash_type 1): rows
// of the trailing [axis, rank) dims normalized in parallel. LayerNorm makes two passes over each
// row (mean, then the variance about it, which stays accurate where E[x^2] - mean^2 would
// cancel); RMSNorm one (the mean square, no centring, no bias). Scale and B must cover the
// normalized shape element for element; broadcasting forms (a scalar Scale, say) are declined.
#include <cmath>
#include <memory>
#include <optional>

#include "backends/cpu/kernels.h"
#include "backends/cpu/onednn_common.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/simd.h"
#include "backends/cpu/simd_reduce.h"

namespace kiln::backends::cpu {

namespace {

// Normalizes one row; returns its mean and 1 / stddev through the last two arguments.
KILN_SIMD void layernorm_row(const float* x, float* y, int64_t m, const float* scale, const float* bias, float eps,
                             float* mean_out, float* inv_out) {
  const float mean = simd::sum(x, m) / static_cast<float>(m);
  const float inv = 1.f / std::sqrt(simd::sum_sq_dev(x, m, mean) / static_cast<float>(m) + eps);
  if (bias) {
    for (int64_t j = 0; j < m; ++j) y[j] = (x[j] - mean) * inv * scale[j] + bias[j];
  } else {
    for (int64_t j = 0; j < m; ++j) y[j] = (x[j] - mean) * inv * scale[j];
  }
  *mean_out = mean;
  *inv_out = inv;
}

// y = x / sqrt(mean(x^2) + eps) * scale for one row.
KILN_SIMD void rmsnorm_row(const float* x, float* y, int64_t m, const float* scale, float eps) {
  const float inv = 1.f / std::sqrt(simd::sum_sq_dev(x, m, 0.f) / static_cast<float>(m) + eps);
  for (int64_t j = 0; j < m; ++j) y[j] = x[j] * inv * scale[j];
}

class RmsNormKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  RmsNormKernel(int64_t rows, int64_t m, float eps, int threads) : rows_(rows), m_(m), eps_(eps), threads_(threads) {}

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const float* x = inputs[0]->data<float>();
    const float* scale = inputs[1]->data<float>();
    float* y = outputs[0]->data<float>();
    const int64_t m = m_;
    parallel_for(rows_, threads_, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) rmsnorm_row(x + r * m, y + r * m, m, scale, eps_);
    });
  }

 private:
  int64_t rows_, m_;
  float eps_;
  int threads_;
};

class LayerNormKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  LayerNormKernel(int64_t rows, int64_t m, float eps, int threads) : rows_(rows), m_(m), eps_(eps), threads_(threads) {}

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const float* x = inputs[0]->data<float>();
    const float* scale = inputs[1]->data<float>();
    const float* bias = inputs.size() > 2 && inputs[2] ? inputs[2]->data<float>() : nullptr;
    float* y = outputs[0]->data<float>();
    float* means = outputs.size() > 1 && outputs[1] ? outputs[1]->data<float>() : nullptr;
    float* invs = outputs.size() > 2 && outputs[2] ? outputs[2]->data<float>() : nullptr;
    const int64_t m = m_;
    parallel_for(rows_, threads_, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        float mean, inv;
        layernorm_row(x + r * m, y + r * m, m, scale, bias, eps_, &mean, &inv);
        if (means) means[r] = mean;
        if (invs) invs[r] = inv;
      }
    });
  }

 private:
  int64_t rows_, m_;
  float eps_;
  int threads_;
};

// True when `p` broadcasts to the normalized dims `norm` with exactly one value per element.
bool covers(const ir::Value* p, const std::vector<int64_t>& norm, int64_t m) {
  if (!dnnl_util::static_float(p)) return false;
  std::vector<int64_t> d = p->type.static_dims();
  while (!d.empty() && d.front() == 1 && d.size() > norm.size()) d.erase(d.begin());
  if (d.size() > norm.size()) return false;
  int64_t n = 1;
  for (size_t i = 0; i < d.size(); ++i) {
    if (d[i] != 1 && d[i] != norm[norm.size() - d.size() + i]) return false;
    n *= d[i];
  }
  return n == m;
}

// The rows and row length a normalization over [axis, rank) of a float32 X with a covering
// Scale makes; nullopt when the node is not such a one.
struct Rows {
  int64_t rows, m;
  std::vector<int64_t> norm;
};
std::optional<Rows> norm_rows(const ir::Node& node) {
  if (node.num_inputs() < 2 || node.num_outputs() < 1) return std::nullopt;
  const ir::Value* x = node.input(0);
  if (!dnnl_util::static_float(x) || !dnnl_util::static_float(node.output(0))) return std::nullopt;
  if (node.attr_int("stash_type", 1) != 1) return std::nullopt;
  const std::vector<int64_t> d = x->type.static_dims();
  const int64_t rank = static_cast<int64_t>(d.size());
  int64_t axis = node.attr_int("axis", -1);
  if (rank == 0 || axis < -rank || axis >= rank) return std::nullopt;
  if (axis < 0) axis += rank;
  Rows r{1, 1, std::vector<int64_t>(d.begin() + axis, d.end())};
  for (int64_t i = 0; i < rank; ++i) (i < axis ? r.rows : r.m) *= d[i];
  if (r.rows * r.m == 0 || !covers(node.input(1), r.norm, r.m)) return std::nullopt;
  return r;
}

std::unique_ptr<Kernel> make_layernorm(const ir::Node& node, int threads) {
  auto r = norm_rows(node);
  if (!r) return nullptr;
  if (node.num_inputs() > 2 && node.input(2) && !covers(node.input(2), r->norm, r->m)) return nullptr;
  for (int i = 1; i < node.num_outputs() && i < 3; ++i)
    if (node.output(i) && (!dnnl_util::static_float(node.output(i)) || node.output(i)->type.static_numel() != r->rows))
      return nullptr;
  return std::make_unique<LayerNormKernel>(r->rows, r->m, node.attr_float("epsilon", 1e-5f), threads);
}

std::unique_ptr<Kernel> make_rmsnorm(const ir::Node& node, int threads) {
  auto r = norm_rows(node);
  if (!r || node.num_outputs() != 1) return nullptr;
  return std::make_unique<RmsNormKernel>(r->rows, r->m, node.attr_float("epsilon", 1e-5f), threads);
}

}  // namespace

void add_layernorm_kernels(std::vector<KernelFactory>& table) {
  table.push_back({"", "LayerNormalization", make_layernorm});
  table.push_back({"", "RMSNormalization", make_rmsnorm});
}

}  // namespace kiln::backends::cpu
