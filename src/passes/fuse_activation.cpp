// \file Activation epilogues: a Conv / Gemm / MatMul whose only reader is an elementwise
// activation becomes one kiln-domain op that applies the activation to each output element
// as it is produced (no second pass over memory):
//
//   Relu(Conv(x, W, b))         -> kiln.FusedConv(x, W, b, activation="Relu")
//   Clip(Gemm(a, b, c), 0, 6)   -> kiln.FusedGemm(a, b, c, activation="Clip", activation_params=[0, 6])
//   Relu(kiln.FusedConv(x, W, b, z))  (no activation yet, from fuse_residual_add; FusedMatMul
//                                      from fuse_matmul_bias likewise)
//                               -> kiln.FusedConv(x, W, b, z, activation="Relu")
//   Mul(y, HardSigmoid(y; 1/6, 1/2)), y = Conv(...)  (HardSwish as exporters write it before
//                                      opset 14) -> kiln.FusedConv(..., activation="HardSwish")
//
// The activations and their parameters are the table in src/ops/core/activation.h. The fused op
// keeps every attribute of the base op. Float32 only.
#include <cmath>

#include "ops/core/activation.h"
#include "passes/graph_util.h"
#include "passes/pass.h"

namespace kiln::passes {

namespace {

// The Mul of y * HardSigmoid(y; alpha 1/6, beta 1/2) when those two nodes are y's only readers
// (and the HardSigmoid's result only the Mul's): HardSwish(y) written out.
ir::Node* hard_swish_of(const ir::Graph& g, const ir::Value* y) {
  if (y->uses().size() != 2 || is_graph_output(g, y)) return nullptr;
  ir::Node *hs = nullptr, *mul = nullptr;
  for (const ir::Use& u : y->uses()) {
    ir::Node* n = u.node;
    if (n->owner() != &g || !n->domain().empty() || n->num_outputs() != 1) return nullptr;
    if (n->op_type() == "HardSigmoid") hs = n;
    else if (n->op_type() == "Mul") mul = n;
  }
  if (!hs || !mul || mul->num_inputs() != 2) return nullptr;
  if (std::fabs(hs->attr_float("alpha", 0.2f) - 1.f / 6) > 1e-6f || std::fabs(hs->attr_float("beta", 0.5f) - 0.5f) > 1e-6f)
    return nullptr;
  const ir::Value* h = hs->output(0);
  if (!single_use(g, h)) return nullptr;
  const bool operands = (mul->input(0) == y && mul->input(1) == h) || (mul->input(0) == h && mul->input(1) == y);
  return operands ? mul : nullptr;
}

class FuseActivation : public Pass {
 public:
  std::string name() const override { return "fuse_activation"; }
  bool run(ir::Graph& g) override {
    bool changed = false;
    for (ir::Node* n : g.nodes()) {
      if (n->num_outputs() != 1) continue;
      std::string op = n->op_type();
      if (n->domain() == "kiln" && (op == "FusedConv" || op == "FusedMatMul") &&
          n->attr_string("activation", "").empty()) {
        op = op.substr(5);
      } else if (!n->domain().empty() || (op != "Conv" && op != "Gemm" && op != "MatMul")) {
        continue;
      }
      ir::Value* y = n->output(0);
      if (!y || y->type.dtype != DType::Float) continue;
      ir::Node* act = hard_swish_of(g, y);
      std::optional<ops::Activation> a;
      if (act) {
        a = ops::Activation{ops::Activation::HardSwish};
      } else {
        if (!single_use(g, y)) continue;
        act = y->uses()[0].node;
        if (act->owner() != &g || y->uses()[0].input_index != 0 || act->num_outputs() != 1) continue;
        a = ops::activation_op(*act);
      }
      if (!a) continue;
      ir::Attributes attrs = n->attrs;
      ops::set_activation(attrs, *a);
      ir::Value* z = act->output(0);
      ir::Value* out = add_value_like(g, z, z->name());
      use_kiln_domain(g);
      g.add_node("Fused" + op, n->inputs(), {out}, std::move(attrs), g.unique_name(n->name()), "kiln");
      g.replace_all_uses(z, out);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_activation() { return std::make_unique<FuseActivation>(); }

}  // namespace kiln::passes
