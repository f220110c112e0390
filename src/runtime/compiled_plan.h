// What a session builds once per input-shape signature (MNN's resizeSession): the graph with
// its inputs bound to concrete shapes and types re-inferred, the lowered program, the memory
// plan, and a pool of arenas so concurrent runs each get their own.
#pragma once
#include <kiln/tensor.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "fusion/collapse_groups.h"
#include "ir/graph.h"
#include "lower/layout_assignment.h"
#include "lower/program.h"
#include "passes/pass_manager.h"
#include "plan/executable_plan.h"
#include "plan/memory_plan.h"
#include "backends/team_choice.h"
#include "runtime/program_executor.h"

namespace kiln::runtime {

struct CompiledPlan {
  std::unique_ptr<ir::Graph> graph;  // a specialized clone (weights shared with the session's)
  lower::LayoutStats layout;  // what the layout assignment changed (nothing on the reference backend)
  fusion::CollapseStats fusion;  // fusion groups turned into single kernels
  std::vector<passes::PassStats> lowering;  // the lowering pipeline's passes (lower/pipelines.h)
  lower::Program program;
  plan::MemoryPlan memory;
  std::vector<std::vector<int64_t>> input_dims;  // the input-shape signature it was made for
  plan::ExecutablePlan plan;  // the above as data: one KernelSpec per instruction
  int kernel_choices = 0;     // kernels chosen by the backend's rule or by timing (not given by a plan)
  // Per instruction, the choice between team and one thread of the stretch starting there,
  // kept across runs (execute's team_choices); one per instruction of `program`.
  std::unique_ptr<backends::TeamChoice[]> team_choices;

  std::unique_ptr<Arena> acquire_arena();
  void release_arena(std::unique_ptr<Arena> a);

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<Arena>> free_;
};

// Refuses (kiln::Error naming the node and value) any value of `g` or its subgraphs whose
// static size overflows int64 or is over the calling thread's memory cap (kiln/limits.h).
void check_value_sizes(const ir::Graph& g);

// Clones `g`, binds its inputs to `input_dims` (empty vector = keep the declared type, for
// non-tensor inputs), re-infers every type, checks sizes against the memory cap, lowers and plans. `keep` names values to return.
// With a backend, each instruction whose types are all static is offered to it; declined ones
// stay on the reference kernels. With a backend and fusion_level > 0, the elementwise parts of
// the fusion groups (src/fusion/) become kiln.FusedElementwise nodes the backend runs as one
// kernel each.
// `disabled` names lowering passes to skip (lower::lowering_pass_names()), for isolating a bug or
// measuring what one is worth.
std::unique_ptr<CompiledPlan> compile(const ir::Graph& g, const std::vector<std::vector<int64_t>>& input_dims,
                                      const std::vector<std::string>& keep = {},
                                      const backends::Backend* backend = nullptr, int fusion_level = 3,
                                      const std::vector<std::string>& disabled = {});

}  // namespace kiln::runtime
