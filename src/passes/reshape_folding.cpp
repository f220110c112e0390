// \file Reshape folding: a chain of shape-only ops collapses into one Reshape of the chain's
// source, since only the final shape matters.
//
//   x -> Unsqueeze -> Reshape -> Flatten -> y:[2,12]    =>   x -> Reshape(x, [2,12]) -> y
//
// The final shape is taken from y's static type, or, for Reshape-after-Reshape with symbolic
// dims, from the last Reshape's constant shape when it has no 0 entries (a 0 copies a dim of
// its immediate input, which the fold would change).
#include "passes/graph_util.h"
#include "passes/pass.h"

namespace kiln::passes {

namespace {

bool shape_only(const ir::Node* n) {
  if (!n || !n->domain().empty() || n->num_outputs() != 1) return false;
  const std::string& op = n->op_type();
  return op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze";
}

class ReshapeFolding : public Pass {
 public:
  std::string name() const override { return "reshape_folding"; }
  bool run(ir::Graph& g) override {
    if (g.opset() < 5) return false;  // Reshape took its shape as an attribute
    bool changed = false;
    for (ir::Node* n : g.nodes()) {
      if (!shape_only(n)) continue;
      ir::Node* p = n->input(0) ? n->input(0)->producer() : nullptr;
      if (!shape_only(p) || !p->input(0)) continue;
      ir::Value* src = p->input(0);
      ir::Value* y = n->output(0);
      ir::Value* shape = nullptr;
      if (y->type.is_tensor() && y->type.is_static()) {
        std::vector<int64_t> dims = y->type.static_dims();
        shape = add_const(g, n->name() + "_shape", Tensor::from_vector<int64_t>({static_cast<int64_t>(dims.size())}, dims));
      } else if (n->op_type() == "Reshape" && n->attr_int("allowzero", 0) == 0 && const_of(n->input(1))) {
        const Tensor& s = *const_of(n->input(1));
        bool zero = false;
        for (int64_t i = 0; i < s.numel(); ++i) zero = zero || s.as_int64(i) == 0;
        if (zero) continue;
        shape = n->input(1);
      } else {
        continue;
      }
      ir::Value* out = add_value_like(g, y, y->name());
      g.add_node("Reshape", {src, shape}, {out}, {}, g.unique_name(n->name()));
      g.replace_all_uses(y, out);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_reshape_folding() { return std::make_unique<ReshapeFolding>(); }

}  // namespace kiln::passes
