#include "runtime/program_executor.h"

#include <kiln/error.h>
#include <kiln/limits.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backends/team_choice.h"
#include "runtime/op_profile.h"

#include "backends/backend.h"
#include "ir/zeroed_memory.h"
#include "ops/core/infer_graph.h"

namespace kiln::runtime {

// From 2 MiB up the arena is a mapping of its own in transparent huge pages, as packed weights
// are (ir/zeroed_memory.h): every run streams each layer's activations through it, and in 4 KiB
// pages a conv reading and writing a few MB walks hundreds of pages per tensor (resnet50 3% faster
// at 1 and 2 threads in 2 MiB pages).
Arena::Arena(int64_t bytes) : size_(bytes) {
  if (bytes > 0) mem_ = allocate_zeroed(static_cast<size_t>(bytes));
}

namespace {

// A backend kernel's output outside the arena (a graph output): the kernel writes every element,
// as it does into the arena's slots, so its memory is not zeroed first (a memset of a large
// output, a segmentation map, costs as much as the upsampling that writes it).
Tensor kernel_output(DType dtype, const std::vector<int64_t>& dims) {
  if (dtype == DType::String || dtype == DType::Undefined) return Tensor(dtype, dims);
  const int64_t numel = Tensor::wrap(dtype, dims, nullptr).numel();  // Tensor's check of the dims
  const int64_t esz = static_cast<int64_t>(dtype_size(dtype));
  if (numel > current_limits().memory_cap_bytes / esz) return Tensor(dtype, dims);  // its error names the tensor
  std::shared_ptr<void> mem = allocate_uninitialized(static_cast<size_t>(numel * esz));
  void* data = mem.get();
  return Tensor::view(dtype, dims, std::move(mem), data);
}

// The output dims of an instruction that only reinterprets its input's dims (Reshape, Flatten,
// Squeeze, Unsqueeze, Identity) and whose output the plan made a view of that input: it then
// runs as the view itself, not through the op's reference kernel, which checks and copies
// shape arguments each run. nullopt otherwise.
std::optional<std::vector<int64_t>> view_dims(const lower::Program& prog, const lower::Instruction& ins,
                                              const std::vector<const Tensor*>& args) {
  // The plan's view first (a few integer compares on every kernel-less instruction), the op after.
  if (ins.outputs.size() != 1 || ins.outputs[0] < 0 || ins.inputs.empty() || ins.inputs[0] < 0) return std::nullopt;
  const lower::Buffer& b = prog.buffers[ins.outputs[0]];
  if (b.alias_of != ins.inputs[0] || b.in_place || args.empty() || !args[0]) return std::nullopt;
  static const std::set<std::string> kViews = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"};
  const ir::Node& n = *ins.node;
  if (!n.domain().empty() || !kViews.count(n.op_type()) || n.num_outputs() != 1) return std::nullopt;
  const ir::Value* y = n.output(0);
  const Tensor& x = *args[0];
  if (!y || !y->type.is_static() || x.kind() != ValueKind::Tensor || y->type.dtype != x.dtype()) return std::nullopt;
  std::vector<int64_t> dims = y->type.static_dims();
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  if (count != x.numel()) return std::nullopt;
  return dims;
}

// Whether `t` is already the tensor a kernel's output of type `type` at `slot` would be made as.
bool is_wrap_of(const Tensor& t, const ir::TensorType& type, const void* slot) {
  if (t.kind() != ValueKind::Tensor || t.raw() != slot || t.dtype() != type.dtype || t.rank() != type.rank()) return false;
  for (int i = 0; i < t.rank(); ++i)
    if (t.dim(i) != type.dims[static_cast<size_t>(i)].value) return false;
  return true;
}

}  // namespace

std::vector<Tensor> execute(const lower::Program& prog, const plan::MemoryPlan& plan, Arena& arena,
                            const std::vector<Tensor>& inputs, ValueMap* kept, const backends::Backend* backend,
                            Trace* trace, backends::TeamChoice* team_choices) {
  if (arena.size() < plan.arena_bytes) throw Error("internal: arena smaller than its plan");
  std::vector<Tensor>& values = arena.values();
  values.resize(prog.buffers.size());
  // However the run ends, what does not live in the arena is let go: the caller's inputs, the
  // outputs returned to it, values with storage of their own.
  struct LetGo {
    std::vector<Tensor>& values;
    const Arena& arena;
    ~LetGo() {
      for (Tensor& t : values)
        if (t.defined() && (t.kind() != ValueKind::Tensor || !arena.contains(t.raw()))) t = Tensor();
    }
  } let_go{values, arena};
  for (size_t i = 0; i < prog.graph_inputs.size(); ++i) values[prog.graph_inputs[i]] = inputs.at(i);
  // Constants are read where the graph holds them, not copied into `values` each run: the
  // copies cost a cache miss and an atomic reference count per constant, on every run.
  auto value = [&](int id) -> const Tensor& {
    const lower::Buffer& b = prog.buffers[id];
    return b.kind == lower::BufferKind::Constant ? b.value->constant() : values[id];
  };

  // Subgraph bodies see every value of this run by IR value.
  ValueMap scope;
  bool scope_ready = false;
  ops::SubgraphRunner runner = [&](const ir::Graph& body, const std::vector<Tensor>& args) {
    if (!scope_ready) {
      scope.clear();
      for (const lower::Buffer& b : prog.buffers)
        if (value(b.id).defined()) scope[b.value] = value(b.id);
      scope_ready = true;
    }
    return ReferenceExecutor(body).run(args, &scope);
  };

  // A result that shares arena storage it was not planned to own (a kernel returned a view of
  // some input, say) would be overwritten when that storage is reused: it is copied.
  auto keep_safe = [&](const lower::Instruction& ins, int id, Tensor& t) {
    if (t.kind() != ValueKind::Tensor || t.numel() == 0 || !arena.contains(t.raw())) return;
    const lower::Buffer& b = prog.buffers[id];
    const bool planned_here = plan.offset_of[id] >= 0 && t.raw() == arena.data() + plan.offset_of[id];
    const bool view_of_input = b.alias_of >= 0 && !b.in_place && !ins.inputs.empty() && ins.inputs[0] >= 0 &&
                               t.raw() == value(ins.inputs[0]).raw();
    if (!planned_here && !view_of_input) t = t.clone();
  };
  std::vector<const Tensor*> args;
  std::vector<Tensor*> out_ptrs;
  std::vector<ops::KernelContext::OutputSlot> slots;
  OpProfile* profile = OpProfile::enabled();
  auto run_one = [&](const lower::Instruction& ins) {
    const ir::Node& n = *ins.node;
    const auto t0 = profile || trace ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    args.clear();
    for (size_t k = 0; k < ins.inputs.size(); ++k) {
      int id = ins.inputs[k];
      const ir::Value* v = n.input(static_cast<int>(k));
      if (!v) { args.push_back(nullptr); continue; }
      if (id < 0) {  // an outer-scope value: only subgraphs have them, and they run elsewhere
        throw Error(n.describe() + ": input '" + v->name() + "' is not available at run time");
      }
      const Tensor& t = value(id);
      if (!t.defined()) throw Error(n.describe() + ": input '" + v->name() + "' has no value at run time");
      args.push_back(&t);
    }
    slots.assign(ins.outputs.size(), {});
    for (size_t k = 0; k < ins.outputs.size(); ++k) {
      int id = ins.outputs[k];
      if (id < 0 || plan.offset_of[id] < 0) continue;
      const lower::Buffer& b = prog.buffers[id];
      if (b.alias_of >= 0 && !b.in_place) continue;  // views take their input's storage
      slots[k].data = arena.data() + plan.offset_of[id];
      slots[k].capacity = static_cast<size_t>(prog.buffers[prog.root(id)].bytes);
      slots[k].zero = !b.in_place;
    }
    scope_ready = false;
    std::vector<Tensor> outs;
    if (ins.kernel) {
      // Backend kernels write their outputs in place: the planned slot's tensor from the last
      // run where it is still the same, else one made here.
      out_ptrs.assign(ins.outputs.size(), nullptr);
      for (size_t k = 0; k < ins.outputs.size(); ++k) {
        const ir::Value* o = n.output(static_cast<int>(k));
        if (!o || ins.outputs[k] < 0) continue;
        Tensor& t = values[ins.outputs[k]];
        if (!slots[k].data) t = kernel_output(o->type.dtype, o->type.static_dims());
        else if (!is_wrap_of(t, o->type, slots[k].data)) t = Tensor::wrap(o->type.dtype, o->type.static_dims(), slots[k].data);
        out_ptrs[k] = &t;
      }
      try {
        ins.kernel->run(args, out_ptrs);
      } catch (const Error& e) {
        throw Error(n.describe() + ": " + e.what());
      }
      for (size_t k = 0; k < ins.outputs.size(); ++k)
        if (out_ptrs[k]) keep_safe(ins, ins.outputs[k], *out_ptrs[k]);
    } else if (const std::optional<std::vector<int64_t>> dims = view_dims(prog, ins, args)) {
      outs = {args[0]->reshaped(*dims)};  // the planned view: the input's storage, new dims
    } else {
      outs = ops::run_reference(n, args, &runner, &slots);
    }
    for (size_t k = 0; k < outs.size() && k < ins.outputs.size(); ++k) {
      int id = ins.outputs[k];
      if (id < 0) continue;
      keep_safe(ins, id, outs[k]);
      values[id] = std::move(outs[k]);
    }
    if (profile || trace) {
      const auto t1 = std::chrono::steady_clock::now();
      if (profile) profile->add(n, ins.backend, t1 - t0);
      if (trace) trace->add(ins, t0, t1);
    }
  };
  // Stretches of kernels that thread only through the backend's parallel loops run with its
  // team held across them (Backend::hold_team), the others one by one.
  auto in_team = [](const lower::Instruction& ins) { return !ins.kernel || ins.kernel->runs_in_team(); };
  const std::vector<lower::Instruction>& code = prog.instructions;
  for (size_t i = 0; i < code.size();) {
    size_t end = i, kernels = 0;
    if (backend)
      for (; end < code.size() && in_team(code[end]); ++end) kernels += code[end].kernel != nullptr;
    if (kernels < 2) {  // a team held for one loop would cost what it saves
      for (const size_t stop = std::max(end, i + 1); i < stop; ++i) run_one(code[i]);
      continue;
    }
    backend->hold_team(
        [&] {
          for (size_t k = i; k < end; ++k) run_one(code[k]);
        },
        team_choices ? &team_choices[i] : nullptr, i == 0 && end == code.size());
    i = end;
  }

  std::vector<Tensor> result;
  for (int id : prog.graph_outputs) {
    Tensor t = value(id);
    if (!t.defined()) throw Error("graph output '" + prog.buffers[id].value->name() + "' has no value after the run");
    if (t.kind() == ValueKind::Tensor && t.numel() > 0 && arena.contains(t.raw())) t = t.clone();
    result.push_back(std::move(t));
  }
  if (kept)
    for (const lower::Buffer& b : prog.buffers)
      if (b.kind == lower::BufferKind::Output && value(b.id).defined()) {
        Tensor t = value(b.id);
        if (t.kind() == ValueKind::Tensor && t.numel() > 0 && arena.contains(t.raw())) t = t.clone();
        (*kept)[b.value] = t;
      }
  return result;
}

}  // namespace kiln::runtime
