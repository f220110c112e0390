// \file An inference BatchNormalization that fold_batchnorm could not fold (its input is a
// Concat, a graph input, an activation, a shared conv output) is a per-channel affine map;
// it becomes a Mul and an Add by constants, which the elementwise fusion joins with its
// neighbours, the layout assignment permutes like any broadcast, and fold_scale_bias can
// still fold into a conv in front:
//
//   BatchNormalization(x, gamma, beta, mean, var)  ->  Add(Mul(x, s), t)
//     s = gamma / sqrt(var + eps),  t = beta - mean * s,  both shaped [C, 1, ..., 1]
#include "passes/graph_util.h"
#include "passes/pass.h"
#include "passes/weight_util.h"

namespace kiln::passes {

namespace {

class DecomposeBatchNorm : public Pass {
 public:
  std::string name() const override { return "decompose_batchnorm"; }
  bool run(ir::Graph& g) override {
    bool changed = false;
    for (ir::Node* bn : g.nodes()) changed = decompose(g, bn) || changed;
    return changed;
  }

 private:
  static bool decompose(ir::Graph& g, ir::Node* bn) {
    if (bn->op_type() != "BatchNormalization" || !bn->domain().empty()) return false;
    ir::Value* x = bn->input(0);
    ir::Value* y = bn->output(0);
    if (!y || (y->uses().empty() && !is_graph_output(g, y))) return false;
    if (!x || !x->type.rank_known || x->type.rank() < 2 || !x->type.dims[1].is_static()) return false;
    const DType dt = x->type.dtype;
    if (dt != DType::Float && dt != DType::Double && dt != DType::Float16 && dt != DType::BFloat16) return false;
    const int64_t channels = x->type.dims[1].value;
    auto affine = inference_batchnorm(g, *bn, channels);
    if (!affine) return false;
    std::vector<int64_t> dims(x->type.rank() - 1, 1);
    dims[0] = channels;
    const Tensor like(dt, {});
    ir::Value* scale = add_const(g, bn->name() + "_scale", floats_like(like, affine->scale, dims));
    ir::Value* shift = add_const(g, bn->name() + "_shift", floats_like(like, affine->shift, dims));
    ir::Value* scaled = add_value_like(g, y, g.unique_name(y->name() + "_scaled"));
    g.add_node("Mul", {x, scale}, {scaled}, {}, g.unique_name(bn->name() + "_mul"));
    ir::Value* out = add_value_like(g, y, g.unique_name(y->name() + "_affine"));
    g.add_node("Add", {scaled, shift}, {out}, {}, g.unique_name(bn->name() + "_add"));
    g.replace_all_uses(y, out);
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> make_decompose_batchnorm() { return std::make_unique<DecomposeBatchNorm>(); }

}  // namespace kiln::passes
