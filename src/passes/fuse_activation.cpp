// \file Activation epilogues: a Conv / Gemm / MatMul whose only reader is an elementwise
// activation becomes one kiln-domain op that applies the activation to each output element
// as it is produced (no second pass over memory):
//
//   Relu(Conv(x, W, b))         -> kiln.FusedConv(x, W, b, activation="Relu")
//   Clip(Gemm(a, b, c), 0, 6)   -> kiln.FusedGemm(a, b, c, activation="Clip", activation_params=[0, 6])
//   Relu(kiln.FusedConv(x, W, b, z))  (no activation yet, from fuse_residual_add; FusedMatMul
//                                      from fuse_matmul_bias likewise)
//                               -> kiln.FusedConv(x, W, b, z, activation="Relu")
//
// The activations and their parameters are the table in src/ops/core/activation.h. The fused op
// keeps every attribute of the base op. Float32 only.
#include "ops/core/activation.h"
#include "passes/graph_util.h"
#include "passes/pass.h"

namespace kiln::passes {

namespace {

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
      if (!y || y->type.dtype != DType::Float || !single_use(g, y)) continue;
      ir::Node* act = y->uses()[0].node;
      if (act->owner() != &g || y->uses()[0].input_index != 0 || act->num_outputs() != 1) continue;
      const std::optional<ops::Activation> a = ops::activation_op(*act);
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
