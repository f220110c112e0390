// \file Residual epilogues: a Conv whose only reader is an Add of a same-shaped tensor becomes
// a kiln.FusedConv with that tensor as its Z input, so the sum happens while each output tile
// is still in cache (oneDNN's sum post-op), and fuse_activation can then fold the Relu that
// follows a ResNet block into the same op:
//
//   Relu(Add(Conv(x, W, b), skip))  -> Relu(kiln.FusedConv(x, W, b, skip))
//                                   -> kiln.FusedConv(x, W, b, skip, activation="Relu")
//
// Only when Z has exactly the conv output's shape: a broadcast add is not a residual.
#include "passes/graph_util.h"
#include "passes/pass.h"

namespace kiln::passes {

namespace {

bool same_shape(const ir::TensorType& a, const ir::TensorType& b) {
  if (!a.is_tensor() || !b.is_tensor() || !a.rank_known || !b.rank_known || a.rank() != b.rank()) return false;
  for (size_t i = 0; i < a.dims.size(); ++i)
    if (!(a.dims[i] == b.dims[i])) return false;
  return a.dtype == b.dtype;
}

// A conv without epilogue yet: ai.onnx Conv, or kiln.FusedConv with no activation and no Z.
bool bare_conv(const ir::Node& n) {
  if (n.domain().empty()) return n.op_type() == "Conv";
  return n.domain() == "kiln" && n.op_type() == "FusedConv" && n.attr_string("activation", "").empty() &&
         !n.has_input(3);
}

class FuseResidualAdd : public Pass {
 public:
  std::string name() const override { return "fuse_residual_add"; }
  bool run(ir::Graph& g) override {
    bool changed = false;
    for (ir::Node* n : g.nodes()) {
      if (!bare_conv(*n) || n->num_outputs() != 1 || n->num_inputs() < 2) continue;
      ir::Value* y = n->output(0);
      if (!y || y->type.dtype != DType::Float || !single_use(g, y)) continue;
      ir::Node* add = y->uses()[0].node;
      if (add->owner() != &g || !add->domain().empty() || add->op_type() != "Add" || add->num_inputs() != 2 ||
          add->num_outputs() != 1)
        continue;
      ir::Value* z = add->input(1 - y->uses()[0].input_index);
      if (!z || z == y || !same_shape(z->type, y->type) || !same_shape(add->output(0)->type, y->type)) continue;
      std::vector<ir::Value*> ins = n->inputs();
      ins.resize(3, nullptr);
      ins.push_back(z);
      ir::Attributes attrs = n->attrs;
      ir::Value* sum = add->output(0);
      ir::Value* out = add_value_like(g, sum, sum->name());
      use_kiln_domain(g);
      g.add_node("FusedConv", ins, {out}, std::move(attrs), g.unique_name(n->name()), "kiln");
      g.replace_all_uses(sum, out);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_residual_add() { return std::make_unique<FuseResidualAdd>(); }

}  // namespace kiln::passes
