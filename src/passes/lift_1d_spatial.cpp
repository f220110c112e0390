// \file 1-D convolutions and pools as 2-D ones over a single row:
//
//   y[N,O,W'] = Conv(x[N,C,W], w[O,C/g,k], b)
//     ->  y = Reshape(Conv(Reshape(x, [N,C,1,W]), w'[O,C/g,1,k], b), [N,O,W'])
//
// with kernel_shape, strides, dilations and pads given a leading row of 1, 1, 1 and 0, 0
// (ConvTranspose likewise, its output_shape a leading 1 and output_padding a 0; MaxPool,
// AveragePool, GlobalAveragePool and GlobalMaxPool too). The elementwise ops that
// alone read the result (an activation, a BatchNormalization left unfolded, a per-channel bias, a
// residual Add) move into the lifted form with it, as they mean the same on [N,C,1,W]. Between two
// lifted ops the Reshape pair folds away (reshape folding, then the same-shape Reshape is a
// no-op), so a
// 1-D CNN (an audio or time-series model, a text CNN) runs on the 2-D kernels and the 2-D
// layout assignment: channels-last from end to end, as an image model does, instead of each
// op reordering its channels-first tensors around its own kernel.
#include "ops/core/registry.h"
#include "passes/graph_util.h"
#include "passes/pass.h"

namespace kiln::passes {

namespace {

// [a] -> [lead, a] for each of the listed attributes present on `n` (pads: [b, e] -> [0, b, 0, e]).
ir::Attributes lifted_attrs(const ir::Node& n) {
  ir::Attributes a = n.attrs;
  for (const char* name : {"kernel_shape", "strides", "dilations", "output_shape"}) {
    auto it = a.find(name);
    if (it == a.end()) continue;
    const std::vector<int64_t> v = n.attr_ints(name);
    a[name] = ir::Attribute::of_ints({1, v.empty() ? 1 : v[0]});
  }
  if (auto it = a.find("output_padding"); it != a.end()) {
    const std::vector<int64_t> v = n.attr_ints("output_padding");
    a["output_padding"] = ir::Attribute::of_ints({0, v.empty() ? 0 : v[0]});
  }
  if (auto it = a.find("pads"); it != a.end()) {
    const std::vector<int64_t> p = n.attr_ints("pads");
    a["pads"] = ir::Attribute::of_ints({0, p.size() > 0 ? p[0] : 0, 0, p.size() > 1 ? p[1] : 0});
  }
  return a;
}

bool static_float3(const ir::Value* v) {
  return v && v->type.is_tensor() && v->type.rank_known && v->type.rank() == 3 && v->type.is_static() &&
         v->type.dtype == DType::Float;
}

ir::Value* reshaped(ir::Graph& g, ir::Value* x, const std::vector<int64_t>& dims, const std::string& name) {
  ir::Value* shape = add_const(g, g.unique_name(name + "_shape"),
                               Tensor::from_vector<int64_t>({static_cast<int64_t>(dims.size())}, dims));
  ir::Value* y = g.add_value(g.unique_name(name), ir::TensorType::from_dims(x->type.dtype, dims));
  g.add_node("Reshape", {x, shape}, {y}, {}, g.unique_name(name));
  return y;
}

// Whether `c` computes the same on y's values laid out as [N,C,1,W] as on [N,C,W]: an
// elementwise or broadcasting op (no axis attribute) whose output has y's shape and whose other
// inputs are static of rank 3 at most (each given the same unit row: lifted_operand), or an
// inference BatchNormalization of y (per channel, axis 1).
bool moves_along(const ir::Node& c, const ir::Value* y) {
  if (c.num_outputs() != 1 || c.num_inputs() < 1 || has_subgraph(c) || c.has_attr("axis")) return false;
  if (!c.output(0)->type.is_static() || c.output(0)->type.static_dims() != y->type.static_dims()) return false;
  if (c.domain().empty() && c.op_type() == "BatchNormalization") return c.input(0) == y;
  const ops::OpDef* def = ops::Registry::instance().find(c.domain(), c.op_type());
  if (!def || (def->pattern != ops::PatternKind::ElemWise && def->pattern != ops::PatternKind::Broadcast)) return false;
  for (int i = 0; i < c.num_inputs(); ++i) {
    const ir::Value* v = c.has_input(i) ? c.input(i) : nullptr;
    if (!v || v == y) continue;
    if (!v->type.is_tensor() || !v->type.rank_known || v->type.rank() > 3 || !v->type.is_static()) return false;
  }
  return true;
}

// Another input of a lifted elementwise op, broadcasting against [N,C,W]: the same with a unit
// dim before its last (rank 2 and 3: [C,W] -> [C,1,W]); a scalar or a rank-1 one (along W)
// broadcasts against [N,C,1,W] as it is. A constant is reshaped, a computed value read through
// a Reshape (which folds away where the value is itself a lifted op's result).
ir::Value* lifted_operand(ir::Graph& g, ir::Value* v) {
  if (v->type.rank() < 2) return v;
  std::vector<int64_t> d = v->type.static_dims();
  d.insert(d.end() - 1, 1);
  if (const Tensor* t = const_of(v)) return add_const(g, g.unique_name(v->name() + "_2d"), t->reshaped(d));
  return reshaped(g, v, d, v->name() + "_2d");
}

class Lift1dSpatial : public Pass {
 public:
  std::string name() const override { return "lift_1d_spatial"; }
  bool run(ir::Graph& g) override {
    if (g.opset() < 5) return false;  // Reshape took its shape as an attribute
    bool changed = false;
    for (ir::Node* n : g.nodes()) changed = rewrite(g, n) || changed;
    return changed;
  }

