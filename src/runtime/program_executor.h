// Runs a lowered Program with its MemoryPlan: intermediates live in one arena at their planned
// offsets (kernels write straight into their slots), graph outputs and data-dependent values
// get their own allocations. Nodes run on the reference kernels; subgraph ops (If/Loop/Scan)
// run their bodies through the ReferenceExecutor with this run's values as outer scope.
#pragma once
#include <kiln/tensor.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "backends/backend.h"
#include "lower/program.h"
#include "plan/memory_plan.h"
#include "runtime/trace.h"
#include "runtime/reference_executor.h"

namespace kiln::runtime {

// One run's arena: 64-byte aligned (from 2 MiB up, in huge pages), reused across runs of the
// same plan, with the run's values by buffer id. The values that live in the arena stay between
// runs (a kernel's output tensor, its dims and its slot, is made once, not on every run: MNN's
// session keeps its tensors the same way); the others (inputs, graph outputs, values of their
// own) are let go at the end of each run.
class Arena {
 public:
  explicit Arena(int64_t bytes);
  std::vector<Tensor>& values() { return values_; }
  std::byte* data() const { return static_cast<std::byte*>(mem_.get()); }
  int64_t size() const { return size_; }
  bool contains(const void* p) const {
    auto* b = static_cast<const std::byte*>(p);
    return size_ > 0 && b >= data() && b < data() + size_;
  }

 private:
  std::shared_ptr<void> mem_;
  int64_t size_;
  std::vector<Tensor> values_;
};

// inputs: one per graph input. Returns one tensor per graph output; `kept` receives the
// values of `keep` buffers (by value pointer). With `backend`, kernels that runs_in_team() run
// in stretches inside its held team (Backend::hold_team). With `trace`, every instruction is
// timed into it.
// `team_choices` (one per instruction, or null): the stretch starting at instruction i chooses
// between the team and this thread alone with team_choices[i] (backends/team_choice.h).
std::vector<Tensor> execute(const lower::Program& prog, const plan::MemoryPlan& plan, Arena& arena,
                            const std::vector<Tensor>& inputs, ValueMap* kept = nullptr,
                            const backends::Backend* backend = nullptr, Trace* trace = nullptr,
                            backends::TeamChoice* team_choices = nullptr);

}  // namespace kiln::runtime
