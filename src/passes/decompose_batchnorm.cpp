// \file An inference BatchNormalization that fold_batchnorm could not fold (its input is a
// Concat, a graph input, an activation, a shared conv output) is a per-channel affine map;
// it becomes a Mul and an Add by constants, which the elementwise fusion joins with its
// neighbours, the layout assignment permutes like any broadcast, and fold_scale_bias can
// still fold into a conv in front:
//
//   BatchNormalization(x, gamma, beta, mean, var)  ->  Add(Mul(x, s), t)
//     s = gamma / sqrt(var + eps),  t = beta - mean * s,  both shaped [C, 1, ..., 1]
#include <cmath>

#include "passes/graph_util.h"
#include "passes/pass.h"

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
    if (bn->op_type() != "BatchNormalization" || !bn->domain().empty() || bn->num_inputs() != 5) return false;
    if (bn->attr_int("training_mode", 0) != 0) return false;
    if (bn->owner()->opset() < 7 && bn->attr_int("is_test", 0) == 0 && bn->has_attr("is_test")) return false;
    if (bn->attr_int("spatial", 1) != 1) return false;  // opset < 9: per-activation parameters
    for (int i = 1; i < bn->num_outputs(); ++i)
      if (bn->output(i) && (!bn->output(i)->uses().empty() || is_graph_output(g, bn->output(i)))) return false;
    ir::Value* x = bn->input(0);
    ir::Value* y = bn->output(0);
    if (!y || (y->uses().empty() && !is_graph_output(g, y))) return false;
    if (!x || !x->type.rank_known || x->type.rank() < 2 || !x->type.dims[1].is_static()) return false;
    const DType dt = x->type.dtype;
    if (dt != DType::Float && dt != DType::Double && dt != DType::Float16 && dt != DType::BFloat16) return false;
    const int64_t channels = x->type.dims[1].value;
    std::vector<std::vector<float>> p;
    for (int i = 1; i <= 4; ++i) {
      const Tensor* t = const_of(bn->input(i));
      if (!t || t->numel() != channels || !dtype_is_float(t->dtype())) return false;
      p.push_back(to_floats(*t));
    }
    const float eps = bn->attr_float("epsilon", 1e-5f);
    std::vector<float> s(channels), t(channels);
    for (int64_t c = 0; c < channels; ++c) {
      s[c] = p[0][c] / std::sqrt(p[3][c] + eps);
      t[c] = p[1][c] - p[2][c] * s[c];
    }
    std::vector<int64_t> dims(x->type.rank() - 1, 1);
    dims[0] = channels;
    const Tensor like(dt, {});
    ir::Value* scale = add_const(g, bn->name() + "_scale", floats_like(like, s, dims));
    ir::Value* shift = add_const(g, bn->name() + "_shift", floats_like(like, t, dims));
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
