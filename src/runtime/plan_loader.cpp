#include "runtime/plan_loader.h"

#include <kiln/error.h>
#include <kiln/limits.h>

#include <cstdlib>

#include "runtime/packed_store.h"

namespace kiln::runtime {

bool cpu_has_feature(const std::string& name) {
  // KILN_HIDE_CPU_FEATURES=avx512f,... makes kiln treat those as missing: what loading a plan
  // on an older CPU does, tried on this one.
  if (const char* hidden = std::getenv("KILN_HIDE_CPU_FEATURES")) {
    const std::string list = std::string(",") + hidden + ",";
    if (list.find("," + name + ",") != std::string::npos) return false;
  }
  // __builtin_cpu_supports takes string literals only.
#define KILN_FEATURE(f) \
  if (name == f) return __builtin_cpu_supports(f);
  KILN_FEATURE("avx512f")
  KILN_FEATURE("avx512bw")
  KILN_FEATURE("avx512vl")
  KILN_FEATURE("avx512dq")
  KILN_FEATURE("avx2")
  KILN_FEATURE("fma")
  KILN_FEATURE("avx")
  KILN_FEATURE("sse4.2")
#undef KILN_FEATURE
  throw Error("unknown CPU feature '" + name + "' in the plan");
}

void check_isa(const std::vector<std::string>& isa) {
  for (const std::string& f : isa)
    if (!cpu_has_feature(f))
      throw Error("the plan's kernels need the CPU feature '" + f +
                  "', which this CPU lacks (compile the model again on this machine)");
}

std::unique_ptr<CompiledPlan> load_compiled_plan(std::unique_ptr<ir::Graph> lowered, plan::ExecutablePlan e,
                                                 const backends::Backend* backend,
                                                 std::vector<backends::PackedWeights>* packed, PlanLoadStats* stats) {
  PlanLoadStats local;
  PlanLoadStats& st = stats ? *stats : local;
  auto cp = std::make_unique<CompiledPlan>();
  cp->graph = std::move(lowered);
  check_value_sizes(*cp->graph);
  cp->program = plan::program_of(e, *cp->graph);
  cp->team_choices = std::make_unique<backends::TeamChoice[]>(cp->program.instructions.size());
  cp->memory = plan::memory_plan_of(e, cp->program);
  check_memory_cap(cp->memory.arena_bytes, "the plan's arena");
  if (backend) {
    check_isa(e.isa);
    for (size_t i = 0; i < e.instructions.size(); ++i) {
      plan::KernelSpec& spec = e.instructions[i].spec;
      lower::Instruction& ins = cp->program.instructions[i];
      if (spec.on_reference()) continue;
      if (spec.threads != backend->threads()) {
        spec = backend->rederive(*ins.node, std::move(spec), backend->threads());
        ++st.rederived;
      }
      std::unique_ptr<backends::Kernel> k;
      if (packed && i < packed->size() && !(*packed)[i].buffers.empty()) {
        backends::PackedWeightsScope scope((*packed)[i], backends::PackedWeightsScope::Mode::Replay,
                                           packing_identity(spec));
        k = backend->instantiate(*ins.node, spec);
        st.buffers_replayed += static_cast<int64_t>(scope.replayed());
        st.kernels_repacked += scope.repacked() ? 1 : 0;
      } else {
        k = backend->instantiate(*ins.node, spec);
      }
      if (!k)
        throw Error(ins.node->describe() + ": the " + backend->name() + " backend cannot build the plan's kernel " +
                    spec.str());
      // An output the plan writes over an input must be one this kernel can write there.
      for (int out : ins.outputs) {
        if (out < 0 || !cp->program.buffers[out].in_place) continue;
        for (size_t j = 0; j < ins.inputs.size(); ++j)
          if (ins.inputs[j] == cp->program.buffers[out].alias_of && !lower::elementwise_overwrites(*ins.node, static_cast<int>(j)) &&
              !k->writes_over(static_cast<int>(j)))
            throw Error(ins.node->describe() + ": the plan writes its output over input " + std::to_string(j) +
                        ", which its kernel " + spec.str() + " cannot do");
      }
      ins.kernel = std::move(k);
      ins.backend = spec.str();
    }
  } else {
    for (plan::PlanInstruction& pi : e.instructions) pi.spec = plan::KernelSpec{};
    for (lower::Instruction& ins : cp->program.instructions) ins.backend = "reference";
  }
  cp->plan = std::move(e);
  return cp;
}

}  // namespace kiln::runtime
