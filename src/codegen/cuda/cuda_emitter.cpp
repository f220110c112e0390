#include "codegen/cuda/cuda_emitter.h"

#include <kiln/error.h>

#include "codegen/cpp/emit_context.h"
#include "codegen/cpp/op_emitters.h"
#include "codegen/cuda/cuda_ops.h"

namespace kiln::codegen::cuda {

void CudaEmitter::begin(int signature, const PlanSource& source, const std::vector<Operand>& inputs,
                        const std::vector<Operand>& outputs) {
  signature_ = signature;
  placer_.reset();
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

  if (ctx.lines.size() == 1 && ctx.lines[0].rfind("//", 0) == 0) ++views;
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
