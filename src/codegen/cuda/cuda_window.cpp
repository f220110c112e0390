// Window ops on channels-last activations. A convolution is a kiln_cuda::Conv of the model
// (kernels/cuda/conv.cuh: cuDNN, or im2col and cuBLAS), set up at kiln_model_create from the
// shape registered here, its weights packed [M][KH][KW][Cg]; then bias_act applies bias,
// residual and activation. A depthwise conv is one kernel with all of it fused. A pool is a
// kiln_cuda::Pool of the model (kernels/cuda/pool.cuh: cuDNN, or a kernel of device.cuh).
#include <string>
#include <vector>

#include "codegen/cpp/code_text.h"
#include "codegen/cpp/epilogue.h"
#include "codegen/cpp/window_call.h"
#include "codegen/cuda/cuda_ops.h"

namespace kiln::codegen::cuda {

using cpp::i64;

namespace {

std::string launch(const std::string& kernel, const std::string& threads) {
  return "KILN_LAUNCH(" + kernel + ", kiln_kernels::blocks_for(" + threads + "), kiln_kernels::kThreads, c.stream)";
}

}  // namespace

void emit_conv(EmitContext& ctx) {
  const ir::Node& n = ctx.node;
  const Operand& x = ctx.step.inputs.at(0);
  const Operand& y = ctx.step.outputs.at(0);
  if (x.dtype != DType::Float || x.dims.size() != 4) throw ctx.unsupported("only float 2-D convolutions are emitted");
  if (!n.attr_int("channels_last", 0)) throw ctx.unsupported("only channels-last convolutions are emitted");
  if (n.attr_int("x_blocked", 0) || n.attr_int("y_blocked", 0) || n.attr_int("z_blocked", 0))
    throw ctx.unsupported("blocked layouts are not emitted");
  if (n.num_inputs() > 4 && n.has_input(4)) throw ctx.unsupported("a channel scale input is not emitted");
  if (!ctx.is_constant(1)) throw ctx.unsupported("the weights must be a constant");
  const Tensor& w = ctx.constant(1);
  const int64_t N = x.dims[0], H = x.dims[1], W = x.dims[2], C = x.dims[3];
  const int64_t OH = y.dims[1], OW = y.dims[2], M = y.dims[3];
  const int64_t G = n.attr_int("group", 1);
  if (w.dtype() != DType::Float || w.rank() != 4 || w.dim(0) != M || C % G || M % G || w.dim(1) != C / G)
    throw ctx.unsupported("weights do not match");
  const int64_t KH = w.dim(2), KW = w.dim(3), Cg = C / G;
  const cpp::Window2d g = cpp::window_of(ctx, n, H, W, KH, KW);
  const bool has_bias = ctx.has_input(2);
  if (has_bias && !ctx.is_constant(2)) throw ctx.unsupported("a bias computed at run time is not emitted");
  const float* wd = w.data<float>();
  const std::string bias = has_bias ? ctx.weights("conv-bias:" + n.input(2)->name(),
                                                  std::vector<float>(ctx.constant(2).data<float>(),
                                                                     ctx.constant(2).data<float>() + M))
                                    : "nullptr";
  const cpp::Epilogue e = cpp::epilogue_of(n);
  const std::string shape = cpp::int_list({N, H, W, C, OH, OW, M, KH, KW, g.sh, g.sw, g.ph.begin, g.pw.begin, g.dh, g.dw, G});
  const bool residual = ctx.has_input(3);
  const bool z_in_y = residual && ctx.step.inputs[3].storage == y.storage;  // the output overwrites the residual
  if (G == C && M == C) {
    std::vector<float> dw(static_cast<size_t>(KH * KW * C));
    for (int64_t c = 0; c < C; ++c)
      for (int64_t k = 0; k < KH * KW; ++k) dw[static_cast<size_t>(k * C + c)] = wd[c * KH * KW + k];
    ctx.line("const kiln_kernels::ConvShape s" + shape + ";");
    ctx.line(launch("kiln_kernels::depthwise_nhwc<" + e.act + ">", i64(y.numel())) + "(s, " + ctx.in(0) + ", " +
             ctx.weights("conv-dw:" + n.input(1)->name(), dw) + ", " + bias + ", " + (residual ? ctx.in(3) : "nullptr") +
             ", " + ctx.out(0) + ", " + e.a + ", " + e.b + ");");
    return;
  }
  // cuDNN's NHWC filter layout [M][KH][KW][Cg] (also what the im2col product reads, transposed).
  std::vector<float> packed(static_cast<size_t>(M * KH * KW * Cg));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < Cg; ++c)
      for (int64_t kh = 0; kh < KH; ++kh)
        for (int64_t kw = 0; kw < KW; ++kw)
          packed[static_cast<size_t>(((m * KH + kh) * KW + kw) * Cg + c)] = wd[((m * Cg + c) * KH + kh) * KW + kw];
  const std::string wp = ctx.weights("conv-nhwc:" + n.input(1)->name(), packed);
  if (!ctx.conv_table) throw ctx.unsupported("no convolution table to register in");
  const std::string conv = "c.convs[" + i64(static_cast<int64_t>(ctx.conv_table->size())) + "]";
  ctx.conv_table->push_back(shape);
  // The conv and its epilogue (kernels/cuda/conv.cuh): a residual in y already is added in place.
  ctx.line("if (const char* e = " + conv + ".run<" + e.act + ">(*c.dnn, *c.blas, " + ctx.in(0) + ", " + wp + ", " + bias +
           ", " + (residual ? (z_in_y ? ctx.out(0) : ctx.in(3)) : "nullptr") + ", " + ctx.out(0) + ", c.workspace, " +
           e.a + ", " + e.b + ")) return c.fail(e);");
}

