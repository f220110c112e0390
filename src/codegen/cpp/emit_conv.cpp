// Window ops on channels-last activations: kiln.FusedConv (kernels/conv2d.h, its weights packed
// here) and the kiln.Nhwc* pools (kernels/pool.h).
#include <string>
#include <vector>

#include "codegen/cpp/epilogue.h"
#include "codegen/cpp/op_emitters.h"
#include "codegen/cpp/weight_packing.h"
#include "ops/core/conv_geometry.h"

namespace kiln::codegen::cpp {

namespace {

std::string i64(int64_t v) { return std::to_string(v); }

// A 2-D window op's geometry over input extents (h, w): strides, dilations and the begin/end pads.
struct Window2d {
  int64_t kh, kw, sh, sw, dh, dw;
  ops::AxisPads ph, pw;
};

Window2d window_of(const EmitContext& ctx, int64_t h, int64_t w, int64_t kh, int64_t kw) {
  const ir::Node& n = ctx.node;
  const std::vector<int64_t> s = n.attr_ints("strides", {1, 1}), d = n.attr_ints("dilations", {1, 1});
  const std::vector<int64_t> p = n.attr_ints("pads", {0, 0, 0, 0});
  if (s.size() != 2 || d.size() != 2 || p.size() != 4) throw ctx.unsupported("only 2-D windows are emitted");
  const auto ap = ops::auto_pad_of(n);
  if (!ap) throw ctx.unsupported("undefined auto_pad");
  Window2d g{kh, kw, s[0], s[1], d[0], d[1], {}, {}};
  g.ph = ops::window_pads(*ap, h, kh, s[0], d[0], {p[0], p[2]});
  g.pw = ops::window_pads(*ap, w, kw, s[1], d[1], {p[1], p[3]});
  return g;
}

}  // namespace

void emit_conv(EmitContext& ctx) {
  const ir::Node& n = ctx.node;
  if (!n.attr_int("channels_last", 0)) throw ctx.unsupported("only channels-last convolutions are emitted");
  if (n.attr_int("x_blocked", 0) || n.attr_int("y_blocked", 0) || n.attr_int("z_blocked", 0))
    throw ctx.unsupported("blocked layouts are not emitted (compile without the blocked_layout rewrite)");
  if (ctx.has_input(4)) throw ctx.unsupported("a channel scale input is not emitted");
  const Operand& x = ctx.step.inputs.at(0);
  const Operand& y = ctx.step.outputs.at(0);
  if (x.dims.size() != 4 || x.dtype != DType::Float) throw ctx.unsupported("only 2-D float convolutions are emitted");
  const Tensor& w = ctx.constant(1);
  const int64_t N = x.dims[0], H = x.dims[1], W = x.dims[2], C = x.dims[3];
  const int64_t OH = y.dims[1], OW = y.dims[2], M = y.dims[3];
  const int64_t G = n.attr_int("group", 1), KH = w.dim(2), KW = w.dim(3);
  if (w.rank() != 4 || w.dim(0) != M || C % G || M % G || w.dim(1) != C / G) throw ctx.unsupported("weights do not match");
  const Window2d g = window_of(ctx, H, W, KH, KW);
  const float* wd = w.data<float>();
  const float* bd = ctx.is_constant(2) ? ctx.constant(2).data<float>() : nullptr;
  if (ctx.has_input(2) && !bd) throw ctx.unsupported("a bias computed at run time is not emitted");
  const bool depthwise = G == C && M == C;
  const Epilogue e = epilogue_of(n);
  // Where kiln's runtime chose a Winograd kernel for a 3x3 stride-1 conv (the plan's spec), the
  // emitted code runs F(2x2, 3x3) too, given depth enough: its 16 products have depth C, and
  // below kWinogradMinDepth a product's tile epilogue costs as much as its multiply-adds, so the
  // direct conv (whose depth is 9 C) is faster.
  constexpr int64_t kWinogradMinDepth = 64;
  const bool winograd = KH == 3 && KW == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 && G == 1 &&
                        C >= kWinogradMinDepth &&
                        ctx.step.instruction->spec.impl.find("winograd") != std::string::npos;
  if (winograd) {
    ctx.use_kernel("winograd.h");
    const std::string key = "winograd:" + n.input(1)->name() + ":" + std::to_string(ctx.panel);
    ctx.line("static const kiln_kernels::WinogradShape s{" + i64(N) + ", " + i64(H) + ", " + i64(W) + ", " + i64(C) + ", " +
             i64(OH) + ", " + i64(OW) + ", " + i64(M) + ", " + i64(g.ph.begin) + ", " + i64(g.pw.begin) + "};");
    ctx.line("kiln_kernels::winograd_f23_nhwc<" + e.act + ", " + std::to_string(ctx.panel) + ">(s, " + ctx.in(0) + ", " +
             ctx.weights(key, pack_winograd_f23(wd, M, C, ctx.panel)) + ", " +
             (bd ? ctx.weights(key + ":bias", std::vector<float>(bd, bd + M)) : "nullptr") + ", " +
             (ctx.has_input(3) ? ctx.in(3) : "nullptr") + ", " + ctx.out(0) + ", " + e.a + ", " + e.b + ", c.team);");
    return;
  }
  const std::vector<float> packed =
      depthwise ? pack_depthwise(wd, C, KH, KW) : pack_conv2d(wd, M, C, G, KH, KW, ctx.panel);
  const std::vector<float> bias = !bd ? std::vector<float>{} : depthwise ? std::vector<float>(bd, bd + M)
                                                                         : pack_conv2d_bias(bd, M, G, ctx.panel);
  const std::string kernel = depthwise ? "depthwise_nhwc" : "conv2d_nhwc";
  const std::string panel = depthwise ? "" : ", " + std::to_string(ctx.panel);
  ctx.use_kernel("conv2d.h");
  const std::string key = "conv:" + n.input(1)->name() + ":" + std::to_string(ctx.panel);
  ctx.line("static const kiln_kernels::Conv2dShape s{" + i64(N) + ", " + i64(H) + ", " + i64(W) + ", " + i64(C) + ", " +
           i64(OH) + ", " + i64(OW) + ", " + i64(M) + ", " + i64(KH) + ", " + i64(KW) + ", " + i64(g.sh) + ", " +
           i64(g.sw) + ", " + i64(g.ph.begin) + ", " + i64(g.pw.begin) + ", " + i64(g.dh) + ", " + i64(g.dw) + ", " +
           i64(G) + "};");
  ctx.line("kiln_kernels::" + kernel + "<" + e.act + panel + ">(s, " + ctx.in(0) + ", " + ctx.weights(key, packed) + ", " +
           (bd ? ctx.weights(key + ":bias", bias) : "nullptr") + ", " + (ctx.has_input(3) ? ctx.in(3) : "nullptr") +
           ", " + ctx.out(0) + ", " + e.a + ", " + e.b + ", c.team);");
}

void emit_pool(EmitContext& ctx) {
  const ir::Node& n = ctx.node;
  const Operand& x = ctx.step.inputs.at(0);
  const Operand& y = ctx.step.outputs.at(0);
  if (x.dims.size() != 4 || x.dtype != DType::Float) throw ctx.unsupported("only 2-D float pooling is emitted");
  if (ctx.step.outputs.size() > 1 && ctx.step.outputs[1].buffer >= 0) throw ctx.unsupported("max pooling indices are not emitted");
  const std::vector<int64_t> k = n.attr_ints("kernel_shape");
  if (k.size() != 2) throw ctx.unsupported("only 2-D pooling is emitted");
  const Window2d g = window_of(ctx, x.dims[1], x.dims[2], k[0], k[1]);
  const bool is_max = n.op_type() == "NhwcMaxPool";
  ctx.use_kernel("pool.h");
  ctx.line("static const kiln_kernels::Pool2dShape s{" + i64(x.dims[0]) + ", " + i64(x.dims[1]) + ", " + i64(x.dims[2]) +
           ", " + i64(x.dims[3]) + ", " + i64(y.dims[1]) + ", " + i64(y.dims[2]) + ", " + i64(g.kh) + ", " + i64(g.kw) +
           ", " + i64(g.sh) + ", " + i64(g.sw) + ", " + i64(g.ph.begin) + ", " + i64(g.pw.begin) + ", " +
           i64(g.ph.end) + ", " + i64(g.pw.end) + ", " + i64(g.dh) + ", " + i64(g.dw) + "};");
  ctx.line(std::string("kiln_kernels::pool2d_nhwc(s, ") + (is_max ? "true" : "false") + ", " +
           (n.attr_int("count_include_pad", 0) ? "true" : "false") + ", " + ctx.in(0) + ", " + ctx.out(0) + ", c.team);");
}

void emit_global_pool(EmitContext& ctx) {
  const Operand& x = ctx.step.inputs.at(0);
  if (x.dtype != DType::Float || x.dims.size() < 3) throw ctx.unsupported("only float NHWC global pooling is emitted");
  int64_t P = 1;
  for (size_t i = 1; i + 1 < x.dims.size(); ++i) P *= x.dims[i];
  ctx.use_kernel("pool.h");
  ctx.line("kiln_kernels::global_pool_nhwc(" + i64(x.dims[0]) + ", " + i64(P) + ", " + i64(x.dims.back()) + ", " +
           (ctx.node.op_type() == "NhwcGlobalMaxPool" ? "true" : "false") + ", " + ctx.in(0) + ", " + ctx.out(0) + ");");
}

}  // namespace kiln::codegen::cpp
