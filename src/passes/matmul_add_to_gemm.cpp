// \file MatMul + Add -> Gemm. A 2-D MatMul whose only reader adds a bias that broadcasts to
// its output (scalar, [N], [1,N], [M,N]) becomes one Gemm with that bias as C.
//
//   Add(MatMul(A:[M,K], B:[K,N]), c)  ->  Gemm(A, B, c)
//
// N-D MatMuls (batched, e.g. transformer projections over [batch, seq, hidden]) stay as they
// are: Gemm is 2-D only.
#include "passes/graph_util.h"
#include "passes/pass.h"

namespace kiln::passes {

namespace {

bool rank2(const ir::Value* v) { return v && v->type.rank_known && v->type.rank() == 2; }

class MatMulAddToGemm : public Pass {
 public:
  std::string name() const override { return "matmul_add_to_gemm"; }
  bool run(ir::Graph& g) override {
    if (g.opset() < 7) return false;
    bool changed = false;
    for (ir::Node* n : g.nodes()) {
      if (n->op_type() != "Add" || !n->domain().empty() || n->num_inputs() != 2) continue;
      for (int side = 0; side < 2; ++side) {
        ir::Value* m = n->input(side);
        ir::Value* c = n->input(1 - side);
        ir::Node* mm = producer_of(m, "MatMul");
        if (!mm || !single_use(g, m) || !rank2(mm->input(0)) || !rank2(mm->input(1)) || !rank2(m)) continue;
        if (!dtype_is_float(m->type.dtype) || c->type.dtype != m->type.dtype || !c->type.rank_known) continue;
        ir::Value* y = n->output(0);
        if (!rank2(y) || !y->type.dims[0].same_as(m->type.dims[0]) || !y->type.dims[1].same_as(m->type.dims[1])) continue;
        if (c->type.rank() > 2) continue;
        ir::Value* out = add_value_like(g, y, y->name());
        g.add_node("Gemm", {mm->input(0), mm->input(1), c}, {out}, {}, g.unique_name(mm->name()));
        g.replace_all_uses(y, out);
        changed = true;
        break;
      }
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_matmul_add_to_gemm() { return std::make_unique<MatMulAddToGemm>(); }

}  // namespace kiln::passes