void emit_pool(EmitContext& ctx) {
  const ir::Node& n = ctx.node;
  const Operand& x = ctx.step.inputs.at(0);
  const Operand& y = ctx.step.outputs.at(0);
  if (x.dtype != DType::Float || x.dims.size() != 4) throw ctx.unsupported("only float 2-D pooling is emitted");
  if (ctx.step.outputs.size() > 1 && ctx.step.outputs[1].buffer >= 0) throw ctx.unsupported("max pooling indices are not emitted");
  const std::vector<int64_t> k = n.attr_ints("kernel_shape");
  if (k.size() != 2) throw ctx.unsupported("only 2-D pooling is emitted");
  const cpp::Window2d g = cpp::window_of(ctx, n, x.dims[1], x.dims[2], k[0], k[1]);
  if (!ctx.pool_table) throw ctx.unsupported("no pool table to register in");
  const std::string pool = "c.pools[" + i64(static_cast<int64_t>(ctx.pool_table->size())) + "]";
  ctx.pool_table->push_back("{" +
                            cpp::int_list({x.dims[0], x.dims[1], x.dims[2], x.dims[3], y.dims[1], y.dims[2], g.kh, g.kw,
                                           g.sh, g.sw, g.ph.begin, g.pw.begin, g.ph.end, g.pw.end, g.dh, g.dw}) +
                            ", " + (n.op_type() == "NhwcMaxPool" ? "true" : "false") + ", " +
                            (n.attr_int("count_include_pad", 0) ? "true" : "false") + "}");
  ctx.line("if (const char* e = " + pool + ".run(*c.dnn, " + ctx.in(0) + ", " + ctx.out(0) + ", c.stream)) return c.fail(e);");
}

void emit_global_pool(EmitContext& ctx) {
  const Operand& x = ctx.step.inputs.at(0);
  if (x.dtype != DType::Float || x.dims.size() < 3) throw ctx.unsupported("only float NHWC global pooling is emitted");
  int64_t P = 1;
  for (size_t i = 1; i + 1 < x.dims.size(); ++i) P *= x.dims[i];
  const int64_t N = x.dims[0], C = x.dims.back();
  ctx.line(launch("kiln_kernels::global_pool_nhwc", i64(N * C)) + "(" + i64(N) + ", " + i64(P) + ", " + i64(C) + ", " +
           (ctx.node.op_type() == "NhwcGlobalMaxPool" ? "true" : "false") + ", " + ctx.in(0) + ", " + ctx.out(0) + ");");
}

}  // namespace kiln::codegen::cuda
