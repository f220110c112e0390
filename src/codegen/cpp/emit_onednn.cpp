// The instructions kiln's plan runs on oneDNN, written as oneDNN calls (kernels/onednn_conv.h)
// when the project may depend on oneDNN: the primitive and its weights are made once, at
// kiln_model_create, as a member of the model's state; the instruction's function runs it.
#include <string>
#include <vector>

#include "codegen/cpp/code_text.h"
#include "codegen/cpp/epilogue.h"
#include "codegen/cpp/op_emitters.h"
#include "codegen/cpp/window_call.h"

namespace kiln::codegen::cpp {

bool runs_on_onednn(const EmitContext& ctx) {
  return ctx.onednn && ctx.step.instruction->spec.impl.rfind("onednn", 0) == 0;
}

void emit_onednn_conv(EmitContext& ctx) {
  const ir::Node& n = ctx.node;
  const Operand& x = ctx.step.inputs.at(0);
  const Operand& y = ctx.step.outputs.at(0);
  if (x.dtype != DType::Float || x.dims.size() != 4 || y.dims.size() != 4)
    throw ctx.unsupported("only float 2-D convolutions are emitted");
  if (!n.attr_int("channels_last", 0)) throw ctx.unsupported("only channels-last convolutions are emitted");
  if (n.num_inputs() > 4 && n.has_input(4)) throw ctx.unsupported("a channel scale input is not emitted");
  const Tensor& w = ctx.constant(1);
  const int64_t N = x.dims[0], H = x.dims[1], W = x.dims[2], C = x.dims[3];
  const int64_t OH = y.dims[1], OW = y.dims[2], M = y.dims[3], G = n.attr_int("group", 1);
  if (w.dtype() != DType::Float || w.rank() != 4 || w.dim(0) != M || G < 1 || C % G || M % G || w.dim(1) != C / G)
    throw ctx.unsupported("weights do not match");
  const Window2d g = window_of(ctx, n, H, W, w.dim(2), w.dim(3));
  const bool bias = ctx.has_input(2), residual = ctx.has_input(3);
  std::string flags;  // kernels/onednn_conv.h's OnednnConvFlag
  auto flag = [&](bool on, const char* name) {
    if (on) flags += std::string(flags.empty() ? "" : " | ") + "kiln_kernels::" + name;
  };
  flag(ctx.step.instruction->spec.impl.find("winograd") != std::string::npos, "kOnednnWinograd");
  flag(residual, "kOnednnResidual");
  flag(n.attr_int("x_blocked", 0) != 0, "kOnednnXBlocked");
  flag(n.attr_int("y_blocked", 0) != 0, "kOnednnYBlocked");
  flag(residual && n.attr_int("z_blocked", 0) != 0, "kOnednnZBlocked");
  ctx.use_kernel("onednn_conv.h");
  // The weights as ONNX stores them: oneDNN packs them at create, for the CPU it runs on.
  const std::string key = "onednn:" + n.input(1)->name();
  const std::string wp =
      ctx.weights(key, std::string_view(static_cast<const char*>(w.raw()), w.nbytes()), DType::Float);
  std::string bp = "nullptr";
  if (bias) {
    const Tensor& b = ctx.constant(2);
    if (b.dtype() != DType::Float || b.numel() != M) throw ctx.unsupported("the bias does not match");
    bp = ctx.weights(key + ":bias:" + n.input(2)->name(), std::string_view(static_cast<const char*>(b.raw()), b.nbytes()),
                     DType::Float);
  }
  const Epilogue e = epilogue_of(n);
  const std::string shape = "kiln_kernels::OnednnConvShape" +
                            int_list({N, H, W, C, OH, OW, M, g.kh, g.kw, g.sh, g.sw, g.ph.begin, g.pw.begin, g.ph.end,
                                      g.pw.end, g.dh, g.dw, G});
  const std::string conv = ctx.state("kiln_kernels::OnednnConv", shape + ", " + (flags.empty() ? "0u" : flags) + ", " +
                                                                     e.act + ", " + e.a + ", " + e.b + ", " + wp + ", " + bp);
  ctx.line(conv + ".run(" + ctx.in(0) + ", " + (residual ? ctx.in(3) : "nullptr") + ", " + ctx.out(0) + ", c.team);");
}

}  // namespace kiln::codegen::cpp
