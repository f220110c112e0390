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
  if (!source.plan->placed() && !source.plan->instructions.empty())
    throw Error("code generation: the CUDA target takes a plan placed on devices (place_on_devices)");
  signature_ = signature;
  schedules.emplace_back();
  cpp::SignatureCode sc;
  for (const Operand& o : inputs) sc.inputs.push_back({o.value->name(), o.dtype, o.dims});
  for (const Operand& o : outputs) sc.outputs.push_back({o.value->name(), o.dtype, o.dims});
  for (const auto& a : source.plan->arenas) sc.arena_bytes = std::max(sc.arena_bytes, a.bytes);
  for (const Operand& o : outputs) cpp::ctype(o.dtype);  // an unsupported output type fails here
  signatures.push_back(std::move(sc));
}

namespace {

// Where a copy's operand is: on the device, or in the host mirror (model.cu's Run).
std::string copy_ptr(const Storage& s) {
  const std::string host = s.host ? "c.host->" : "c.";
  switch (s.kind) {
    case StorageKind::Input: return host + "in[" + std::to_string(s.index) + "]";
    case StorageKind::Output: return host + "out[" + std::to_string(s.index) + "]";
    case StorageKind::Arena: return host + "arena + " + std::to_string(s.offset);
    case StorageKind::Constant: break;
  }
  throw Error("code generation: a copy of weights (they are on both devices)");
}

std::string op_name(const ir::Node& n) { return n.domain().empty() ? n.op_type() : n.domain() + "." + n.op_type(); }

// The GPU code for step s into ctx, or "" when the CUDA target has it; else why not.
std::string try_gpu(const Step& s, EmitContext& ctx) {
  const OpEmitFn gpu = find_cuda_op_emitter(*s.node);
  if (!gpu) return "the CUDA target has no emitter for this op";
  try {
    gpu(ctx);
  } catch (const UnsupportedError& e) {
    return e.what();
  }
  return "";
}

// A view: its emitter wrote one comment and launches nothing.
bool is_view(const EmitContext& ctx) { return ctx.lines.size() == 1 && ctx.lines[0].rfind("//", 0) == 0; }

class DeviceChooser : public Emitter {
 public:
  std::vector<Where> where;
  void begin(int, const PlanSource&, const std::vector<Operand>&, const std::vector<Operand>&) override {}
  void end() override {}
  void step(const Step& s) override {
    if (!s.node) throw Error("code generation: the plan is placed already");
    EmitContext ctx(s, weights_, headers_, 0);
    ctx.cuda = true;
    ctx.function = "f";
    ctx.conv_table = &convs_;
    ctx.pool_table = &pools_;
    const std::string refusal = try_gpu(s, ctx);
    if (refusal.empty()) {
      where.push_back(is_view(ctx) ? Where::Nothing : Where::Accelerator);
      return;
    }
    if (!cpp::find_op_emitter(*s.node)) throw ctx.unsupported(refusal + "; nor has the C++ target (to run it on the CPU)");
    where.push_back(Where::Host);
  }

 private:
  WeightsBlob weights_;
  std::set<std::string> headers_;
  std::vector<std::string> convs_, pools_;
};

}  // namespace

std::vector<Where> cuda_devices(const PlanSource& source) {
  DeviceChooser c;
  walk_plan(0, source, c);
  return c.where;
}

void CudaEmitter::step(const Step& s) {
  const plan::PlanInstruction& pi = *s.instruction;
  schedules.back().push_back({pi.stream, pi.after});
  streams = std::max(streams, pi.stream + 1);
  const std::string name = cpp::function_name(signature_, s, used_names_);
  const std::string comment = cpp::instruction_comment(s);
  if (pi.is_copy()) {
    const Operand& from = s.inputs.at(0);
    const Operand& to = s.outputs.at(0);
    const bool to_host = to.storage.host && !from.storage.host;
    if (!to_host && !(from.storage.host && !to.storage.host))
      throw Error("code generation: instruction " + std::to_string(s.index) + " copies within one device");
    std::string f = comment + "bool " + name + "(Run& c) {\n  return c." + (to_host ? "to_host(" : "to_device(") +
                    copy_ptr(from.storage) + ", " + copy_ptr(to.storage) + ", " +
                    std::to_string(std::max(from.root_bytes, from.bytes())) + ");\n}\n";
    signatures.back().functions.push_back(std::move(f));
    signatures.back().names.push_back(name);
    return;
  }
  if (pi.device == "cpu") {
    // The C++ target's function for it, on the host mirror (model_cpu.cpp), called here.
    const OpEmitFn cpu = cpp::find_op_emitter(*s.node);
    EmitContext host(s, weights, cpu_kernels, 32);
    if (!cpu) throw host.unsupported("placed on the CPU, but the C++ target has no emitter for this op");
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
                    "_cpu, on the host mirror its operands were copied to.\n";
    g += "bool " + name + "(Run& c) { return c.on_host(" + std::to_string(call) + "); }\n";
    signatures.back().functions.push_back(std::move(g));
    signatures.back().names.push_back(name);
    return;
  }

  EmitContext ctx(s, weights, headers_, 0);
  ctx.cuda = true;
  ctx.function = name;
  ctx.conv_table = &convs;
  ctx.pool_table = &pools;
  if (const std::string refusal = try_gpu(s, ctx); !refusal.empty())
    throw ctx.unsupported("placed on the GPU, but " + refusal);
  const bool view = is_view(ctx);
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
