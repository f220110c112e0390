#include "codegen/cuda/cuda_emitter.h"

#include <kiln/error.h>

#include <algorithm>
#include <cstdint>

#include "codegen/cpp/emit_context.h"
#include "codegen/cpp/op_emitters.h"
#include "codegen/cuda/cuda_ops.h"

namespace kiln::codegen::cuda {

void CudaEmitter::begin(int signature, const PlanSource& source, const std::vector<Operand>& inputs,
                        const std::vector<Operand>& outputs) {
  signature_ = signature;
  placer_.reset();
  scheduler_ = StreamScheduler(max_streams_);
  plan_index_.clear();
  schedules.emplace_back();
  accesses.emplace_back();
  cpp::SignatureCode sc;
  for (const Operand& o : inputs) sc.inputs.push_back({o.value->name(), o.dtype, o.dims});
  for (const Operand& o : outputs) sc.outputs.push_back({o.value->name(), o.dtype, o.dims});
  for (const auto& a : source.plan->arenas) sc.arena_bytes = std::max(sc.arena_bytes, a.bytes);
  for (const Operand& o : outputs) cpp::ctype(o.dtype);  // an unsupported output type fails here
  signatures.push_back(std::move(sc));
}

namespace {

// Where a copied region is on the device and in the host mirror (model.cu's Run).
std::string device_ptr(const CopyRegion& r) {
  switch (r.storage.kind) {
    case StorageKind::Input: return "c.in[" + std::to_string(r.storage.index) + "]";
    case StorageKind::Output: return "c.out[" + std::to_string(r.storage.index) + "]";
    default: return "c.arena + " + std::to_string(r.storage.offset);
  }
}

std::string host_ptr(const CopyRegion& r) {
  switch (r.storage.kind) {
    case StorageKind::Input: return "c.host->in[" + std::to_string(r.storage.index) + "]";
    case StorageKind::Output: return "c.host->out[" + std::to_string(r.storage.index) + "]";
    default: return "c.host->arena + " + std::to_string(r.storage.offset);
  }
}

std::string op_name(const ir::Node& n) { return n.domain().empty() ? n.op_type() : n.domain() + "." + n.op_type(); }

// The bytes operands occupy at run time, for the stream scheduler: a range of the arena (the
// root buffer's, so views and in-place results meet their storage), or a whole input or output;
// `by_buffer`: an arena operand's root buffer instead of its bytes. Weights are read-only.
std::vector<Region> regions(const std::vector<Operand>& operands, bool by_buffer) {
  constexpr int64_t kWhole = INT64_MAX;
  std::vector<Region> r;
  for (const Operand& o : operands) {
    if (o.buffer < 0) continue;
    switch (o.storage.kind) {
      case StorageKind::Constant: break;
      case StorageKind::Input: r.push_back({2 + 2 * o.storage.index, 0, kWhole}); break;
      case StorageKind::Output: r.push_back({3 + 2 * o.storage.index, 0, kWhole}); break;
      case StorageKind::Arena:
        if (by_buffer)
          r.push_back({-1 - o.root, 0, 1});
        else
          r.push_back({0, o.storage.offset, o.storage.offset + std::max<int64_t>({o.root_bytes, o.bytes(), 1})});
        break;
    }
  }
  return r;
}

// The host mirror the CPU instructions share: one region, so that they run one after another.
constexpr Region kHostMirror{1, 0, 1};

}  // namespace

void CudaEmitter::step(const Step& s) {
  const std::string name = cpp::function_name(signature_, s, used_names_);
  const std::string comment = cpp::instruction_comment(s);
  // On the GPU when the CUDA target has a kernel for it, else on the CPU (also when the CUDA
  // emitter refuses this form of the op).
  OpEmitFn gpu = find_cuda_op_emitter(*s.node);
  EmitContext ctx(s, weights, headers_, 0);
  ctx.cuda = true;
  ctx.function = name;
  ctx.conv_table = &convs;
  std::string gpu_refusal = "the CUDA target has no emitter for this op";
  if (gpu) {
    try {
      gpu(ctx);
    } catch (const UnsupportedError& e) {
      gpu_refusal = e.what();
      gpu = nullptr;
    }
  }
  const OpEmitFn cpu = gpu ? nullptr : cpp::find_op_emitter(*s.node);
  if (!gpu && !cpu) throw ctx.unsupported(gpu_refusal + "; nor has the C++ target (to run it on the CPU)");
  const PlacedStep placed = placer_.place(s, gpu == nullptr);
  placement.push_back({signature_, op_name(*s.node), s.node->name(), placed});
  // Its stream: a view launches nothing and takes none.
  const bool view = gpu && ctx.lines.size() == 1 && ctx.lines[0].rfind("//", 0) == 0;
  StreamStep stream{-1, {}};
  if (!view) {
    std::vector<Region> writes = regions(s.outputs, by_buffer);
    if (!gpu) writes.push_back(kHostMirror);
    const size_t call = plan_index_.size();
    const int given_stream = given ? given->at(static_cast<size_t>(signature_)).at(call).stream : -1;
    stream = scheduler_.add(static_cast<int>(call), regions(s.inputs, by_buffer), writes, given_stream);
    streams = std::max(streams, stream.stream + 1);
    ScheduledAccess a{stream, {}};
    for (const std::vector<Operand>* ops : {&s.inputs, &s.outputs})
      for (const Operand& o : *ops)
        if (o.buffer >= 0 && o.storage.kind == StorageKind::Arena) a.roots.push_back(o.root);
    accesses.back().push_back(std::move(a));
    placement.back().stream = stream.stream;
    for (int w : stream.waits) placement.back().after.push_back(plan_index_[static_cast<size_t>(w)]);
  }
  schedules.back().push_back(stream);
  plan_index_.push_back(s.index);
  if (!gpu) {
    // The C++ target's function for it, on the host mirror (model_cpu.cpp), and here the copies
    // around its call.
    EmitContext host(s, weights, cpu_kernels, 32);
    host.function = name;
    cpu(host);
    std::string f = comment + "static bool " + name + "_host([[maybe_unused]] Run& c) {\n";
    for (const std::string& l : host.lines) f += "  " + l + "\n";
    f += "  return true;\n}\n";
    f += "bool " + name + "_cpu(kiln_cpu_run& r) {\n  Run c{r.arena, r.w, r.in, r.out, nullptr, nullptr};\n" +
         "  if (" + name + "_host(c)) return true;\n  r.error = c.error;\n  return false;\n}\n";
    cpu_functions.push_back(std::move(f));
    const int call = static_cast<int>(host_calls.size());
    host_calls.push_back(name + "_cpu");
    std::string g = comment + "// On the CPU (no CUDA kernel for " + op_name(*s.node) + "): model_cpu.cpp's " + name +
                    "_cpu, its operands copied around it.\n";
    g += "bool " + name + "(Run& c) {\n";
    for (const CopyRegion& r : placed.to_host)
      g += "  if (!c.to_host(" + device_ptr(r) + ", " + host_ptr(r) + ", " + std::to_string(r.bytes) + ")) return false;\n";
    g += "  if (!c.on_host(" + std::to_string(call) + ")) return false;\n";
    for (const CopyRegion& r : placed.to_device)
      g += "  if (!c.to_device(" + host_ptr(r) + ", " + device_ptr(r) + ", " + std::to_string(r.bytes) + ")) return false;\n";
    g += "  return true;\n}\n";
    signatures.back().functions.push_back(std::move(g));
    signatures.back().names.push_back(name);
    return;
  }

  if (view) ++views;
  scratch_bytes = std::max(scratch_bytes, ctx.scratch_bytes);

  std::string f;
  if (!ctx.device.empty()) {
    f += comment;
    for (const std::string& l : ctx.device) {
      f += l + "\n";
      kernels += l.rfind("__global__", 0) == 0 ? 1 : 0;
    }
  }
  f += comment + "bool " + name + "([[maybe_unused]] Run& c) {\n";
  for (const std::string& l : ctx.lines) f += "  " + l + "\n";
  f += "  return true;\n}\n";
  signatures.back().functions.push_back(std::move(f));
  signatures.back().names.push_back(name);
}

}  // namespace kiln::codegen::cuda
