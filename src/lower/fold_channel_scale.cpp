#include "lower/fold_channel_scale.h"

#include "ir/graph_util.h"

namespace kiln::lower {

namespace {

bool static_float4(const ir::Value* v) {
  return v && v->type.is_tensor() && v->type.rank_known && v->type.rank() == 4 && v->type.is_static() &&
         v->type.dtype == DType::Float;
}

// The conv that would take Mul `m`'s scale: the only reader of its product, as its X; a
// channels-last FusedConv with one group, plain NHWC X, constant weights and no scale yet.
ir::Node* scaled_conv(const ir::Graph& g, const ir::Node* m) {
  const ir::Value* v = m->output(0);
  if (!v || v->uses().size() != 1 || ir::is_graph_output(g, v)) return nullptr;
  ir::Node* c = v->uses()[0].node;
  if (v->uses()[0].input_index != 0 || c->domain() != "kiln" || c->op_type() != "FusedConv") return nullptr;
  if (!c->attr_int("channels_last", 0) || c->attr_int("x_blocked", 0) || c->attr_int("group", 1) != 1) return nullptr;
  if (c->num_inputs() < 2 || c->num_inputs() > 4 || !c->input(1) || !c->input(1)->is_constant()) return nullptr;
  if (!static_float4(c->input(1)) || !static_float4(c->output(0)) || ir::is_graph_output(g, c->output(0)))
    return nullptr;
  return c;
}

// X and S of Mul(X, S) or Mul(S, X): X [1, H, W, C], S [1, 1, 1, C] computed in the run.
bool split(const ir::Node* m, ir::Value*& x, ir::Value*& s) {
  if (m->domain() != "" || m->op_type() != "Mul" || m->num_inputs() != 2 || m->num_outputs() != 1) return false;
  for (int i = 0; i < 2; ++i) {
    ir::Value *a = m->input(i), *b = m->input(1 - i);
    if (!static_float4(a) || !static_float4(b) || b->is_constant()) continue;
    const auto ad = a->type.static_dims(), bd = b->type.static_dims();
    if (ad[0] == 1 && bd == std::vector<int64_t>{1, 1, 1, ad[3]} && ad[1] * ad[2] > 1) {
      x = a;
      s = b;
      return true;
    }
  }
  return false;
}

}  // namespace

int fold_channel_scales(ir::Graph& g, int64_t free_pixels) {
  // Found first, rewritten after: a rewrite removes the conv, which the scan would meet later.
  struct Fold {
    ir::Node *mul, *conv;
    ir::Value *x, *s;
  };
  std::vector<Fold> folds;
  for (ir::Node* m : g.nodes()) {
    ir::Value *x = nullptr, *s = nullptr;
    if (!split(m, x, s)) continue;
    ir::Node* c = scaled_conv(g, m);
    if (!c) continue;
    // Worth it where the activation has at least twice the weights' elements: scaling a weight
    // (read from a cold buffer, gathering its scale) costs about twice a Mul's element. A 1x1
    // conv of few pixels scales its weights as it loads them, so there it is always worth it.
    const auto xd = x->type.static_dims(), wd = c->input(1)->type.static_dims();
    const bool free = wd[2] == 1 && wd[3] == 1 && xd[1] * xd[2] <= free_pixels &&
                      c->attr_ints("strides", {1, 1}) == std::vector<int64_t>{1, 1};
    if (!free && xd[1] * xd[2] * xd[3] < 2 * wd[0] * wd[1] * wd[2] * wd[3]) continue;
    folds.push_back({m, c, x, s});
  }
  for (const Fold& f : folds) {
    std::vector<ir::Value*> ins = f.conv->inputs();
    ins[0] = f.x;
    ins.resize(4, nullptr);
    ins.push_back(f.s);
    ir::Value* y = f.conv->output(0);
    ir::Value* new_y = ir::add_value_like(g, y, y->name());
    g.add_node("FusedConv", ins, {new_y}, f.conv->attrs, g.unique_name(f.conv->name()), "kiln");
    g.replace_all_uses(y, new_y);
    g.remove_node(f.conv);
    g.remove_node(f.mul);
  }
  if (!folds.empty()) g.topological_sort();  // each new conv went to the end
  return static_cast<int>(folds.size());
}

std::unique_ptr<passes::Pass> make_channel_scale_pass(int* folded) {
  return std::make_unique<passes::FunctionPass>("channel_scale",
                                                [folded](ir::Graph& g) { return (*folded = fold_channel_scales(g)) > 0; });
}

}  // namespace kiln::lower
