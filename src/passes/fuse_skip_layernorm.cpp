// \file Residual sums into the LayerNormalization that reads them: every transformer layer
// normalizes `x + sublayer(x)`, and as two kernels the sum is written out and read back.
//
//   LayerNormalization(Add(a, b), gamma[H], beta[H])  ->  kiln.SkipLayerNorm(a, b, gamma, beta)
//
// When the sum has other readers (the next residual Add reads the pre-norm sum in some
// layers, or it is a graph output) they read SkipLayerNorm's second output instead, so the
// Add still goes away. Only an Add of two tensors of one shape fuses: a broadcasting Add
// (a bias, a mask) has a different input than SkipLayerNorm's Skip.
#include "passes/graph_util.h"
#include "passes/pass.h"

namespace kiln::passes {

namespace {

bool read_by_anyone(const ir::Graph& g, const ir::Value* v) { return v && (!v->uses().empty() || is_graph_output(g, v)); }

// Shapes known to be equal: each dim the same integer or the same symbol.
bool same_shape(const ir::TensorType& a, const ir::TensorType& b) {
  if (!a.rank_known || !b.rank_known || a.rank() != b.rank()) return false;
  for (int i = 0; i < a.rank(); ++i)
    if (!a.dims[i].same_as(b.dims[i])) return false;
  return true;
}

// A LayerNormalization parameter that is one constant per normalized element: [H] with any
// leading 1s.
bool is_vector_param(const ir::Value* p, int64_t h) {
  const Tensor* t = const_of(p);
  return t && t->dtype() == DType::Float && t->rank() > 0 && t->numel() == h && t->dims().back() == h;
}

ir::Value* as_vector(ir::Graph& g, ir::Value* p, int64_t h) {
  if (const_of(p)->rank() == 1) return p;
  return add_const(g, p->name() + "_vec", const_of(p)->reshaped({h}));
}

class FuseSkipLayerNorm : public Pass {
 public:
  std::string name() const override { return "fuse_skip_layernorm"; }
  bool run(ir::Graph& g) override {
    bool changed = false;
    for (ir::Node* n : g.nodes()) {
      if (!n->domain().empty() || n->op_type() != "LayerNormalization" || n->num_inputs() < 2) continue;
      ir::Value* y = n->output(0);
      // A node an earlier match left dead still reads its Add: never match it twice.
      if (!read_by_anyone(g, y)) continue;
      if (read_by_anyone(g, n->output(1)) || read_by_anyone(g, n->output(2))) continue;
      if (n->attr_int("stash_type", 1) != 1) continue;
      ir::Value* x = n->input(0);
      if (!x || x->type.dtype != DType::Float || !x->type.rank_known || x->type.rank() < 1) continue;
      const int64_t rank = x->type.rank();
      const int64_t axis = n->attr_int("axis", -1);
      if (axis != -1 && axis != rank - 1) continue;
      const ir::Dim& h_dim = x->type.dims.back();
      if (!h_dim.is_static() || h_dim.value == 0) continue;
      ir::Node* add = producer_of(x, "Add");
      if (!add || add->owner() != &g || add->num_inputs() != 2) continue;
      ir::Value* a = add->input(0);
      ir::Value* b = add->input(1);
      if (!a || !b || a->type.dtype != DType::Float || b->type.dtype != DType::Float) continue;
      if (!same_shape(a->type, b->type) || !same_shape(a->type, x->type)) continue;
      if (!is_vector_param(n->input(1), h_dim.value)) continue;
      if (n->has_input(2) && !is_vector_param(n->input(2), h_dim.value)) continue;
      // Other readers of the sum than this node: they take SkipLayerNorm's second output.
      const bool sum_read_elsewhere = x->uses().size() > 1 || is_graph_output(g, x);
      std::vector<ir::Value*> outs{add_value_like(g, y, y->name())};
      if (sum_read_elsewhere) outs.push_back(add_value_like(g, x, x->name()));
      std::vector<ir::Value*> ins{a, b, as_vector(g, n->input(1), h_dim.value)};
      if (n->has_input(2)) ins.push_back(as_vector(g, n->input(2), h_dim.value));
      ir::Attributes attrs{{"epsilon", ir::Attribute::of_float(n->attr_float("epsilon", 1e-5f))}};
      use_kiln_domain(g);
      g.add_node("SkipLayerNorm", ins, outs, std::move(attrs), g.unique_name(n->name()), "kiln");
      g.replace_all_uses(y, outs[0]);
      if (sum_read_elsewhere) g.replace_all_uses(x, outs[1]);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_skip_layernorm() { return std::make_unique<FuseSkipLayerNorm>(); }

}  // namespace kiln::passes
