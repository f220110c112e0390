#include "passes/pass_manager.h"

#include <kiln/error.h>

#include <chrono>

#include "ir/verifier.h"
#include "ops/core/infer_graph.h"
#include "passes/graph_util.h"

namespace kiln::passes {

void reinfer(ir::Graph& g) { ops::ShapeInference().run(g); }

void PassManager::add_stage(std::vector<std::unique_ptr<Pass>> passes, bool fixed_point) {
  stages_.push_back(Stage{std::move(passes), fixed_point});
}

bool PassManager::run_pass(Pass& p, ir::Graph& g) {
  PassStats* st = nullptr;
  for (PassStats& s : stats_)
    if (s.pass == p.name()) st = &s;
  if (!st) {
    stats_.push_back(PassStats{p.name()});
    st = &stats_.back();
    st->nodes_before = static_cast<int64_t>(g.num_nodes());
  }
  auto t0 = std::chrono::steady_clock::now();
  const int64_t before = static_cast<int64_t>(g.num_nodes());
  bool changed = false;
  try {
    changed = p.run(g);
    if (changed) {
      remove_dead_nodes(g);  // what a rewrite orphaned counts as its effect
      g.topological_sort();
      if (opts_.infer) reinfer(g);
      if (opts_.verify) ir::verify(g);
    }
  } catch (const Error& e) {
    throw Error("pass " + p.name() + ": " + e.what());
  }
  st->ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  st->runs += 1;
  st->changed += changed ? 1 : 0;
  st->nodes_after = static_cast<int64_t>(g.num_nodes());
  st->removed += before - st->nodes_after;
  return changed;
}

bool PassManager::run(ir::Graph& g) {
  bool any = false;
  for (Stage& s : stages_) {
    for (int it = 0; it < (s.fixed_point ? opts_.max_iterations : 1); ++it) {
      bool changed = false;
      for (auto& p : s.passes) changed = run_pass(*p, g) || changed;
      any = any || changed;
      if (!changed) break;
    }
  }
  return any;
}

}  // namespace kiln::passes
