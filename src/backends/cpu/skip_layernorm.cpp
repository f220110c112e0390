// kiln.SkipLayerNorm, float32: each row of X + Skip (+ bias) is summed once into the row it
// is normalized from, so the residual sum never makes a round trip through memory between two
// kernels. The sum goes to the Sum output when one is requested, else into Y's row, which is
// then normalized in place (the row is still in L1). Statistics as in layernorm.cpp: the
// variance about the mean in a second sweep, which stays accurate where E[s^2] - mean^2 would
// cancel.
#include <algorithm>
#include <cmath>
#include <memory>

#include "backends/cpu/kernels.h"
#include "backends/cpu/onednn_common.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/simd.h"
#include "backends/cpu/simd_reduce.h"
#include "kernels/norm.h"

namespace kiln::backends::cpu {

namespace {

// The rows of kernels/norm.h (shared with emitted code), compiled per ISA.
KILN_SIMD float add_row(const float* x, const float* skip, const float* bias, float* s, int64_t m) {
  return kiln_kernels::layernorm_add_row(x, skip, bias, s, m);
}

KILN_SIMD void normalize_row(const float* s, float* y, int64_t m, float mean, const float* gamma, const float* beta,
                             float eps) {
  kiln_kernels::layernorm_normalize_row(s, y, m, mean, gamma, beta, eps);
}

class SkipLayerNormKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  SkipLayerNormKernel(int64_t rows, int64_t m, float eps, int threads) : rows_(rows), m_(m), eps_(eps), threads_(threads) {}

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    auto in = [&](size_t i) { return i < inputs.size() && inputs[i] ? inputs[i]->data<float>() : nullptr; };
    const float *x = in(0), *skip = in(1), *gamma = in(2), *beta = in(3), *bias = in(4);
    float* y = outputs[0]->data<float>();
    float* sum = outputs.size() > 1 && outputs[1] ? outputs[1]->data<float>() : nullptr;
    const int64_t m = m_;
    parallel_for(rows_, threads_, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        float* s = sum ? sum + r * m : y + r * m;
        const float total = add_row(x + r * m, skip + r * m, bias, s, m);
        normalize_row(s, y + r * m, m, total / static_cast<float>(m), gamma, beta, eps_);
      }
    });
  }

 private:
  int64_t rows_, m_;
  float eps_;
  int threads_;
};

bool is_vector(const ir::Value* p, int64_t m) {
  return dnnl_util::static_float(p) && p->type.static_dims() == std::vector<int64_t>{m};
}

std::unique_ptr<Kernel> make_skip_layernorm(const ir::Node& node, int threads) {
  if (node.num_inputs() < 3 || node.num_outputs() < 1) return nullptr;
  const ir::Value* x = node.input(0);
  if (!dnnl_util::static_float(x) || !dnnl_util::static_float(node.input(1)) ||
      !dnnl_util::static_float(node.output(0)))
    return nullptr;
  const std::vector<int64_t> d = x->type.static_dims();
  if (d.empty() || node.input(1)->type.static_dims() != d || node.output(0)->type.static_dims() != d) return nullptr;
  const int64_t m = d.back();
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < d.size(); ++i) rows *= d[i];
  if (rows * m == 0) return nullptr;
  if (!is_vector(node.input(2), m)) return nullptr;
  for (int i = 3; i < node.num_inputs() && i < 5; ++i)
    if (node.input(i) && !is_vector(node.input(i), m)) return nullptr;
  const ir::Value* sum = node.num_outputs() > 1 ? node.output(1) : nullptr;
  if (sum && (!dnnl_util::static_float(sum) || sum->type.static_dims() != d)) return nullptr;
  // A team only pays off past a few rows' worth of work each (BERT-tiny's rows are 128 wide).
  constexpr int64_t kMinPerThread = 1 << 14;
  const int team = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, rows * m / kMinPerThread)));
  return std::make_unique<SkipLayerNormKernel>(rows, m, node.attr_float("epsilon", 1e-5f), team);
}

}  // namespace

void add_skip_layernorm_kernels(std::vector<KernelFactory>& table) {
  table.push_back({"kiln", "SkipLayerNorm", make_skip_layernorm});
}

}  // namespace kiln::backends::cpu
