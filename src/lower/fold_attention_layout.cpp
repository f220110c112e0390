#include "lower/fold_attention_layout.h"

#include <numeric>
#include <string>
#include <vector>

#include "ir/graph_util.h"
#include "ops/core/attention_view.h"

namespace kiln::lower {

namespace {

// The Transpose's perm (its default: the axes reversed), or empty when it is not one of `rank`.
std::vector<int64_t> transpose_perm(const ir::Node& t, size_t rank) {
  std::vector<int64_t> p = t.attr_ints("perm");
  if (p.empty() && !t.has_attr("perm")) {
    p.resize(rank);
    std::iota(p.rbegin(), p.rend(), 0);
  }
  std::vector<bool> seen(rank, false);
  if (p.size() != rank) return {};
  for (int64_t& a : p) {
    if (a < 0) a += static_cast<int64_t>(rank);
    if (a < 0 || a >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(a)]) return {};
    seen[static_cast<size_t>(a)] = true;
  }
  return p;
}

// Transpose(Transpose(x, inner), outer) = Transpose(x, c), c[i] = inner[outer[i]]; an empty
// perm is the identity.
std::vector<int64_t> compose(const std::vector<int64_t>& inner, const std::vector<int64_t>& outer) {
  if (inner.empty()) return outer;
  if (outer.empty()) return inner;
  std::vector<int64_t> c;
  for (int64_t o : outer) c.push_back(inner[static_cast<size_t>(o)]);
  return c;
}

bool identity(const std::vector<int64_t>& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<int64_t>(i)) return false;
  return true;
}

ir::Attribute perm_attr(const std::vector<int64_t>& p) { return ir::Attribute::of_ints(p); }

const char* const kInputPerms[3] = {"q_perm", "k_perm", "v_perm"};
const char* const kInputIndices[3] = {"q_index", "k_index", "v_index"};

// A scalar Gather's constant index, in [0, extent), or -1.
int64_t scalar_index(const ir::Node& gather, int64_t extent) {
  const ir::Value* i = gather.num_inputs() > 1 ? gather.input(1) : nullptr;
  if (!i || !i->is_constant() || !i->type.rank_known || i->type.rank() != 0) return -1;
  const std::vector<int64_t> v = i->constant().to_int64_vector();
  if (v.size() != 1) return -1;
  const int64_t k = v[0] < 0 ? v[0] + extent : v[0];
  return k >= 0 && k < extent ? k : -1;
}

// An operand Transpose(x, perm)[index] (index < 0: none) the node could read instead of its input.
struct Source {
  ir::Value* x;
  std::vector<int64_t> perm;
  int64_t index = -1;
};

// Walks from input i of `a` up through Transposes and at most one scalar Gather (a head of a
// packed QKV tensor), as long as every step's type is static; the farthest source reached.
Source walk(const ir::Node& a, int i) {
  ir::Value* v = a.input(i);
  const size_t rank = v->type.rank_known ? static_cast<size_t>(v->type.rank()) : 0;
  Source s{v, ops::attention_perm(a, kInputPerms[i], rank),
           a.has_attr(kInputIndices[i]) ? a.attr_int(kInputIndices[i], 0) : -1};
  if (s.perm.empty()) {
    s.perm.resize(rank);
    std::iota(s.perm.begin(), s.perm.end(), 0);
  }
  for (;;) {
    const ir::Node* p = v->producer();
    if (!p || !p->domain().empty() || !p->input(0) || !p->input(0)->type.is_static()) return s;
    ir::Value* x = p->input(0);
    const std::vector<int64_t> dims = x->type.static_dims();
    if (p->op_type() == "Transpose") {
      const std::vector<int64_t> tp = transpose_perm(*p, dims.size());
      if (tp.empty()) return s;
      s.perm = compose(tp, s.perm);
    } else if (p->op_type() == "Gather" && s.index < 0) {
      const int64_t r = static_cast<int64_t>(dims.size());
      int64_t axis = p->attr_int("axis", 0);
      if (axis < 0) axis += r;
      if (axis < 0 || axis >= r) return s;
      const int64_t index = scalar_index(*p, dims[static_cast<size_t>(axis)]);
      if (index < 0) return s;
      // Transpose(Gather(x, index, axis), perm) = Transpose(x, [axis, perm's axes past it])[index].
      std::vector<int64_t> perm{axis};
      for (int64_t q : s.perm) perm.push_back(q < axis ? q : q + 1);
      s.perm = perm;
      s.index = index;
    } else {
      return s;
    }
    s.x = v = x;
  }
}

