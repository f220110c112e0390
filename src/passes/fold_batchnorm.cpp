// \file BatchNormalization folding: in inference mode BN is a per-channel affine map, so it
// folds into the weights of the Conv / ConvTranspose / Gemm / 2-D MatMul in front of it
// when their weight is constant and BN is their only reader.
//
//   y = s * (W*x + b - mean) + beta,   s = gamma / sqrt(var + eps)
//     = (s·W) * x + (s * (b - mean) + beta)
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
    ir::Value* x = bn->input(0);
    if (!x || !x->producer() || !single_use(g, x)) return false;
    const ir::Node& conv = *x->producer();
    auto channels = foldable_channels(conv);
    if (!channels) return false;
    auto affine = inference_batchnorm(g, *bn, *channels);
    auto bias = affine ? channel_bias(conv, *channels) : std::nullopt;
    if (!bias) return false;
    // s * (W*x + bias - mean) + beta = (s·W) * x + (s * bias + shift)
    std::vector<float> b(*channels);
    for (int64_t c = 0; c < *channels; ++c) b[c] = affine->scale[c] * (*bias)[c] + affine->shift[c];
    ir::Value* y = bn->output(0);
    g.replace_all_uses(y, rebuild_with(g, conv, scale_weight(conv, affine->scale), b, y));
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fold_batchnorm() { return std::make_unique<FoldBatchNorm>(); }

}  // namespace kiln::passes
