#include "codegen/cuda/cuda_emitter.h"

#include "codegen/cpp/emit_context.h"
#include "codegen/cuda/cuda_ops.h"

namespace kiln::codegen::cuda {

void CudaEmitter::begin(int signature, const PlanSource& source, const std::vector<Operand>& inputs,
                        const std::vector<Operand>& outputs) {
  signature_ = signature;
  cpp::SignatureCode sc;
  for (const Operand& o : inputs) sc.inputs.push_back({o.value->name(), o.dtype, o.dims});
  for (const Operand& o : outputs) sc.outputs.push_back({o.value->name(), o.dtype, o.dims});
  for (const auto& a : source.plan->arenas) sc.arena_bytes = std::max(sc.arena_bytes, a.bytes);
  for (const Operand& o : outputs) cpp::ctype(o.dtype);  // an unsupported output type fails here
  signatures.push_back(std::move(sc));
}

void CudaEmitter::step(const Step& s) {
  const std::string name = cpp::function_name(signature_, s, used_names_);
  EmitContext ctx(s, weights, headers_, 0);
  ctx.cuda = true;
  ctx.function = name;
  ctx.conv_table = &convs;
  OpEmitFn fn = find_cuda_op_emitter(*s.node);
  if (!fn) throw ctx.unsupported("the CUDA target has no emitter for this op");
  fn(ctx);
  if (ctx.lines.size() == 1 && ctx.lines[0].rfind("//", 0) == 0) ++views;
  scratch_bytes = std::max(scratch_bytes, ctx.scratch_bytes);

  const std::string comment = cpp::instruction_comment(s);
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
