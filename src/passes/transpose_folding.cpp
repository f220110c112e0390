// \file Transpose folding.
//
//   Transpose(Transpose(x, p1), p2)   -> Transpose(x, p1∘p2), or x when that is the identity
//   Gemm(Transpose(A), B)             -> Gemm(A, B, transA=!transA)   (same for B)
//   MatMul(A:2-D, Transpose(B:2-D))   -> Gemm(A, B, transB=1)
#include <numeric>

#include "passes/graph_util.h"
#include "passes/pass.h"

namespace kiln::passes {

namespace {

std::vector<int64_t> perm_of(const ir::Node& t, int rank) {
  std::vector<int64_t> p = t.attr_ints("perm");
  if (p.empty()) {
    p.resize(rank);
    std::iota(p.rbegin(), p.rend(), 0);
  }
  return p;
}

bool is_2d_swap(const ir::Node* t) {
  if (!t || !t->input(0) || !t->input(0)->type.rank_known || t->input(0)->type.rank() != 2) return false;
  return perm_of(*t, 2) == std::vector<int64_t>{1, 0};
}

class TransposeFolding : public Pass {
 public:
  std::string name() const override { return "transpose_folding"; }
  bool run(ir::Graph& g) override {
    bool changed = false;
    for (ir::Node* n : g.nodes()) {
      if (!n->domain().empty()) continue;
      if (n->op_type() == "Transpose") changed = fold_pair(g, n) || changed;
      else if (n->op_type() == "Gemm") changed = into_gemm(n) || changed;
      else if (n->op_type() == "MatMul") changed = matmul_to_gemm(g, n) || changed;
    }
    return changed;
  }

 private:
  static bool fold_pair(ir::Graph& g, ir::Node* n) {
    ir::Node* p = producer_of(n->input(0), "Transpose");
    if (!p || !p->input(0) || !p->input(0)->type.rank_known) return false;
    int r = p->input(0)->type.rank();
    std::vector<int64_t> p1 = perm_of(*p, r), p2 = perm_of(*n, r);
    if (static_cast<int>(p1.size()) != r || static_cast<int>(p2.size()) != r) return false;
    // y[i] = t[p2[i]] = x[p1[p2[i]]]
    std::vector<int64_t> c(r);
    bool identity = true;
    for (int i = 0; i < r; ++i) {
      if (p2[i] < 0 || p2[i] >= r) return false;
      c[i] = p1[p2[i]];
      identity = identity && c[i] == i;
    }
    ir::Value* y = n->output(0);
    if (identity) {
      g.replace_all_uses(y, p->input(0));
    } else {
      ir::Value* out = add_value_like(g, y, y->name());
      g.add_node("Transpose", {p->input(0)}, {out}, {{"perm", ir::Attribute::of_ints(c)}}, g.unique_name(n->name()));
      g.replace_all_uses(y, out);
    }
    return true;
  }

  static bool into_gemm(ir::Node* n) {
    bool changed = false;
    for (int i = 0; i < 2; ++i) {
      ir::Node* t = producer_of(n->input(i), "Transpose");
      if (!is_2d_swap(t)) continue;
      const char* flag = i == 0 ? "transA" : "transB";
      n->attrs[flag] = ir::Attribute::of_int(n->attr_int(flag, 0) ? 0 : 1);
      n->set_input(i, t->input(0));
      changed = true;
    }
    return changed;
  }

  static bool matmul_to_gemm(ir::Graph& g, ir::Node* n) {
    ir::Node* t = producer_of(n->input(1), "Transpose");
    ir::Value* a = n->input(0);
    if (!is_2d_swap(t) || !a || !a->type.rank_known || a->type.rank() != 2 || g.opset() < 7) return false;
    if (!dtype_is_float(a->type.dtype)) return false;  // Gemm is float-only before opset 11
    ir::Value* y = n->output(0);
    ir::Value* out = add_value_like(g, y, y->name());
    g.add_node("Gemm", {a, t->input(0)}, {out}, {{"transB", ir::Attribute::of_int(1)}}, g.unique_name(n->name()));
    g.replace_all_uses(y, out);
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> make_transpose_folding() { return std::make_unique<TransposeFolding>(); }

}  // namespace kiln::passes
