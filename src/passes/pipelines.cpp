// The one place that says which passes run at which level, and in what order.
#include "passes/pipelines.h"

#include <kiln/error.h>

#include "ir/verifier.h"
#include "passes/graph_util.h"

namespace kiln::passes {

namespace {
template <typename... P>
std::vector<std::unique_ptr<Pass>> list(P... p) {
  std::vector<std::unique_ptr<Pass>> v;
  (v.push_back(std::move(p)), ...);
  return v;
}
// Cleanups that every later rewrite can expose more of.
std::vector<std::unique_ptr<Pass>> cleanup() {
  return list(make_constant_folding(), make_eliminate_noops(), make_cse(), make_dce());
}
}  // namespace

PassManager make_pipeline(const OptimizeOptions& o) {
  if (o.level < 0 || o.level > 3) throw Error("optimization level must be 0..3, got " + std::to_string(o.level));
  PassManager pm(PassManager::Options{.verify = o.verify});
  if (o.level == 0) return pm;
  pm.add_stage(list(make_dce(), make_constant_folding(), make_eliminate_noops(), make_cse(),
                    make_reshape_folding(), make_transpose_folding()));
  pm.add_stage(list(make_fold_batchnorm(), make_fold_pad(), make_fold_scale_bias(), make_matmul_add_to_gemm(),
                    make_transpose_folding()));
  // What fold_batchnorm left becomes elementwise; fold_scale_bias takes the Mul into a conv in front when it can.
  pm.add_stage(list(make_decompose_batchnorm(), make_fold_scale_bias()));
  pm.add_stage(cleanup());
  if (o.level >= 2) {
    // 1-D convs and pools as 2-D ones over one row; the Reshapes between two of them fold away.
    pm.add_stage(list(make_pattern_substitution(), make_onnx_attention(), make_convtranspose_to_conv(),
                      make_lift_1d_spatial(), make_reshape_folding(), make_transpose_folding()));
    pm.add_stage(cleanup());
  }
  if (o.level >= 3) {
    pm.add(make_fuse_residual_add());
    pm.add(make_fuse_matmul_bias());
    pm.add(make_fuse_activation());
    pm.add(make_fuse_skip_layernorm());
    pm.add(o.prefer_wide ? make_variadic_merge() : make_variadic_fission(o.variadic_max_inputs));
    pm.add_stage(list(make_dce()));
  }
  return pm;
}

std::vector<PassStats> optimize(ir::Graph& g, const OptimizeOptions& opts) {
  PassManager pm = make_pipeline(opts);
  if (pm.empty()) return {};
  std::vector<std::string> names;
  for (const ir::Value* v : g.outputs()) names.push_back(v->name());
  reinfer(g);
  pm.run(g);
  remove_dead_nodes(g);
  restore_output_names(g, names);
  reinfer(g);
  if (opts.verify) ir::verify(g);
  return pm.stats();
}

}  // namespace kiln::passes
