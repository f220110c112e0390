// Runs passes over a graph in stages. A stage is a list of passes repeated until none of them
// changes the graph (a fixed point) or an iteration cap is hit; a stage of one pass with
// fixed_point=false runs it once.
//
//   stage 1: [constant_folding, eliminate_noops, cse, dce]  (repeat while anything changes)
//   stage 2: [fold_batchnorm, ...]
//
// After every pass that changed the graph the manager restores topological order, re-runs
// shape inference (passes read types), and, when asked, runs the IR verifier so a broken
// invariant is blamed on the pass that broke it.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "passes/pass.h"

namespace kiln::passes {

struct PassStats {
  std::string pass;
  int runs = 0, changed = 0;  // times run, times it changed the graph
  int64_t nodes_before = 0, nodes_after = 0;  // around its first and last run
  int64_t removed = 0;        // net nodes removed over all its runs (negative: added)
  double ms = 0;              // total time, including re-inference after changes
};

class PassManager {
 public:
  struct Options {
    bool verify = false;   // ir::verify after every changing pass
    int max_iterations = 8;
    bool infer = true;     // re-run shape inference after every changing pass
  };
  PassManager() = default;
  explicit PassManager(Options opts) : opts_(opts) {}

  void add_stage(std::vector<std::unique_ptr<Pass>> passes, bool fixed_point = true);
  void add(std::unique_ptr<Pass> p) {
    std::vector<std::unique_ptr<Pass>> v;
    v.push_back(std::move(p));
    add_stage(std::move(v), false);
  }
  // Runs every stage; returns true when the graph changed.
  bool run(ir::Graph& g);
  const std::vector<PassStats>& stats() const { return stats_; }
  bool empty() const { return stages_.empty(); }

 private:
  struct Stage {
    std::vector<std::unique_ptr<Pass>> passes;
    bool fixed_point = true;
  };
  bool run_pass(Pass& p, ir::Graph& g);
  Options opts_;
  std::vector<Stage> stages_;
  std::vector<PassStats> stats_;
};

// Re-runs shape inference; types of values passes created are refined from their producers.
void reinfer(ir::Graph& g);

}  // namespace kiln::passes
