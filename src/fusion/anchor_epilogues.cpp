#include "fusion/anchor_epilogues.h"

#include "ir/graph_util.h"
#include "passes/pass.h"
#include "passes/pass_manager.h"

namespace kiln::fusion {

bool fold_anchor_epilogues(ir::Graph& g) {
  std::vector<std::string> names;
  for (const ir::Value* v : g.outputs()) names.push_back(v->name());
  passes::PassManager pm;
  std::vector<std::unique_ptr<passes::Pass>> stage;
  stage.push_back(passes::make_fuse_residual_add());
  stage.push_back(passes::make_fuse_matmul_bias());
  stage.push_back(passes::make_fuse_activation());
  pm.add_stage(std::move(stage));
  const bool changed = pm.run(g);
  if (changed) {
    ir::remove_dead_nodes(g);
    ir::restore_output_names(g, names);
  }
  return changed;
}

std::unique_ptr<passes::Pass> make_anchor_epilogues_pass() {
  return std::make_unique<passes::FunctionPass>("anchor_epilogues", fold_anchor_epilogues);
}

}  // namespace kiln::fusion
