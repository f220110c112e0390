// \file Constant folding: a node whose inputs are all constants is evaluated once with its
// reference kernel and its outputs become constants; Shape and Size of a static shape fold
// without reading any data. Visiting in topological order folds whole chains in one sweep:
//
//   Shape(x:[1,116,28,28]) -> Gather(0) -> Div(2) -> Concat -> Reshape(y, .)
//        const [1,116,28,28]    const 1   const 0   const [..]   Reshape(y, const)
//
// A cap on output elements keeps folding from materializing huge tensors (Expand, Tile,
// ConstantOfShape of a big shape) that are cheaper to compute at run time than to store.
#include <kiln/error.h>

#include <algorithm>

#include "ops/core/infer_graph.h"
#include "ops/core/registry.h"
#include "passes/graph_util.h"
#include "passes/pass.h"

namespace kiln::passes {

namespace {

class ConstantFolding : public Pass {
 public:
  explicit ConstantFolding(int64_t cap) : cap_(cap) {}
  std::string name() const override { return "constant_folding"; }

  bool run(ir::Graph& g) override {
    bool changed = false;
    for (ir::Node* n : g.nodes()) changed = fold(g, n) || changed;
    return changed;
  }

 private:
  bool fold(ir::Graph& g, ir::Node* n) {
    const ops::OpDef* def = ops::Registry::instance().find(n->domain(), n->op_type());
    if (!def || !def->kernel || !def->deterministic || has_subgraph(*n)) return false;
    if (n->owner()->opset(n->domain()) < def->since_version) return false;
    for (const ir::Value* o : n->outputs())
      if (o && !o->type.is_tensor()) return false;
    if ((n->op_type() == "Shape" || n->op_type() == "Size") && n->domain().empty()) return fold_shape(g, n);
    if (!all_inputs_constant(*n)) return false;
    int64_t in_elems = 0;
    std::vector<const Tensor*> args;
    for (const ir::Value* v : n->inputs()) {
      args.push_back(v ? &v->constant() : nullptr);
      if (v) in_elems += v->constant().numel();
    }
    // The output size is known from inference for most ops; refuse early to avoid the work.
    for (const ir::Value* o : n->outputs())
      if (o && o->type.static_numel() && *o->type.static_numel() > std::max(in_elems, cap_)) return false;
    std::vector<Tensor> outs;
    try {
      outs = ops::run_reference(*n, args);
    } catch (const Error&) {
      return false;  // leave it for run time, where the error (if any) surfaces with context
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      if (!n->output(static_cast<int>(i))) continue;
      const Tensor& t = outs[i];
      if (!t.defined() || t.is_sequence() || t.is_none() || t.numel() > std::max(in_elems, cap_)) return false;
    }
    fold_to_constants(g, n, std::move(outs));
    return true;
  }

  // Only the input's dims are read, so a data-less tensor stands in for it.
  bool fold_shape(ir::Graph& g, ir::Node* n) {
    const ir::Value* x = n->input(0);
    if (!x || !x->type.is_tensor() || !x->type.is_static() || x->type.dtype == DType::Undefined) return false;
    if (x->type.dtype == DType::String) return false;
    Tensor stand_in = Tensor::wrap(x->type.dtype, x->type.static_dims(), nullptr);
    std::vector<Tensor> outs;
    try {
      outs = ops::run_reference(*n, {&stand_in});
    } catch (const Error&) {
      return false;
    }
    fold_to_constants(g, n, std::move(outs));
    return true;
  }

  int64_t cap_;
};

}  // namespace

std::unique_ptr<Pass> make_constant_folding(int64_t max_output_elements) {
  return std::make_unique<ConstantFolding>(max_output_elements);
}

}  // namespace kiln::passes
