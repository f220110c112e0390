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
// The fused op keeps every attribute of the base op. Float32 only.
#include <limits>

#include "passes/graph_util.h"
#include "passes/pass.h"

namespace kiln::passes {

namespace {

struct Act {
  std::string name;
  std::vector<float> params;
};

std::optional<Act> activation_of(const ir::Graph& g, const ir::Node& n) {
  const std::string& op = n.op_type();
  if (n.domain() == "kiln") {
    if (op == "SiLU") return Act{"SiLU", {}};
    return std::nullopt;
  }
  if (n.domain() == "com.microsoft" && op == "Gelu") return Act{"Gelu", {}};
  if (!n.domain().empty() || n.num_inputs() < 1) return std::nullopt;
  if (op == "Relu" || op == "Sigmoid" || op == "Tanh" || op == "HardSwish") return Act{op, {}};
  if (op == "Gelu") return Act{n.attr_string("approximate", "none") == "tanh" ? "GeluTanh" : "Gelu", {}};
  if (op == "LeakyRelu") return Act{op, {n.attr_float("alpha", 0.01f)}};
  if (op == "HardSigmoid") return Act{op, {n.attr_float("alpha", 0.2f), n.attr_float("beta", 0.5f)}};
  if (op == "Clip") {
    float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
    if (g.opset() < 11) {
      lo = n.attr_float("min", lo);
      hi = n.attr_float("max", hi);
    } else {
      for (int i = 1; i <= 2; ++i) {
        if (!n.input(i)) continue;
        const Tensor* t = const_of(n.input(i));
        if (!t || t->numel() != 1) return std::nullopt;
        (i == 1 ? lo : hi) = static_cast<float>(t->as_double(0));
      }
    }
    return Act{op, {lo, hi}};
  }
  return std::nullopt;
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
      if (!y || y->type.dtype != DType::Float || !single_use(g, y)) continue;
      ir::Node* act = y->uses()[0].node;
      if (act->owner() != &g || y->uses()[0].input_index != 0 || act->num_outputs() != 1) continue;
      auto a = activation_of(g, *act);
      if (!a) continue;
      ir::Attributes attrs = n->attrs;
      attrs["activation"] = ir::Attribute::of_string(a->name);
      if (!a->params.empty()) attrs["activation_params"] = ir::Attribute::of_floats(a->params);
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
