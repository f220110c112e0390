#include "runtime/compiled_plan.h"

#include <algorithm>

#include <kiln/error.h>
#include <kiln/limits.h>

#include <limits>
#include <unordered_map>

#include "backends/kernel_selection.h"
#include "ir/clone.h"
#include "lower/pipelines.h"
#include "ops/core/infer_graph.h"

namespace kiln::runtime {

std::unique_ptr<Arena> CompiledPlan::acquire_arena() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      auto a = std::move(free_.back());
      free_.pop_back();
      return a;
    }
  }
  return std::make_unique<Arena>(memory.arena_bytes);
}

void CompiledPlan::release_arena(std::unique_ptr<Arena> a) {
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(std::move(a));
}

namespace {
bool all_static(const ir::Node& n) {
  // A fused group's body is data for its kernel; other subgraphs (If, Loop) run on the
  // reference executor.
  const bool fused = n.domain() == "kiln" && (n.op_type() == "FusedElementwise" || n.op_type() == "FusedReduce" ||
                                             n.op_type() == "ConvConcat" || n.op_type() == "ConvChain" || n.op_type() == "GemvChain" ||
                                             n.op_type() == "PrologueConv");
  for (const auto& [k, a] : n.attrs)
    if (!fused && (a.g || !a.graphs.empty())) return false;
  for (const ir::Value* v : n.inputs())
    if (v && (!v->type.is_tensor() || !v->type.is_static())) return false;
  for (const ir::Value* v : n.outputs())
    if (v && (!v->type.is_tensor() || !v->type.is_static() || v->type.dtype == DType::String)) return false;
  return true;
}
}  // namespace

void check_value_sizes(const ir::Graph& g) {
  auto where = [](const ir::Value& v) {
    std::string w = "value '" + v.name() + "'";
    if (v.producer()) w = v.producer()->describe() + ": output '" + v.name() + "'";
    else if (v.is_graph_input()) w = "graph input '" + v.name() + "'";
    return w;
  };
  for (const ir::Value* v : g.values()) {
    const ir::TensorType& t = v->type;
    // Constants were allocated (and checked) at load; sequences hold tensors checked one by one.
    if (v->is_constant() || !t.is_tensor() || !t.is_static() || t.dtype == DType::Undefined) continue;
    int64_t bytes = static_cast<int64_t>(dtype_size(t.dtype));
    for (const ir::Dim& d : t.dims) {
      if (d.value != 0 && bytes > std::numeric_limits<int64_t>::max() / d.value)
        throw Error(where(*v) + ": " + t.str() + " overflows int64 in bytes");
      bytes *= d.value;
    }
    check_memory_cap(bytes, where(*v) + ": " + t.str());
  }
  for (const ir::Node* n : g.nodes())
    for (const auto& [k, a] : n->attrs) {
      if (a.g) check_value_sizes(*a.g);
      for (const auto& sg : a.graphs) check_value_sizes(*sg);
    }
}

std::unique_ptr<CompiledPlan> compile(const ir::Graph& g, const std::vector<std::vector<int64_t>>& input_dims,
                                      const std::vector<std::string>& keep, const backends::Backend* backend,
                                      int fusion_level, const std::vector<std::string>& disabled) {
  auto cp = std::make_unique<CompiledPlan>();
  cp->graph = ir::clone(g);
  ir::Graph& sg = *cp->graph;
  for (size_t i = 0; i < sg.inputs().size() && i < input_dims.size(); ++i) {
    ir::Value* v = sg.inputs()[i];
    if (!v->type.is_tensor() || (input_dims[i].empty() && !v->type.rank_known)) continue;
    v->type = ir::TensorType::from_dims(v->type.dtype, input_dims[i]);
  }
  // Static dims inferred from the bound inputs win over the symbolic ones already there.
  ops::ShapeInference().run(sg);
  check_value_sizes(sg);  // before lowering, which multiplies the dims out unchecked
  if (backend && keep.empty()) {
    lower::LoweringTarget target;
    target.backend = backend->name();
    target.channels_last = backend->prefers_channels_last();
    target.threads = backend->threads();
    target.fusion_level = fusion_level;
    target.can_fuse = [backend](const ir::Node& n) { return backend->can_fuse(n); };
    target.runs_blocked = [backend](const ir::Node& n) { return backend->runs_blocked(n); };
    target.takes_conv_prologue = [backend](const ir::Node& n) { return backend->takes_conv_prologue(n); };
    target.chain_channels = backend->splits_chain_channels();
    target.attention_layouts = backend->reads_attention_layouts();
    target.chains_gemvs = [backend](const ir::Node& a, const ir::Node& b) { return backend->chains_gemvs(a, b); };
    target.deals_branches = [backend](const std::vector<std::vector<const ir::Node*>>& branches) {
      return backend->deals_branches(branches);
    };
    target.disabled = disabled;
    lower::LoweringStats st = lower::run_lowering(sg, target);
    cp->layout = st.layout;
    cp->fusion = st.fusion;
    cp->lowering = std::move(st.passes);
  }
  lower::LowerOptions lo;
  for (const std::string& name : keep) {
    const ir::Value* v = sg.find_value(name);
    if (!v) throw Error("keep: the model has no value named '" + name + "'");
    lo.keep.push_back(v);
  }
  // Kernels are chosen before the buffers are laid out: a kernel that may write its output over
  // a dying input (Kernel::writes_over) lets the plan give the output that input's storage.
  std::unordered_map<const ir::Node*, backends::SelectedKernel> selected;
  if (backend)
    for (const ir::Node* n : sg.nodes()) {
      if (!all_static(*n)) continue;
      backends::SelectedKernel k = backends::select_kernel(*backend, *n, backend->threads());
      if (k.kernel) selected.emplace(n, std::move(k));
    }
  lo.writes_over = [&selected](const ir::Node& n, int k) {
    const auto it = selected.find(&n);
    return it != selected.end() && it->second.kernel->writes_over(k);
  };
  cp->program = lower::lower(sg, lo);
  cp->team_choices = std::make_unique<backends::TeamChoice[]>(cp->program.instructions.size());
  std::vector<plan::KernelSpec> specs(cp->program.instructions.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    lower::Instruction& ins = cp->program.instructions[i];
    const auto it = selected.find(ins.node);
    if (it == selected.end()) continue;
    ins.kernel = std::move(it->second.kernel);
    ins.backend = it->second.spec.str();
    specs[i] = std::move(it->second.spec);
    ++cp->kernel_choices;
  }
  cp->memory = plan::plan_memory(cp->program);
  cp->plan = plan::make_executable_plan(cp->program, cp->memory, specs, backend ? backend->name() : "reference",
                                        backend ? backend->threads() : 1,
                                        backend ? backend->isa_features() : std::vector<std::string>{});
  std::string shapes;
  for (const std::vector<int64_t>& dims : input_dims) {
    shapes += shapes.empty() ? "[" : ", [";
    for (size_t i = 0; i < dims.size(); ++i) shapes += (i ? "," : "") + std::to_string(dims[i]);
    shapes += "]";
  }
  check_memory_cap(cp->memory.arena_bytes, "the arena for input shapes " + shapes);
  return cp;
}

}  // namespace kiln::runtime
