// Window ops on channels-last activations: kiln.FusedConv (kernels/conv2d.h, winograd.h, its
// weights packed here) and the kiln.Nhwc* pools (kernels/pool.h).
#include <string>
#include <vector>

#include "codegen/cpp/epilogue.h"
#include "codegen/cpp/code_text.h"
#include "codegen/cpp/op_emitters.h"
#include "codegen/cpp/emit_pointwise.h"
#include "codegen/cpp/weight_packing.h"
#include "codegen/cpp/window_call.h"
#include "kernels/depthwise_rows.h"
#include "kernels/stem_rows.h"
#include "ops/core/conv_geometry.h"

namespace kiln::codegen::cpp {

Window2d window_of(const EmitContext& ctx, const ir::Node& n, int64_t h, int64_t w, int64_t kh, int64_t kw) {
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

namespace {

WindowCall pool_call(EmitContext& ctx, const ir::Node& n, const std::vector<int64_t>& x, const std::vector<int64_t>& y) {
  const std::vector<int64_t> k = n.attr_ints("kernel_shape");
  if (k.size() != 2) throw ctx.unsupported("only 2-D pooling is emitted");
  const Window2d g = window_of(ctx, n, x[1], x[2], k[0], k[1]);
  ctx.use_kernel("pool.h");
  WindowCall c;
  c.shape_type = "kiln_kernels::Pool2dShape";
  c.shape_init = int_list({x[0], x[1], x[2], x[3], y[1], y[2], g.kh, g.kw, g.sh, g.sw, g.ph.begin, g.pw.begin, g.ph.end,
                       g.pw.end, g.dh, g.dw});
  c.kh = g.kh;
  c.sh = g.sh;
  c.ph = g.ph.begin;
  c.dh = g.dh;
  const std::string flags = std::string(n.op_type() == "NhwcMaxPool" ? "true" : "false") + ", " +
                            (n.attr_int("count_include_pad", 0) ? "true" : "false");
  c.call = [flags](const std::string& s, const std::string& x, const std::string&, const std::string& y,
                   const std::string& team) {
    return "kiln_kernels::pool2d_nhwc(" + s + ", " + flags + ", " + x + ", " + y + ", " + team + ");";
  };
  return c;
}

// The call of a row kernel (depthwise_rows.h, stem_rows.h): fn(s, x, weights and bias `args`,
// y, the epilogue's parameters, team); these take no residual.
decltype(WindowCall::call) row_kernel_call(const std::string& fn, const std::string& args, const Epilogue& e) {
  return [fn, args, e](const std::string& s, const std::string& x, const std::string&, const std::string& y,
                       const std::string& team) {
    return fn + "(" + s + ", " + x + ", " + args + ", " + y + ", " + e.a + ", " + e.b + ", " + team + ");";
  };
}

}  // namespace

WindowCall window_call(EmitContext& ctx, const ir::Node& n, const std::vector<int64_t>& x_dims,
                       const std::vector<int64_t>& y_dims, bool winograd_ok, bool planar) {
  if (x_dims.size() != 4 || y_dims.size() != 4) throw ctx.unsupported("only 2-D windows are emitted");
  if (n.op_type() == "NhwcMaxPool" || n.op_type() == "NhwcAveragePool") return pool_call(ctx, n, x_dims, y_dims);
  if (!n.attr_int("channels_last", 0)) throw ctx.unsupported("only channels-last convolutions are emitted");
  if (n.attr_int("x_blocked", 0) || n.attr_int("y_blocked", 0) || n.attr_int("z_blocked", 0))
    throw ctx.unsupported("blocked layouts are not emitted (compile without the blocked_layout rewrite)");
  if (n.num_inputs() > 4 && n.has_input(4)) throw ctx.unsupported("a channel scale input is not emitted");
  if (!n.has_input(1) || !n.input(1)->is_constant()) throw ctx.unsupported("the weights must be a constant");
  const Tensor& w = n.input(1)->constant();
  const int64_t N = x_dims[0], H = x_dims[1], W = x_dims[2], C = x_dims[3];
  const int64_t OH = y_dims[1], OW = y_dims[2], M = y_dims[3];
  const int64_t G = n.attr_int("group", 1);
  if (w.dtype() != DType::Float || w.rank() != 4 || w.dim(0) != M || C % G || M % G || w.dim(1) != C / G)
    throw ctx.unsupported("weights do not match");
  const int64_t KH = w.dim(2), KW = w.dim(3);
  const Window2d g = window_of(ctx, n, H, W, KH, KW);
  const float* wd = w.data<float>();
  const bool has_bias = n.num_inputs() > 2 && n.has_input(2);
  if (has_bias && !n.input(2)->is_constant()) throw ctx.unsupported("a bias computed at run time is not emitted");
  const float* bd = has_bias ? n.input(2)->constant().data<float>() : nullptr;
  const bool depthwise = G == C && M == C;
  const Epilogue e = epilogue_of(n);
  // The activation after a row kernel where it does not apply it in registers.
  const std::string late = "if constexpr (!kiln_kernels::in_registers(" + e.act + ")) kiln_kernels::activate_all<" + e.act +
                           ">(";
  WindowCall c;
  c.kh = KH;
  c.sh = g.sh;
  c.ph = g.ph.begin;
  c.dh = g.dh;
  const std::string epilogue = ", " + e.a + ", " + e.b + ", ";
  auto make_call = [epilogue](std::string prefix, std::string args) {
    return [prefix, args, epilogue](const std::string& s, const std::string& x, const std::string& z,
                                    const std::string& y, const std::string& team) {
      return prefix + "(" + s + ", " + x + ", " + args + z + ", " + y + epilogue + team + ");";
    };
  };
  const std::string panel = std::to_string(ctx.panel);
  // F(2x2, 3x3) where kiln's runtime chose a Winograd kernel for a 3x3 stride-1 conv (the plan's
  // spec), given depth enough: its 16 products have depth C, and below kWinogradMinDepth a
  // product's tile epilogue costs as much as its multiply-adds, so the direct conv (whose depth
  // is 9 C) is faster.
  constexpr int64_t kWinogradMinDepth = 64;
  if (winograd_ok && KH == 3 && KW == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 && G == 1 &&
      C >= kWinogradMinDepth) {
    ctx.use_kernel("winograd.h");
    const std::string key = "winograd:" + n.input(1)->name() + ":" + panel;
    c.winograd = true;
    c.shape_type = "kiln_kernels::WinogradShape";
    c.shape_init = int_list({N, H, W, C, OH, OW, M, g.ph.begin, g.pw.begin});
    c.call = make_call("kiln_kernels::winograd_f23_nhwc<" + e.act + ", " + panel + ">",
                       ctx.weights(key, pack_winograd_f23(wd, M, C, ctx.panel)) + ", " +
                           (bd ? ctx.weights(key + ":bias", std::vector<float>(bd, bd + M)) : "nullptr") + ", ");
    return c;
  }
  const bool residual = n.num_inputs() > 3 && n.has_input(3);
  c.shape_type = "kiln_kernels::Conv2dShape";
  c.shape_init = int_list({N, H, W, C, OH, OW, M, KH, KW, g.sh, g.sw, g.ph.begin, g.pw.begin, g.dh, g.dw, G});
  // With AVX-512, the depthwise rows kiln's CPU backend runs (kernels/depthwise_rows.h).
  if (depthwise && ctx.avx512 && g.dh == 1 && g.dw == 1 && KH <= kiln_kernels::kDepthwiseMaxKernelRows && !residual) {
    ctx.use_kernel("depthwise_rows.h");
    const kiln_kernels::DepthwiseShape ds{H, W, C, OH, OW, KH, KW, g.sh, g.sw, g.ph.begin, g.pw.begin};
    const int64_t C16 = (C + 15) / 16 * 16;
    std::vector<float> pw(static_cast<size_t>(C16 * KH * KW)), pb(static_cast<size_t>(C16));
    kiln_kernels::pack_depthwise(ds, wd, bd, pw.data(), pb.data());
    const std::string key = "depthwise16:" + n.input(1)->name() + (bd ? ":" + n.input(2)->name() : "");
    const std::string args = ctx.weights(key, pw) + ", " + ctx.weights(key + ":bias", pb);
    c.call = row_kernel_call("kiln_kernels::depthwise_nhwc_rows<" + e.act + ">", args, e);
    const std::string shape = "kiln_kernels::DepthwiseShape" + int_list({H, W, C, OH, OW, KH, KW, g.sh, g.sw, g.ph.begin, g.pw.begin});
    const int64_t out_row = OW * C;
    c.rows = [=](const std::string& base, const std::string& row0, const std::string&, const std::string& y,
                 const std::string& oy0, const std::string& oy1, const std::string& ring, const std::string&) {
      return "kiln_kernels::depthwise_rows(" + shape + ", " + args + ", " + e.act + ", " + e.a + ", " + e.b + ", " + base +
             ", " + row0 + ", " + y + ", " + oy0 + ", " + oy1 + ", " + ring + ");\n" + late + y + ", (" + oy1 + " - " + oy0 +
             ") * " + i64(out_row) + ", " + e.a + ", " + e.b + ");";
    };
    return c;
  }
  // With AVX-512, a 1x1 conv runs on the pointwise rows kiln's CPU backend runs (kernels/pointwise_rows.h).
  const bool pointwise = KH == 1 && KW == 1 && G == 1 && g.sh == 1 && g.sw == 1 && g.ph.begin == 0 && g.ph.end == 0 &&
                         g.pw.begin == 0 && g.pw.end == 0;
  if (pointwise && ctx.avx512) {
    const PointwiseCall p = pointwise_call(ctx, n, C, M, wd, false, 1.f, bd, n.input(1)->name());
    const std::string fn = "kiln_kernels::pointwise_conv_nhwc<" + e.act + ">";
    c.call = [fn, p, e](const std::string& s, const std::string& x, const std::string& z, const std::string& y,
                        const std::string& team) {
      return fn + "(" + s + ", " + p.layout + ", " + x + ", " + p.weights + ", " + p.bias + ", " + z + ", " + y + ", " + e.a +
             ", " + e.b + ", " + (p.split_outputs ? "true" : "false") + ", " + team + ");";
    };
    c.pointwise = true;
    c.rows = [=](const std::string&, const std::string&, const std::string& at, const std::string& y,
                 const std::string& oy0, const std::string& oy1, const std::string&, const std::string& z) {
      const std::string pixels = "(" + oy1 + " - " + oy0 + ") * " + i64(OW);
      return "{\n  static const kiln_kernels::PointwiseLayout L = " + p.layout + ";\n  L.rows(" + p.weights + ", " + p.bias +
             ", " + e.act + ", " + e.a + ", " + e.b + ", " + at + ", 0, " + pixels + ", " + y + ", " + z +
             ", nullptr, 0, L.parts());\n}\n" + late + y + ", " + pixels + " * " + i64(M) + ", " + e.a + ", " + e.b + ");";
    };
    return c;
  }
  // With AVX-512, a conv of few input channels (an image model's stem) runs on the stem rows
  // kiln's CPU backend runs (kernels/stem_rows.h).
  const kiln_kernels::StemShape stem{H, W, C, OH, OW, M, KH, KW, g.sh, g.sw, g.ph.begin, g.pw.begin};
  if (ctx.avx512 && G == 1 && g.dh == 1 && g.dw == 1 && !residual && kiln_kernels::stem_fits(stem)) {
    ctx.use_kernel("stem_rows.h");
    const kiln_kernels::StemLayout layout(stem, planar);
    std::vector<float> pw(static_cast<size_t>(layout.packed_size())), pb(static_cast<size_t>(layout.bias_size()), 0.f);
    layout.pack(wd, pw.data());
    if (bd) std::copy(bd, bd + M, pb.begin());
    const std::string key = std::string(planar ? "stem_planar:" : "stem:") + n.input(1)->name() + (bd ? ":" + n.input(2)->name() : "");
    const std::string w_ptr = ctx.weights(key, pw), b_ptr = ctx.weights(key + ":bias", pb);
    c.call = row_kernel_call("kiln_kernels::stem_conv_nhwc<" + e.act + ">", w_ptr + ", " + b_ptr, e);
    const std::string shape = "kiln_kernels::StemShape" + int_list({H, W, C, OH, OW, M, KH, KW, g.sh, g.sw, g.ph.begin, g.pw.begin});
    const int64_t out_row = OW * M;
    c.rows = [=](const std::string& base, const std::string& row0, const std::string&, const std::string& y,
                 const std::string& oy0, const std::string& oy1, const std::string& ring, const std::string&) {
      return "{\n  static const kiln_kernels::StemLayout L(" + shape + ", " + (planar ? "true" : "false") + ");\n  L.rows(" +
             w_ptr + ", " + b_ptr + ", " + e.act + ", " + e.a + ", " + e.b + ", " + base + ", " + row0 + ", " + y + ", " + oy0 +
             ", " + oy1 + ", " + ring + ");\n}\n" + late + y + ", (" + oy1 + " - " + oy0 + ") * " + i64(out_row) + ", " + e.a +
             ", " + e.b + ");";
    };
    return c;
  }
  if (planar) throw ctx.unsupported("only a stem reads an NCHW image in a chain");
  const std::vector<float> packed =
      depthwise ? pack_depthwise(wd, C, KH, KW) : pack_conv2d(wd, M, C, G, KH, KW, ctx.panel);
  const std::vector<float> bias = !bd ? std::vector<float>{} : depthwise ? std::vector<float>(bd, bd + M)
                                                                         : pack_conv2d_bias(bd, M, G, ctx.panel);
  ctx.use_kernel("conv2d.h");
  const std::string key = "conv:" + n.input(1)->name() + ":" + panel;
  c.call = make_call(depthwise ? "kiln_kernels::depthwise_nhwc<" + e.act + ">"
                               : "kiln_kernels::conv2d_nhwc<" + e.act + ", " + panel + ">",
                     ctx.weights(key, packed) + ", " + (bd ? ctx.weights(key + ":bias", bias) : "nullptr") + ", ");
  return c;
}

void emit_conv(EmitContext& ctx) {
  const Operand& x = ctx.step.inputs.at(0);
  const Operand& y = ctx.step.outputs.at(0);
  if (x.dtype != DType::Float) throw ctx.unsupported("only float convolutions are emitted");
  if (x.dims.size() != 4 || !ctx.node.attr_int("channels_last", 0)) return emit_conv_nd(ctx);
  if (runs_on_onednn(ctx)) return emit_onednn_conv(ctx);
  if (ctx.step.instruction->spec.impl == "gemv") return emit_gemv_conv(ctx);
  const bool winograd_ok = ctx.step.instruction->spec.impl.find("winograd") != std::string::npos;
  const WindowCall c = window_call(ctx, ctx.node, x.dims, y.dims, winograd_ok);
  ctx.line("static const " + c.shape_type + " s" + c.shape_init + ";");
  ctx.line(c.call("s", ctx.in(0), ctx.has_input(3) ? ctx.in(3) : "nullptr", ctx.out(0), "c.team"));
}

void emit_pool(EmitContext& ctx) {
  const Operand& x = ctx.step.inputs.at(0);
  const Operand& y = ctx.step.outputs.at(0);
  if (x.dtype != DType::Float) throw ctx.unsupported("only float pooling is emitted");
  if (ctx.step.outputs.size() > 1 && ctx.step.outputs[1].buffer >= 0) throw ctx.unsupported("max pooling indices are not emitted");
  const WindowCall c = window_call(ctx, ctx.node, x.dims, y.dims, false);
  ctx.line("static const " + c.shape_type + " s" + c.shape_init + ";");
  ctx.line(c.call("s", ctx.in(0), "nullptr", ctx.out(0), "c.team"));
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
