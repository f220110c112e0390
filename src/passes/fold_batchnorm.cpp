// \file BatchNormalization folding: in inference mode BN is a per-channel affine map, so it
// folds into the weights of the Conv / ConvTranspose / Gemm / 2-D MatMul in front of it
// when their weight is constant and BN is their only reader.
//
//   y = s * (W*x + b - mean) + beta,   s = gamma / sqrt(var + eps)
//     = (s·W) * x + (s * (b - mean) + beta)
#include <cmath>

#include "passes/graph_util.h"
#include "passes/pass.h"
#include "passes/weight_util.h"

namespace kiln::passes {

namespace {

class FoldBatchNorm : public Pass {
 public:
  std::string name() const override { return "fold_batchnorm"; }
  bool run(ir::Graph& g) override {
    bool changed = false;
    for (ir::Node* bn : g.nodes()) changed = fold(g, bn) || changed;
    return changed;
  }

 private:
  static bool fold(ir::Graph& g, ir::Node* bn) {
    if (bn->op_type() != "BatchNormalization" || !bn->domain().empty()) return false;
    if (bn->attr_int("training_mode", 0) != 0) return false;
    if (bn->owner()->opset() < 7 && bn->attr_int("is_test", 0) == 0 && bn->has_attr("is_test")) return false;
    for (int i = 1; i < bn->num_outputs(); ++i)
      if (bn->output(i) && (!bn->output(i)->uses().empty() || is_graph_output(g, bn->output(i)))) return false;
    ir::Value* x = bn->input(0);
    if (!x || !x->producer() || !single_use(g, x)) return false;
    const ir::Node& conv = *x->producer();
    auto channels = foldable_channels(conv);
    if (!channels) return false;
    std::vector<const Tensor*> p;
    for (int i = 1; i <= 4; ++i) {
      const Tensor* t = const_of(bn->input(i));
      if (!t || t->numel() != *channels || !dtype_is_float(t->dtype())) return false;
      p.push_back(t);
    }
    auto bias = channel_bias(conv, *channels);
    if (!bias) return false;
    std::vector<float> gamma = to_floats(*p[0]), beta = to_floats(*p[1]), mean = to_floats(*p[2]), var = to_floats(*p[3]);
    const float eps = bn->attr_float("epsilon", 1e-5f);
    std::vector<float> s(*channels), b(*channels);
    for (int64_t c = 0; c < *channels; ++c) {
      s[c] = gamma[c] / std::sqrt(var[c] + eps);
      b[c] = s[c] * ((*bias)[c] - mean[c]) + beta[c];
    }
    ir::Value* y = bn->output(0);
    g.replace_all_uses(y, rebuild_with(g, conv, scale_weight(conv, s), b, y));
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fold_batchnorm() { return std::make_unique<FoldBatchNorm>(); }

}  // namespace kiln::passes
