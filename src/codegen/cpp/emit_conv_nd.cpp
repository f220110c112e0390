// Window ops on channels-first activations of one, two or three spatial dims (kernels/conv_nd.h,
// and kernels/onednn_conv.h's channels-first form where the plan runs the conv on oneDNN): the
// 1-D and 3-D convs and pools kiln's layout assignment leaves channels-first, and any conv or
// pool a plan made without the channels_last rewrite keeps so. ConvTranspose in either layout
// (kernels/conv_nd.h's conv_transpose_nd).
#include <string>
#include <vector>

#include "codegen/cpp/code_text.h"
#include "codegen/cpp/epilogue.h"
#include "codegen/cpp/op_emitters.h"
#include "ops/core/conv_geometry.h"

namespace kiln::codegen::cpp {

namespace {

// One window op's geometry over the spatial dims of x [N][C][spatial...] (1 to 3 of them),
// each attribute padded at the front to three dims (a missing dim: extent 1, kernel 1, stride 1).
struct NdWindow {
  int64_t rank = 0;
  std::vector<int64_t> in, out, k, s, d, p0, p1;  // 3 each
};

NdWindow nd_window(const EmitContext& ctx, const ir::Node& n, const std::vector<int64_t>& x,
                   const std::vector<int64_t>& y, const std::vector<int64_t>& kernel) {
  const int64_t rank = static_cast<int64_t>(x.size()) - 2;
  if (rank < 1 || rank > 3 || y.size() != x.size() || static_cast<int64_t>(kernel.size()) != rank)
    throw ctx.unsupported("only windows over 1 to 3 spatial dims are emitted");
  const std::vector<int64_t> s = n.attr_ints("strides", std::vector<int64_t>(rank, 1));
  const std::vector<int64_t> d = n.attr_ints("dilations", std::vector<int64_t>(rank, 1));
  const std::vector<int64_t> p = n.attr_ints("pads", std::vector<int64_t>(2 * rank, 0));
  if (static_cast<int64_t>(s.size()) != rank || static_cast<int64_t>(d.size()) != rank ||
      static_cast<int64_t>(p.size()) != 2 * rank)
    throw ctx.unsupported("strides, dilations or pads do not match the window's dims");
  const auto ap = ops::auto_pad_of(n);
  if (!ap) throw ctx.unsupported("undefined auto_pad");
  NdWindow w;
  w.rank = rank;
  const int64_t missing = 3 - rank;
  for (int64_t i = 0; i < 3; ++i) {
    if (i < missing) {
      for (auto* v : {&w.in, &w.out, &w.k, &w.s, &w.d}) v->push_back(1);
      w.p0.push_back(0);
      w.p1.push_back(0);
      continue;
    }
    const size_t a = static_cast<size_t>(i - missing);
    const ops::AxisPads pads = ops::window_pads(*ap, x[a + 2], kernel[a], s[a], d[a], {p[a], p[a + rank]});
    w.in.push_back(x[a + 2]);
    w.out.push_back(y[a + 2]);
    w.k.push_back(kernel[a]);
    w.s.push_back(s[a]);
    w.d.push_back(d[a]);
    w.p0.push_back(pads.begin);
    w.p1.push_back(pads.end);
  }
  return w;
}

// A constant weight or bias tensor as ONNX stores it, in weights.bin.
std::string raw_weights(EmitContext& ctx, const std::string& key, const Tensor& t) {
  return ctx.weights(key, std::string_view(static_cast<const char*>(t.raw()), t.nbytes()), DType::Float);
}

// The last `rank` entries of a 3-entry list, as a braced list.
std::string last(const std::vector<int64_t>& v, int64_t rank) {
  return int_list(std::vector<int64_t>(v.end() - rank, v.end()));
}

}  // namespace

void emit_conv_nd(EmitContext& ctx) {
  const ir::Node& n = ctx.node;
  const Operand& x = ctx.step.inputs.at(0);
  const Operand& y = ctx.step.outputs.at(0);
  if (x.dtype != DType::Float) throw ctx.unsupported("only float convolutions are emitted");
  if (n.attr_int("channels_last", 0)) throw ctx.unsupported("only 2-D channels-last convolutions are emitted");
  if (n.num_inputs() > 4 && n.has_input(4)) throw ctx.unsupported("a channel scale input is not emitted");
  if (!n.has_input(1) || !n.input(1)->is_constant()) throw ctx.unsupported("the weights must be a constant");
  const Tensor& w = n.input(1)->constant();
  const int64_t N = x.dims.size() > 2 ? x.dims[0] : 0, C = x.dims.size() > 2 ? x.dims[1] : 0;
  const int64_t M = y.dims.size() > 2 ? y.dims[1] : 0, G = n.attr_int("group", 1);
  if (w.dtype() != DType::Float || w.rank() != static_cast<int>(x.dims.size()) || w.dim(0) != M || G < 1 || C % G ||
      M % G || w.dim(1) != C / G)
    throw ctx.unsupported("weights do not match");
  const std::vector<int64_t> wd = w.dims();
  const NdWindow g = nd_window(ctx, n, x.dims, y.dims, std::vector<int64_t>(wd.begin() + 2, wd.end()));
  const bool bias = n.num_inputs() > 2 && n.has_input(2), residual = n.num_inputs() > 3 && n.has_input(3);
  if (bias && (!n.input(2)->is_constant() || n.input(2)->constant().numel() != M))
    throw ctx.unsupported("the bias must be a constant of one value per filter");
  const Epilogue e = epilogue_of(n);
  const std::string key = "conv_nd:" + n.input(1)->name();
  const std::string wp = raw_weights(ctx, key, w);
  const std::string bp = bias ? raw_weights(ctx, key + ":bias:" + n.input(2)->name(), n.input(2)->constant()) : "nullptr";
  const std::string z = residual ? ctx.in(3) : "nullptr";
  if (runs_on_onednn(ctx)) {
    ctx.use_kernel("onednn_conv.h");
    const std::string shape = "kiln_kernels::OnednnConvNdShape{" + i64(N) + ", " + i64(C) + ", " + i64(M) + ", " + i64(G) +
                              ", " + i64(g.rank) + ", " + last(g.in, g.rank) + ", " + last(g.out, g.rank) + ", " +
                              last(g.k, g.rank) + ", " + last(g.s, g.rank) + ", " + last(g.d, g.rank) + ", " +
                              last(g.p0, g.rank) + ", " + last(g.p1, g.rank) + "}";
    const std::string conv = ctx.state("kiln_kernels::OnednnConv", shape + ", " +
                                                                       (residual ? "kiln_kernels::kOnednnResidual" : "0u") +
                                                                       ", " + e.act + ", " + e.a + ", " + e.b + ", " + wp + ", " + bp);
    ctx.line(conv + ".run(" + ctx.in(0) + ", " + z + ", " + ctx.out(0) + ", c.team);");
    return;
  }
  ctx.use_kernel("conv_nd.h");
  ctx.line("static const kiln_kernels::ConvNdShape s" +
           int_list({N, C, M, G, g.in[0], g.in[1], g.in[2], g.out[0], g.out[1], g.out[2], g.k[0], g.k[1], g.k[2], g.s[0],
                     g.s[1], g.s[2], g.d[0], g.d[1], g.d[2], g.p0[0], g.p0[1], g.p0[2]}) +
           ";");
  ctx.line("kiln_kernels::conv_nd_nchw<" + e.act + ">(s, " + ctx.in(0) + ", " + wp + ", " + bp + ", " + z + ", " +
           ctx.out(0) + ", " + e.a + ", " + e.b + ", c.team);");
}

void emit_conv_transpose(EmitContext& ctx) {
  const ir::Node& n = ctx.node;
  const Operand& x = ctx.step.inputs.at(0);
  const Operand& y = ctx.step.outputs.at(0);
  if (x.dtype != DType::Float) throw ctx.unsupported("only float transposed convolutions are emitted");
  const bool nhwc = n.domain() == "kiln";  // kiln.NhwcConvTranspose: [N, H, W, C]
  const int64_t rank = static_cast<int64_t>(x.dims.size()) - 2;
  if (rank < 1 || rank > 3 || y.dims.size() != x.dims.size() || (nhwc && rank != 2))
    throw ctx.unsupported("only transposed convolutions over 1 to 3 spatial dims are emitted");
  if (!n.has_input(1) || !n.input(1)->is_constant()) throw ctx.unsupported("the weights must be a constant");
  const Tensor& w = n.input(1)->constant();
  const int64_t N = x.dims[0], C = nhwc ? x.dims[3] : x.dims[1], M = nhwc ? y.dims[3] : y.dims[1];
  const int64_t G = n.attr_int("group", 1);
  if (w.dtype() != DType::Float || w.rank() != rank + 2 || w.dim(0) != C || G < 1 || C % G || M % G || w.dim(1) != M / G)
    throw ctx.unsupported("weights do not match");
  // The spatial extents, in order.
  std::vector<int64_t> in, out;
  for (int64_t i = 0; i < rank; ++i) {
    in.push_back(nhwc ? x.dims[1 + i] : x.dims[2 + i]);
    out.push_back(nhwc ? y.dims[1 + i] : y.dims[2 + i]);
  }
  const std::vector<int64_t> s = n.attr_ints("strides", std::vector<int64_t>(rank, 1));
  const std::vector<int64_t> d = n.attr_ints("dilations", std::vector<int64_t>(rank, 1));
  const std::vector<int64_t> p = n.attr_ints("pads", std::vector<int64_t>(2 * rank, 0));
  const std::vector<int64_t> opad = n.attr_ints("output_padding", std::vector<int64_t>(rank, 0));
  if (static_cast<int64_t>(s.size()) != rank || static_cast<int64_t>(d.size()) != rank ||
      static_cast<int64_t>(p.size()) != 2 * rank || static_cast<int64_t>(opad.size()) != rank)
    throw ctx.unsupported("strides, dilations, pads or output_padding do not match the window's dims");
  const auto ap = ops::auto_pad_of(n);
  if (!ap) throw ctx.unsupported("undefined auto_pad");
  const bool target = !n.attr_ints("output_shape").empty() || ops::is_same_pad(*ap);
  // Per dim, padded at the front to three (a missing dim: extent 1, kernel 1, stride 1, no pad):
  // extents, kernel, stride, dilation, pad at the start of the output.
  std::vector<int64_t> i3, o3, k3, s3, d3, p3;
  for (int64_t i = 0; i < 3; ++i) {
    const int64_t a = i - (3 - rank);
    if (a < 0) {
      for (auto* v : {&i3, &o3, &k3, &s3, &d3}) v->push_back(1);
      p3.push_back(0);
      continue;
    }
    const int64_t k = w.dim(static_cast<int>(2 + a));
    int64_t begin = *ap == ops::AutoPad::Valid ? 0 : p[a];
    if (target) begin = ops::conv_transpose_pads(*ap, in[a], out[a], k, s[a], d[a], opad[a]).begin;
    i3.push_back(in[a]);
    o3.push_back(out[a]);
    k3.push_back(k);
    s3.push_back(s[a]);
    d3.push_back(d[a]);
    p3.push_back(begin);
  }
  const bool bias = n.num_inputs() > 2 && n.has_input(2);
  if (bias && (!n.input(2)->is_constant() || n.input(2)->constant().numel() != M))
    throw ctx.unsupported("the bias must be a constant of one value per filter");
  const std::string key = "conv_transpose:" + n.input(1)->name();
  const std::string wp = raw_weights(ctx, key, w);
  const std::string bp = bias ? raw_weights(ctx, key + ":bias:" + n.input(2)->name(), n.input(2)->constant()) : "nullptr";
  const Epilogue e = epilogue_of(n);
  ctx.use_kernel("conv_nd.h");
  std::string dims;
  for (const auto* v : {&i3, &o3, &k3, &s3, &d3, &p3})
    for (int64_t extent : *v) dims += ", " + i64(extent);
  ctx.line("static const kiln_kernels::ConvTransposeShape s{" + i64(N) + ", " + i64(C) + ", " + i64(M) + ", " + i64(G) + dims +
           ", " + (nhwc ? "true" : "false") + "};");
  ctx.line("kiln_kernels::conv_transpose_nd<" + e.act + ">(s, " + ctx.in(0) + ", " + wp + ", " + bp + ", " + ctx.out(0) +
           ", " + e.a + ", " + e.b + ", c.team);");
}

void emit_pool_nd(EmitContext& ctx) {
  const ir::Node& n = ctx.node;
  const Operand& x = ctx.step.inputs.at(0);
  const Operand& y = ctx.step.outputs.at(0);
  if (x.dtype != DType::Float) throw ctx.unsupported("only float pooling is emitted");
  if (ctx.step.outputs.size() > 1 && ctx.step.outputs[1].buffer >= 0) throw ctx.unsupported("max pooling indices are not emitted");
  const NdWindow g = nd_window(ctx, n, x.dims, y.dims, n.attr_ints("kernel_shape"));
  ctx.use_kernel("conv_nd.h");
  ctx.line("static const kiln_kernels::PoolNdShape s" +
           int_list({x.dims[0], x.dims[1], g.in[0], g.in[1], g.in[2], g.out[0], g.out[1], g.out[2], g.k[0], g.k[1], g.k[2],
                     g.s[0], g.s[1], g.s[2], g.d[0], g.d[1], g.d[2], g.p0[0], g.p0[1], g.p0[2], g.p1[0], g.p1[1], g.p1[2]}) +
           ";");
  const bool is_max = n.op_type() == "MaxPool";
  ctx.line(std::string("kiln_kernels::pool_nd_nchw(s, ") + (is_max ? "true" : "false") + ", " +
           (n.attr_int("count_include_pad", 0) ? "true" : "false") + ", " + ctx.in(0) + ", " + ctx.out(0) + ", c.team);");
}

void emit_global_pool_nd(EmitContext& ctx) {
  const Operand& x = ctx.step.inputs.at(0);
  if (x.dtype != DType::Float || x.dims.size() < 3) throw ctx.unsupported("only float global pooling over spatial dims is emitted");
  int64_t plane = 1;
  for (size_t i = 2; i < x.dims.size(); ++i) plane *= x.dims[i];
  ctx.use_kernel("conv_nd.h");
  ctx.line("kiln_kernels::global_pool_nchw(" + i64(x.dims[0] * x.dims[1]) + ", " + i64(plane) + ", " +
           (ctx.node.op_type() == "GlobalMaxPool" ? "true" : "false") + ", " + ctx.in(0) + ", " + ctx.out(0) + ", c.team);");
}

}  // namespace kiln::codegen::cpp
