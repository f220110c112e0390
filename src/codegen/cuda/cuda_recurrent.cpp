// The plain RNN, GRU and LSTM (ops/core/recurrent_form.h's form): every step's input projection as one cuBLAS
// product per direction (strided-batched over the directions), then kernels/cuda/device.cuh's
// recurrent_steps, a block per sequence; both in the stream's workspace.
#include <optional>
#include <string>

#include "codegen/cpp/code_text.h"
#include "codegen/cuda/cuda_ops.h"
#include "ops/core/recurrent_form.h"

namespace kiln::codegen::cuda {

using cpp::i64;

void emit_recurrent(EmitContext& ctx) {
  std::string why;
  const std::optional<ops::RecurrentForm> f = ops::recurrent_form(ctx.node, &why);
  if (!f) throw ctx.unsupported(why);
  const int64_t H = f->hidden, GH = f->gates * H, rows = f->seq * f->batch;
  const int64_t xw_floats = f->dirs * rows * GH, state_floats = f->dirs * f->batch * (3 * H + GH);
  ctx.scratch_bytes = (xw_floats + state_floats) * static_cast<int64_t>(sizeof(float));
  const std::string key = ctx.node.input(1)->name() + "/" + ctx.node.input(2)->name();
  auto opt_in = [&](int i) { return ctx.has_input(i) ? ctx.in(i) : std::string("nullptr"); };
  auto opt_out = [&](int i) {
    return i < static_cast<int>(ctx.step.outputs.size()) && ctx.step.outputs[i].buffer >= 0 ? ctx.out(i)
                                                                                           : std::string("nullptr");
  };
  auto flag = [](bool b) { return std::string(b ? "true" : "false"); };
  ctx.line("float* xw = static_cast<float*>(c.workspace);");
  ctx.line("if (const char* e = c.blas->gemm(false, true, " + i64(rows) + ", " + i64(GH) + ", " + i64(f->input) +
           ", 1.f, " + ctx.in(0) + ", " + i64(f->input) + ", 0, " + ctx.in(1) + ", " + i64(f->input) + ", " +
           i64(GH * f->input) + ", 0.f, xw, " + i64(GH) + ", " + i64(rows * GH) + ", " + i64(f->dirs) +
           ")) return c.fail(e);");
  const std::string p = f->peepholes.empty() ? "nullptr" : ctx.weights(key + "/peepholes", f->peepholes);
  ctx.line("KILN_LAUNCH_SYNC(kiln_kernels::recurrent_steps, " + i64(f->dirs * f->batch) +
           "u, kiln_kernels::kRowThreads, c.stream)(kiln_kernels::RecurrentDims{" + i64(f->seq) + ", " + i64(f->batch) +
           ", " + i64(H) + ", " + i64(f->dirs) + ", " + flag(f->lstm) + ", " + flag(f->reverse_only) + ", " +
           flag(f->batch_major) + ", " + flag(f->linear_before_reset) + ", " + flag(f->input_forget) + ", " + flag(f->rnn) + "}, xw, " +
           ctx.in(2) + ", " + ctx.weights(key + "/w_bias", f->w_bias) + ", " + ctx.weights(key + "/r_bias", f->r_bias) +
           ", " + p + ", " + opt_in(5) + ", " + (f->lstm ? opt_in(6) : std::string("nullptr")) + ", " + opt_out(0) +
           ", " + opt_out(1) + ", " + (f->lstm ? opt_out(2) : std::string("nullptr")) + ", xw + " + i64(xw_floats) + ");");
}

}  // namespace kiln::codegen::cuda