// A Mul of Q or K_T by a constant scalar (Swin's q * head_dim^-0.5 before its attention) joins
// the node's scale, which multiplies their product: Q's Gather and Transpose can fold then.
// Returns 1 if so.
int fold_scalar_factor(ir::Node* a, int i) {
  ir::Node* m = ir::producer_of(a->input(i), "Mul");
  if (!m || m->num_inputs() != 2) return 0;
  for (int c = 0; c < 2; ++c) {
    const ir::Value* k = m->input(c);
    ir::Value* x = m->input(1 - c);
    if (!k || !x || !k->is_constant() || k->constant().dtype() != DType::Float || k->constant().numel() != 1) continue;
    if (!x->type.is_static() || x->type.static_dims() != a->input(i)->type.static_dims()) continue;
    a->attrs["scale"] = ir::Attribute::of_float(a->attr_float("scale", 1.f) * k->constant().data<float>()[0]);
    a->set_input(i, x);
    return 1;
  }
  return 0;
}

// Folds the scalar factors of Q and K_T and the Transposes and Gathers that feed Q, K_T and V;
// returns how many inputs it moved.
int fold_inputs(ir::Node* a) {
  int folded = 0;
  for (int i = 0; i < 2; ++i)
    if (!a->has_attr(kInputPerms[i]) && !a->has_attr(kInputIndices[i])) folded += fold_scalar_factor(a, i);
  for (int i = 0; i < 3; ++i) {
    if (!a->input(i) || !a->input(i)->type.is_static()) continue;
    const Source s = walk(*a, i);
    if (s.x == a->input(i)) continue;
    const std::vector<int64_t> dims = s.x->type.static_dims();
    ops::StridedView v = ops::transposed_view(dims, s.perm);
    if (s.index >= 0) v = ops::selected(std::move(v), s.index);
    if (!ops::reads_as_rows(v, i == 1)) continue;
    if (identity(s.perm)) a->attrs.erase(kInputPerms[i]);
    else a->attrs[kInputPerms[i]] = perm_attr(s.perm);
    if (s.index >= 0) a->attrs[kInputIndices[i]] = ir::Attribute::of_int(s.index);
    a->set_input(i, s.x);
    ++folded;
  }
  return folded;
}

// Folds the Transpose that alone reads `a`'s output into a new Attention node; returns 1 if so.
int fold_output(ir::Graph& g, ir::Node* a) {
  ir::Value* y = a->output(0);
  if (!y || !y->type.is_static() || y->uses().size() != 1 || ir::is_graph_output(g, y)) return 0;
  ir::Node* t = y->uses()[0].node;
  if (!t || !t->domain().empty() || t->op_type() != "Transpose" || !t->output(0)) return 0;
  ir::Value* z = t->output(0);
  if (!z->type.is_static() || ir::is_graph_output(g, z)) return 0;
  const std::vector<int64_t> dims = y->type.static_dims();
  const std::vector<int64_t> tp = transpose_perm(*t, dims.size());
  if (tp.empty() || dims.size() < 2) return 0;
  // Transpose(Transpose(r, p), tp) = Transpose(r, p∘tp).
  const std::vector<int64_t> c = compose(ops::attention_perm(*a, "out_perm", dims.size()), tp);
  const ops::StridedView o = ops::untransposed_view(z->type.static_dims(), c);
  if (!ops::reads_as_rows(o, false)) return 0;
  ir::Attributes attrs = a->attrs;
  if (identity(c)) attrs.erase("out_perm");
  else attrs["out_perm"] = perm_attr(c);
  std::vector<ir::Value*> ins;
  for (int i = 0; i < a->num_inputs(); ++i) ins.push_back(a->input(i));
  ir::Value* out = ir::add_value_like(g, z, z->name());
  g.add_node("Attention", ins, {out}, std::move(attrs), g.unique_name(a->name()), "kiln");
  g.replace_all_uses(z, out);
  return 1;
}

}  // namespace

int fold_attention_layouts(ir::Graph& g) {
  int folded = 0;
  for (ir::Node* n : g.nodes()) {
    if (n->domain() != "kiln" || n->op_type() != "Attention" || n->num_inputs() < 3 || n->num_outputs() != 1) continue;
    folded += fold_inputs(n);
    folded += fold_output(g, n);
  }
  if (folded > 0) {
    ir::remove_dead_nodes(g);
    g.topological_sort();
  }
  return folded;
}

std::unique_ptr<passes::Pass> make_attention_layout_pass(int* folded) {
  return std::make_unique<passes::FunctionPass>("attention_layout", [folded](ir::Graph& g) {
    *folded = fold_attention_layouts(g);
    return *folded > 0;
  });
}

}  // namespace kiln::lower
