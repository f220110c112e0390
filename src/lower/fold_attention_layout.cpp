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

// Folds the Transposes that feed `a`'s Q, K_T and V; returns how many.
int fold_inputs(ir::Node* a) {
  int folded = 0;
  for (int i = 0; i < 3; ++i) {
    ir::Node* t = ir::producer_of(a->input(i), "Transpose");
    if (!t || !t->input(0) || !t->input(0)->type.is_static()) continue;
    const std::vector<int64_t> dims = t->input(0)->type.static_dims();
    const std::vector<int64_t> tp = transpose_perm(*t, dims.size());
    if (tp.empty() || dims.size() < 2) continue;
    const std::vector<int64_t> c = compose(tp, ops::attention_perm(*a, kInputPerms[i], dims.size()));
    const ops::StridedView v = ops::transposed_view(dims, c);
    const size_t r = dims.size();
    // Rows of contiguous columns; the keys (K_T) may also be K's rows.
    const bool rows = v.strides[r - 1] == 1 || (i == 1 && v.strides[r - 2] == 1);
    if (!rows) continue;
    if (identity(c)) a->attrs.erase(kInputPerms[i]);
    else a->attrs[kInputPerms[i]] = perm_attr(c);
    a->set_input(i, t->input(0));
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
  if (o.strides.back() != 1) return 0;
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
