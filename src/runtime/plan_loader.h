// A compiled plan from its data: the program and memory plan an ExecutablePlan describes over
// the lowered graph it was made from, and each kernel built from its KernelSpec alone
// (Backend::instantiate). No optimizer or lowering pass runs and no kernel is chosen; a spec
// the backend cannot build is an error naming the node and the spec.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/packed_weights.h"
#include "ir/graph.h"
#include "plan/executable_plan.h"
#include "runtime/compiled_plan.h"

namespace kiln::runtime {

// Whether this CPU has the named feature ("avx512f", "avx2", "fma", ...); a kiln::Error for a
// name kiln does not know.
bool cpu_has_feature(const std::string& name);
// A kiln::Error naming the first of `isa` this CPU lacks.
void check_isa(const std::vector<std::string>& isa);

struct PlanLoadStats {
  int rederived = 0;              // kernels whose work splits were re-derived for another team size
  int64_t buffers_replayed = 0;   // stored packed-weight buffers the kernels used as they were
  int kernels_repacked = 0;       // kernels with stored buffers that packed (some of) their own
};

// `backend` null: every instruction on the reference kernels. A backend with another thread
// count than the plan's re-derives the work splits (each spec's threads). `packed`, one per
// instruction when given, are the stored packed weights the kernels replay
// (backends/packed_weights.h).
std::unique_ptr<CompiledPlan> load_compiled_plan(std::unique_ptr<ir::Graph> lowered, plan::ExecutablePlan e,
                                                 const backends::Backend* backend,
                                                 std::vector<backends::PackedWeights>* packed = nullptr,
                                                 PlanLoadStats* stats = nullptr);

}  // namespace kiln::runtime
