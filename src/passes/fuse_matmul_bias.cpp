// \file Bias epilogues of matrix products of any rank: a MatMul by constant weights whose only
// reader adds a constant vector along the last dim becomes kiln.FusedMatMul with that vector
// as its bias (oneDNN adds it in the matmul's epilogue). matmul_add_to_gemm covers the 2-D
// case with Gemm; transformer layers multiply [batch, seq, hidden] activations, which Gemm
// cannot take:
//
//   Add(MatMul(x[B,S,K], W[K,N]), b[N])  ->  kiln.FusedMatMul(x, W, b)
//
// fuse_activation then folds a following Gelu/Relu into the same op.
#include "passes/graph_util.h"
#include "passes/pass.h"

namespace kiln::passes {

namespace {

class FuseMatMulBias : public Pass {
 public:
  std::string name() const override { return "fuse_matmul_bias"; }
  bool run(ir::Graph& g) override {
    bool changed = false;
    for (ir::Node* n : g.nodes()) {
      if (!n->domain().empty() || n->op_type() != "MatMul" || n->num_inputs() != 2 || n->num_outputs() != 1) continue;
      ir::Value* y = n->output(0);
      const ir::Value* w = n->input(1);
      if (!y || y->type.dtype != DType::Float || !y->type.rank_known || y->type.rank() < 1 || !single_use(g, y)) continue;
      if (!w || !w->is_constant() || !w->type.rank_known || w->type.rank() != 2) continue;
      const ir::Dim& n_dim = y->type.dims.back();
      if (!n_dim.is_static()) continue;
      ir::Node* add = y->uses()[0].node;
      if (add->owner() != &g || !add->domain().empty() || add->op_type() != "Add" || add->num_inputs() != 2) continue;
      const ir::Value* b = add->input(1 - y->uses()[0].input_index);
      const Tensor* bt = const_of(b);
      if (!bt || bt->dtype() != DType::Float || bt->numel() != n_dim.value || bt->rank() > y->type.rank()) continue;
      // Only a vector along the last dim (any leading 1s): other shapes broadcast differently.
      if (bt->rank() == 0 || bt->dims().back() != n_dim.value) continue;
      ir::Value* bias = add_const(g, b->name() + "_bias", bt->reshaped({n_dim.value}));
      ir::Value* sum = add->output(0);
      if (!(sum->type.dims == y->type.dims)) continue;  // the add broadcast y up: not a bias
      ir::Value* out = add_value_like(g, sum, sum->name());
      use_kiln_domain(g);
      g.add_node("FusedMatMul", {n->input(0), n->input(1), bias}, {out}, {}, g.unique_name(n->name()), "kiln");
      g.replace_all_uses(sum, out);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_matmul_bias() { return std::make_unique<FuseMatMulBias>(); }

}  // namespace kiln::passes