 private:
  static bool rewrite(ir::Graph& g, ir::Node* n) {
    if (!n->domain().empty() || n->num_outputs() != 1 || n->num_inputs() < 1) return false;
    const std::string& op = n->op_type();
    const bool conv = op == "Conv" || op == "ConvTranspose", pool = op == "MaxPool" || op == "AveragePool",
               global = op == "GlobalAveragePool" || op == "GlobalMaxPool";
    if (!conv && !pool && !global) return false;
    ir::Value* x = n->input(0);
    ir::Value* y = n->output(0);
    if (!static_float3(x) || !static_float3(y)) return false;
    std::vector<ir::Value*> ins{nullptr};
    if (conv) {
      const Tensor* w = n->num_inputs() > 1 ? const_of(n->input(1)) : nullptr;
      if (!w || w->rank() != 3 || w->dtype() != DType::Float) return false;
      Tensor w4 = w->reshaped({w->dim(0), w->dim(1), 1, w->dim(2)});
      ins.push_back(add_const(g, g.unique_name(n->name() + "_w2d"), std::move(w4)));
      if (n->num_inputs() > 2) ins.push_back(n->input(2));
    }
    const std::vector<int64_t> xd = x->type.static_dims(), yd = y->type.static_dims();
    ins[0] = reshaped(g, x, {xd[0], xd[1], 1, xd[2]}, x->name() + "_2d");
    const std::vector<int64_t> y4{yd[0], yd[1], 1, yd[2]};
    ir::Value* out4 = g.add_value(g.unique_name(y->name() + "_2d"), ir::TensorType::from_dims(DType::Float, y4));
    g.add_node(op, ins, {out4}, global ? n->attrs : lifted_attrs(*n), g.unique_name(n->name() + "_2d"));
    // The elementwise ops that alone read the result, lifted along.
    while (y->uses().size() == 1 && !is_graph_output(g, y) && moves_along(*y->uses()[0].node, y)) {
      const ir::Node& c = *y->uses()[0].node;
      std::vector<ir::Value*> c_ins = c.inputs();
      const bool batchnorm = c.domain().empty() && c.op_type() == "BatchNormalization";
      for (ir::Value*& v : c_ins)
        if (v == y) v = out4;
        else if (v && !batchnorm) v = lifted_operand(g, v);
      ir::Value* next = g.add_value(g.unique_name(c.output(0)->name() + "_2d"),
                                    ir::TensorType::from_dims(c.output(0)->type.dtype, y4));
      g.add_node(c.op_type(), c_ins, {next}, c.attrs, g.unique_name(c.name() + "_2d"), c.domain());
      out4 = next;
      y = c.output(0);
    }
    g.replace_all_uses(y, reshaped(g, out4, y->type.static_dims(), y->name() + "_1d"));
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> make_lift_1d_spatial() { return std::make_unique<Lift1dSpatial>(); }

}  // namespace kiln::passes
