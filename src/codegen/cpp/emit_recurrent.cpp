// The plain RNN, GRU and LSTM (kernels/recurrent.h) in the form kiln's fast recurrent kernels take
// (ops/core/recurrent_form.h): W and R packed in gemv column blocks, the biases split per matrix.
#include <optional>
#include <string>
#include <vector>

#include "codegen/cpp/code_text.h"
#include "codegen/cpp/op_emitters.h"
#include "kernels/recurrent.h"
#include "ops/core/recurrent_form.h"

namespace kiln::codegen::cpp {

void emit_recurrent(EmitContext& ctx) {
  std::string why;
  const std::optional<ops::RecurrentForm> f = ops::recurrent_form(ctx.node, &why);
  if (!f) throw ctx.unsupported(why);
  const std::string key = ctx.node.input(1)->name() + "/" + ctx.node.input(2)->name();
  auto opt_in = [&](int i) { return ctx.has_input(i) ? ctx.in(i) : std::string("nullptr"); };
  auto opt_out = [&](int i) {
    return i < static_cast<int>(ctx.step.outputs.size()) && ctx.step.outputs[i].buffer >= 0 ? ctx.out(i)
                                                                                           : std::string("nullptr");
  };
  kiln_kernels::RecurrentShape g;
  g.lstm = f->lstm;
  g.seq = f->seq;
  g.batch = f->batch;
  g.input = f->input;
  g.hidden = f->hidden;
  g.dirs = f->dirs;
  g.reverse_only = f->reverse_only;
  g.batch_major = f->batch_major;
  g.linear_before_reset = f->linear_before_reset;
  g.input_forget = f->input_forget;
  g.rnn = f->rnn;
  std::vector<float> wp(static_cast<size_t>(g.dirs * g.w_packed())), rp(static_cast<size_t>(g.dirs * g.r_packed()));
  g.pack(ctx.constant(1).data<float>(), ctx.constant(2).data<float>(), wp.data(), rp.data());
  ctx.use_kernel("recurrent.h");
  auto flag = [](bool b) { return std::string(b ? "true" : "false"); };
  ctx.line("kiln_kernels::RecurrentShape shape;");
  ctx.line("shape.lstm = " + flag(f->lstm) + ";");
  ctx.line("shape.seq = " + i64(f->seq) + ";");
  ctx.line("shape.batch = " + i64(f->batch) + ";");
  ctx.line("shape.input = " + i64(f->input) + ";");
  ctx.line("shape.hidden = " + i64(f->hidden) + ";");
  ctx.line("shape.dirs = " + i64(f->dirs) + ";");
  ctx.line("shape.reverse_only = " + flag(f->reverse_only) + ";");
  ctx.line("shape.batch_major = " + flag(f->batch_major) + ";");
  ctx.line("shape.linear_before_reset = " + flag(f->linear_before_reset) + ";");
  ctx.line("shape.input_forget = " + flag(f->input_forget) + ";");
  ctx.line("shape.rnn = " + flag(f->rnn) + ";");
  const std::string p = f->peepholes.empty() ? "nullptr" : ctx.weights(key + "/peepholes", f->peepholes);
  const std::string packed = key + (g.linear_before_reset ? "/lbr" : "");
  ctx.line("kiln_kernels::recurrent(shape, " + ctx.in(0) + ", " + ctx.weights(packed + "/w", wp) + ", " +
           ctx.weights(packed + "/r", rp) + ", " +
           ctx.weights(key + "/w_bias", f->w_bias) + ", " + ctx.weights(key + "/r_bias", f->r_bias) + ", " + p + ", " +
           opt_in(5) + ", " + (f->lstm ? opt_in(6) : std::string("nullptr")) + ", " + opt_out(0) + ", " + opt_out(1) +
           ", " + (f->lstm ? opt_out(2) : std::string("nullptr")) + ");");
}

}  // namespace kiln::codegen::cpp
