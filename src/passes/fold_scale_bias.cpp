// \file Folds a per-channel Mul or Add by a constant into the Conv / ConvTranspose / Gemm in
// front of it (the op's only reader), by scaling its weight or shifting its bias.
//
//   Mul(Conv(x, W, b), c)  -> Conv(x, c·W, c·b)       c: scalar, [C,1,1] or [1,C,1,1]
//   Add(Conv(x, W, b), c)  -> Conv(x, W, b + c)
#include "passes/graph_util.h"
#include "passes/pass.h"
#include "passes/weight_util.h"

namespace kiln::passes {

namespace {

class FoldScaleBias : public Pass {
 public:
  std::string name() const override { return "fold_scale_bias"; }
  bool run(ir::Graph& g) override {
    bool changed = false;
    for (ir::Node* n : g.nodes()) changed = fold(g, n) || changed;
    return changed;
  }

 private:
  static bool fold(ir::Graph& g, ir::Node* n) {
    const bool mul = n->op_type() == "Mul", add = n->op_type() == "Add";
    if (!(mul || add) || !n->domain().empty() || n->num_inputs() != 2) return false;
    for (int side = 0; side < 2; ++side) {
      ir::Value* x = n->input(side);
      const Tensor* c = const_of(n->input(1 - side));
      if (!c || !x || !x->producer() || !single_use(g, x)) continue;
      const ir::Node& op = *x->producer();
      if (op.op_type() == "MatMul") continue;  // MatMul + Add is matmul_add_to_gemm's
      auto channels = foldable_channels(op);
      if (!channels || c->dtype() != x->type.dtype) continue;
      ir::Value* y = n->output(0);
      // The constant must not broadcast the output to a bigger shape.
      if (!y->type.rank_known || y->type.rank() != x->type.rank() || c->rank() > x->type.rank()) continue;
      auto v = per_channel(*c, *channels, x->type.rank());
      auto bias = channel_bias(op, *channels);
      if (!v || !bias) continue;
      Tensor w = op.input(1)->constant();
      if (mul) {
        w = scale_weight(op, *v);
        for (int64_t i = 0; i < *channels; ++i) (*bias)[i] *= (*v)[i];
      } else {
        for (int64_t i = 0; i < *channels; ++i) (*bias)[i] += (*v)[i];
      }
      g.replace_all_uses(y, rebuild_with(g, op, w, *bias, y));
      return true;
    }
    return false;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fold_scale_bias() { return std::make_unique<FoldScaleBias>(); }

}  // namespace kiln::passes
