// \file Removes nodes that pass their input through unchanged: Identity, Dropout in inference
// mode or with a ratio of 0 (when its mask output is unused), and Reshape/Flatten/Squeeze/Unsqueeze/Expand/
// Cast/Transpose/Pad/Slice whose effect is the identity, and Concat/Sum/Max/Min/Mean of one input:
//
//   Cast(x:float, to=float)             -> x
//   Transpose(x, perm=[0,1,2])          -> x
//   Reshape(x:[1,64], [1,64])           -> x        (input and output shapes provably equal)
//   Pad(x, pads=0...), Slice(x) keeping every element in order, Expand to x's own shape -> x
#include <algorithm>

#include "passes/graph_util.h"
#include "passes/pass.h"

namespace kiln::passes {

namespace {

// Input and output shapes are the same, dim by dim (equal ints or the same symbol).
bool same_shape(const ir::Value* a, const ir::Value* b) {
  if (!a || !b || !a->type.is_tensor() || !b->type.is_tensor()) return false;
  if (!a->type.rank_known || !b->type.rank_known || a->type.rank() != b->type.rank()) return false;
  for (int i = 0; i < a->type.rank(); ++i)
    if (!a->type.dims[i].same_as(b->type.dims[i])) return false;
  return a->type.dtype == b->type.dtype && a->type.dtype != DType::Undefined;
}

bool all_zero(const ir::Value* v) {
  const Tensor* t = const_of(v);
  if (!t) return false;
  for (int64_t i = 0; i < t->numel(); ++i)
    if (t->as_int64(i) != 0) return false;
  return true;
}

// The value n forwards unchanged, or nullptr.
ir::Value* passthrough(const ir::Graph& g, const ir::Node& n) {
  if (!n.domain().empty() || n.num_outputs() < 1 || !n.input(0)) return nullptr;
  const std::string& op = n.op_type();
  ir::Value* x = n.input(0);
  ir::Value* y = n.output(0);
  if (op == "Identity") return x;
  if (op == "Dropout") {
    if (n.output(1) && (!n.output(1)->uses().empty() || is_graph_output(g, n.output(1)))) return nullptr;
    // A constant ratio of 0 drops nothing and scales by 1 / (1 - 0): the identity in training
    // mode too (exporters write training_mode = true beside it).
    const Tensor* ratio = n.num_inputs() > 1 && n.input(1) ? const_of(n.input(1)) : nullptr;
    if (ratio && ratio->numel() == 1 && ratio->as_double(0) == 0.0) return x;
    if (n.input(2) && (!const_of(n.input(2)) || const_of(n.input(2))->as_int64(0) != 0)) return nullptr;
    if (n.attr_int("is_test", 1) == 0 && n.owner()->opset() < 7) return nullptr;
    return x;
  }
  if (n.num_outputs() != 1 || !same_shape(x, y)) return nullptr;
  if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" || op == "Expand") return x;
  if (op == "Concat" || op == "Sum" || op == "Max" || op == "Min" || op == "Mean") return n.num_inputs() == 1 ? x : nullptr;
  if (op == "Cast") return x;  // same dtype is part of same_shape
  if (op == "Transpose") {
    std::vector<int64_t> perm = n.attr_ints("perm");
    if (perm.empty()) return x->type.rank() <= 1 ? x : nullptr;
    for (size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != static_cast<int64_t>(i)) return nullptr;
    return x;
  }
  if (op == "Pad") {
    if (n.has_attr("pads")) {
      auto p = n.attr_ints("pads");
      return std::all_of(p.begin(), p.end(), [](int64_t v) { return v == 0; }) ? x : nullptr;
    }
    return all_zero(n.input(1)) ? x : nullptr;
  }
  if (op == "Slice") {
    // Same shape and unit (or absent) steps: every element kept, in order.
    if (n.has_attr("starts")) return x;  // opset < 10 has no steps
    if (!n.input(4)) return x;
    const Tensor* steps = const_of(n.input(4));
    if (!steps) return nullptr;
    for (int64_t i = 0; i < steps->numel(); ++i)
      if (steps->as_int64(i) != 1) return nullptr;
    return x;
  }
  return nullptr;
}

class EliminateNoops : public Pass {
 public:
  std::string name() const override { return "eliminate_noops"; }
  bool run(ir::Graph& g) override {
    bool changed = false;
    for (ir::Node* n : g.nodes()) {
      ir::Value* x = passthrough(g, *n);
      if (!x) continue;
      g.replace_all_uses(n->output(0), x);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_eliminate_noops() { return std::make_unique<EliminateNoops>(); }

}  // namespace kiln::passes
