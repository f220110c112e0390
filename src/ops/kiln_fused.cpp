// Ops of the "kiln" domain, formed by the graph optimizer (src/passes/), never by exporters:
//
//   FusedConv / FusedGemm / FusedMatMul   the ai.onnx op (all its attributes) followed by an
//       activation epilogue: `activation` = Relu | Clip | Sigmoid | Tanh | SiLU | Gelu |
//       GeluTanh | HardSigmoid | HardSwish | LeakyRelu, or absent for none; `activation_params`
//       = [min, max] for Clip, [alpha] for LeakyRelu, [alpha, beta] for HardSigmoid. Float32.
//       FusedConv(X, W, B?, Z?, S?) also adds a residual Z (the output's shape) before the
//       activation: Y = act(conv(X * S, W) + B + Z), ORT's FusedConv; S (channels-last only)
//       scales X's channels, [N or 1, 1, 1, C]: a squeeze-excitation's scale folded in by
//       src/lower/fold_channel_scale.cpp. With `channels_last` = 1 its X, Z and Y are NHWC ([N, H, W, C]); W stays OIHW. Then `x_blocked` = 1 says X holds
//       its elements in oneDNN's nChw16c order ([N, C/16, H, W, 16]) under the same NHWC type,
//       `y_blocked` = 1 and `z_blocked` = 1 the same of Y and Z (src/lower/blocked_layout.cpp;
//       C must be a multiple of 16). FusedMatMul(A, B, bias?) adds a
//       bias of shape [N] (the output's last dim) before the activation.
//   FusedElementwise(inputs...) -> outputs...   a fusion group of elementwise/broadcast ops
//       (src/fusion/collapse_groups.cpp) held in its `body` graph, whose inputs and outputs are
//       the node's; the CPU backend evaluates it tile by tile without writing intermediates.
//       Reshape/Transpose/Expand/Squeeze/Unsqueeze/Flatten members are views it reads through.
//   FusedReduce(inputs...) -> output   the same, with a body that ends in a ReduceSum/Mean/
//       Max/Min whose output is the node's: a reduction with its elementwise prologue.
//   NhwcMaxPool / NhwcAveragePool / NhwcGlobalAveragePool / NhwcGlobalMaxPool   the ai.onnx
//       pooling op (its attributes, one output) on an NHWC tensor; NhwcConvTranspose(x, W, B?)
//       likewise ConvTranspose (weights as ONNX's), NhwcDepthToSpace / NhwcSpaceToDepth the
//       block moves, NhwcInstanceNormalization / NhwcGroupNormalization(x, scale, bias) the
//       normalizations. The layout assignment
//       (src/lower/layout_assignment.cpp) forms these and channels_last FusedConv.
//   ConvConcat(inputs...) -> output   channels-last FusedConvs and the Concat of their outputs
//       along the channel axis, held in its `body` graph as for FusedElementwise; the CPU
//       backend writes each conv's output into its slice of the result.
//   PrologueConv(inputs...) -> output   a FusedElementwise and the channels-last 1x1 FusedConv
//       that alone reads its output, as its X, held in its `body` graph
//       (src/lower/fuse_conv_prologue.cpp); the CPU backend computes the elementwise rows a
//       cache-sized chunk at a time and multiplies each chunk while it is in cache.
//   ConvChain(inputs...) -> output, pooled?   channels-last FusedConvs (and, after the first,
//       NhwcMaxPool / NhwcAveragePool) each feeding only the next, held in its `body` graph
//       (src/lower/fuse_conv_chain.cpp); the last layer's output is the node's first, and an NhwcGlobalAveragePool of it, when the body ends in one, its
//       second. The CPU backend computes it in bands of rows, intermediates kept in the cache;
//       `band_rows` > 0 fixes the rows per band (else sized to the cache).
//   GemvChain(inputs...) -> output   a one-row Gemm / FusedGemm and the one-row Gemm /
//       FusedGemm that alone reads its output, held in its `body` graph
//       (src/lower/fuse_gemv_chain.cpp); the CPU backend runs both in one job of its team.
//   SiLU(x) = x * sigmoid(x)
//
// The fused ops reuse the base op's shape inference and reference kernel (looked up in the
// registry, run under the model's ai.onnx opset) and then apply the activation in place.
#include <algorithm>
#include <cmath>
#include <limits>

#include <unordered_map>

#include "ops/core/activation.h"
#include "ops/core/dispatch.h"
#include "ops/core/infer_graph.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

struct ForwardSymbols : SymbolSource {
  explicit ForwardSymbols(InferContext& c) : ctx(c) {}
  ir::Dim fresh() override { return ctx.fresh_dim(); }
  InferContext& ctx;
};

int64_t onnx_opset(const ir::Node& n) { return n.owner() ? n.owner()->opset("") : 17; }

const OpDef& base_def(const ir::Node& n, const std::string& base) {
  const OpDef* d = Registry::instance().find("", base);
  if (!d || !d->infer || !d->kernel) throw UnsupportedError(n.describe() + ": base op " + base + " is not available");
  return *d;
}

// NCHW <-> NHWC for the channels_last forms: types and 4-D tensors.
ir::TensorType to_nchw(const ir::TensorType& t) {
  if (!t.rank_known || t.rank() != 4) return t;
  return ir::TensorType(t.dtype, {t.dims[0], t.dims[3], t.dims[1], t.dims[2]});
}
ir::TensorType to_nhwc(const ir::TensorType& t) {
  if (!t.rank_known || t.rank() != 4) return t;
  return ir::TensorType(t.dtype, {t.dims[0], t.dims[2], t.dims[3], t.dims[1]});
}
// Permutes a 4-D tensor: to NCHW from NHWC (nchw = true) or back.
Tensor permute4(const Tensor& x, bool nchw, const ir::Node& n) {
  if (x.rank() != 4) throw Error(n.describe() + ": channels-last tensors must have rank 4");
  const auto d = x.dims();
  const int64_t N = d[0], A = d[1], B = d[2], C = d[3];  // NHWC: A=H B=W C=C; NCHW: A=C B=H C=W
  // Element (i, a, b, c) of x goes to (i, c, a, b) when making NCHW, (i, b, c, a) otherwise.
  const std::vector<int64_t> s = strides_of(d);
  Tensor y(x.dtype(), nchw ? std::vector<int64_t>{N, C, A, B} : std::vector<int64_t>{N, B, C, A});
  copy_strided(x, y, y.dims(), nchw ? std::vector<int64_t>{s[0], s[3], s[1], s[2]} : std::vector<int64_t>{s[0], s[2], s[3], s[1]});
  return y;
}

bool channels_last(const ir::Node& n) { return n.attr_int("channels_last", 0) != 0; }
bool x_blocked(const ir::Node& n) { return n.attr_int("x_blocked", 0) != 0; }
bool y_blocked(const ir::Node& n) { return n.attr_int("y_blocked", 0) != 0; }
bool z_blocked(const ir::Node& n) { return n.attr_int("z_blocked", 0) != 0; }

// An NHWC tensor to the nChw16c order of its elements (to_blocked) or back; same dims.
Tensor reorder_blocked16(const Tensor& x, bool to_blocked, const ir::Node& n) {
  if (x.rank() != 4 || x.dtype() != DType::Float || x.dim(3) % 16 != 0)
    throw Error(n.describe() + ": blocked tensors must be float32 NHWC with channels a multiple of 16");
  const int64_t N = x.dim(0), H = x.dim(1), W = x.dim(2), C = x.dim(3);
  Tensor y(x.dtype(), x.dims());
  const float* a = x.data<float>();
  float* b = y.data<float>();
  for (int64_t i = 0; i < N; ++i)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t w = 0; w < W; ++w)
        for (int64_t c = 0; c < C; ++c) {
          const int64_t plain = ((i * H + h) * W + w) * C + c;
          const int64_t blocked = (((i * (C / 16) + c / 16) * H + h) * W + w) * 16 + c % 16;
          if (to_blocked) b[blocked] = a[plain];
          else b[plain] = a[blocked];
        }
  return y;
}

// x [N, H, W, C] times s [N or 1, 1, 1, C], a new tensor.
Tensor scale_channels(const Tensor& x, const Tensor& s, const ir::Node& n) {
  if (x.dtype() != DType::Float || s.dtype() != DType::Float || x.rank() != 4 || s.rank() != 4 || s.dim(1) != 1 ||
      s.dim(2) != 1 || s.dim(3) != x.dim(3) || (s.dim(0) != 1 && s.dim(0) != x.dim(0)))
    throw Error(n.describe() + ": the channel scale S must be float32 [N or 1, 1, 1, C] for X of shape [N, H, W, C]");
  Tensor y(DType::Float, x.dims());
  const int64_t C = x.dim(3), pixels = x.dim(1) * x.dim(2);
  const float* a = x.data<float>();
  float* b = y.data<float>();
  for (int64_t i = 0; i < x.dim(0); ++i) {
    const float* sc = s.data<float>() + (s.dim(0) == 1 ? 0 : i * C);
    for (int64_t p = 0; p < pixels; ++p)
      for (int64_t c = 0; c < C; ++c, ++a, ++b) *b = *a * sc[c];
  }
  return y;
}

InferFn fused_infer(std::string base) {
  return [base](InferContext& ctx) {
    activation_of(ctx.node());
    const bool nhwc = channels_last(ctx.node());
    if (nhwc && base != "Conv") ctx.fail("channels_last applies to FusedConv only");
    const bool blocked_x = x_blocked(ctx.node()), blocked_y = y_blocked(ctx.node());
    if ((blocked_x || blocked_y || z_blocked(ctx.node())) && !nhwc)
      ctx.fail("x_blocked / y_blocked / z_blocked apply to channels_last FusedConv only");
    if (blocked_x && ctx.input(0).rank_known && ctx.input(0).rank() == 4 && ctx.input(0).dims[3].is_static() &&
        ctx.input(0).dims[3].value % 16 != 0)
      ctx.fail("a blocked input X needs channels a multiple of 16, not " + ctx.input(0).str());
    std::vector<ir::TensorType> types;
    std::vector<const Tensor*> values;
    const int n_base = base == "MatMul" ? 2 : 3;
    for (int i = 0; i < std::min(ctx.num_inputs(), n_base); ++i) {
      types.push_back(ctx.has_input(i) ? ctx.input(i) : ir::TensorType());
      values.push_back(ctx.value(i));
    }
    if (nhwc) types[0] = to_nchw(types[0]);
    ForwardSymbols symbols(ctx);
    InferContext inner(ctx.node(), onnx_opset(ctx.node()), types, values, symbols);
    base_def(ctx.node(), base).infer(inner);
    if (inner.outputs[0].dtype != DType::Float) ctx.fail("fused ops compute in float32 only");
    ir::TensorType out = nhwc ? to_nhwc(inner.outputs[0]) : inner.outputs[0];
    if ((blocked_y || z_blocked(ctx.node())) && out.rank_known && out.rank() == 4 && out.dims[3].is_static() &&
        out.dims[3].value % 16 != 0)
      ctx.fail("a blocked output Y or residual Z needs channels a multiple of 16, not " + out.str());
    if (base == "MatMul" && ctx.num_inputs() > 2 && ctx.has_input(2)) {
      const ir::TensorType& b = ctx.input(2);
      if (b.dtype != DType::Float || (b.rank_known && b.rank() != 1)) ctx.fail("the bias must be a float32 vector");
      if (b.rank_known && out.rank_known && out.rank() > 0 && b.dims[0].is_static() &&
          out.dims.back().is_static() && b.dims[0].value != out.dims.back().value)
        ctx.fail("the bias length must equal the output's last dim");
    }
    if (ctx.num_inputs() > 4 && ctx.has_input(4)) {
      const ir::TensorType& sc = ctx.input(4);
      const ir::TensorType& x = ctx.input(0);
      if (base != "Conv" || !nhwc) ctx.fail("a channel scale S applies to channels_last FusedConv only");
      if (sc.dtype != DType::Float || (sc.rank_known && sc.rank() != 4))
        ctx.fail("the channel scale S must be float32 [N, 1, 1, C]");
      if (sc.rank_known && x.rank_known && x.rank() == 4)
        for (int i = 0; i < 4; ++i) {
          const ir::Dim &a = sc.dims[i], &b = x.dims[i];
          const bool ok = !a.is_static() || (i == 1 || i == 2 ? a.value == 1
                                                               : !b.is_static() || a.value == b.value || (i == 0 && a.value == 1));
          if (!ok) ctx.fail("the channel scale S " + sc.str() + " must be [N or 1, 1, 1, C] for X " + x.str());
        }
    }
    if (ctx.num_inputs() > 3 && ctx.has_input(3)) {
      const ir::TensorType& z = ctx.input(3);
      if (z.dtype != DType::Float) ctx.fail("the residual input Z must be float32");
      if (z.rank_known && out.rank_known) {
        if (z.rank() != out.rank()) ctx.fail("the residual input Z must have the output's shape " + out.str());
        for (size_t i = 0; i < z.dims.size(); ++i)
          if (z.dims[i].is_static() && out.dims[i].is_static() && z.dims[i].value != out.dims[i].value)
            ctx.fail("the residual input Z " + z.str() + " must have the output's shape " + out.str());
      }
    }
    ctx.set_output(0, out);
  };
}

KernelFn fused_kernel(std::string base) {
  return [base](KernelContext& ctx) {
    const Activation act = activation_of(ctx.node());
    const bool nhwc = channels_last(ctx.node());
    std::vector<const Tensor*> ins;
    const int n_base = base == "MatMul" ? 2 : 3;
    for (int i = 0; i < std::min(ctx.num_inputs(), n_base); ++i) ins.push_back(ctx.has_input(i) ? &ctx.input(i) : nullptr);
    Tensor x_nchw;
    if (nhwc) {
      Tensor x = x_blocked(ctx.node()) ? reorder_blocked16(*ins[0], false, ctx.node()) : *ins[0];
      if (ctx.num_inputs() > 4 && ctx.has_input(4)) x = scale_channels(x, ctx.input(4), ctx.node());
      x_nchw = permute4(x, true, ctx.node());
      ins[0] = &x_nchw;
    }
    KernelContext inner(ctx.node(), onnx_opset(ctx.node()), ins);
    base_def(ctx.node(), base).kernel(inner);
    Tensor y = nhwc ? permute4(inner.outputs[0], false, ctx.node()) : inner.outputs[0];
    if (y.dtype() != DType::Float) ctx.fail("fused ops compute in float32 only");
    for (int i = 0; i < ctx.num_inputs(); ++i)
      if (ctx.has_input(i) && ctx.input(i).raw() == y.raw()) y = y.clone();  // never write through into an input
    float* p = y.data<float>();
    if (base == "MatMul" && ctx.num_inputs() > 2 && ctx.has_input(2)) {
      const Tensor& b = ctx.input(2);
      const int64_t n = y.rank() ? y.dim(y.rank() - 1) : 1;
      if (b.dtype() != DType::Float || b.rank() != 1 || b.dim(0) != n) ctx.fail("the bias must be a float32 [N] vector");
      const float* bp = b.data<float>();
      for (int64_t i = 0; i < y.numel(); ++i) p[i] += bp[i % n];
    }
    if (base == "Conv" && ctx.num_inputs() > 3 && ctx.has_input(3)) {
      const Tensor z = z_blocked(ctx.node()) ? reorder_blocked16(ctx.input(3), false, ctx.node()) : ctx.input(3);
      if (z.dtype() != DType::Float || z.dims() != y.dims()) ctx.fail("the residual input Z must have the output's shape");
      const float* zp = z.data<float>();
      for (int64_t i = 0; i < y.numel(); ++i) p[i] += zp[i];
    }
    for (int64_t i = 0; i < y.numel(); ++i) p[i] = apply(act, p[i]);
    ctx.set_output(0, y_blocked(ctx.node()) ? reorder_blocked16(y, true, ctx.node()) : y);
  };
}

// A pooling op on NHWC: the ai.onnx op between two permutations.
// A channels-last op (kiln.Nhwc<base>) as its ai.onnx base on NCHW: input 0 and the output
// change layout, the other inputs (weights, bias) pass as they are.
void infer_nhwc(InferContext& ctx, const std::string& base) {
  if (ctx.num_outputs() != 1) ctx.fail("a channels-last op has one output");
  if (ctx.input(0).rank_known && ctx.input(0).rank() != 4) ctx.fail("a channels-last op takes a rank-4 tensor");
  std::vector<ir::TensorType> types{to_nchw(ctx.input(0))};
  std::vector<const Tensor*> values{nullptr};
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    types.push_back(ctx.has_input(i) ? ctx.input(i) : ir::TensorType());
    values.push_back(ctx.has_input(i) ? ctx.value(i) : nullptr);
  }
  ForwardSymbols symbols(ctx);
  InferContext inner(ctx.node(), onnx_opset(ctx.node()), types, values, symbols);
  base_def(ctx.node(), base).infer(inner);
  ctx.set_output(0, to_nhwc(inner.outputs[0]));
}

void nhwc_kernel(KernelContext& ctx, const std::string& base) {
  Tensor x = permute4(ctx.input(0), true, ctx.node());
  std::vector<const Tensor*> ins{&x};
  for (int i = 1; i < ctx.num_inputs(); ++i) ins.push_back(ctx.has_input(i) ? &ctx.input(i) : nullptr);
  KernelContext inner(ctx.node(), onnx_opset(ctx.node()), ins);
  base_def(ctx.node(), base).kernel(inner);
  ctx.set_output(0, permute4(inner.outputs[0], false, ctx.node()));
}

void silu_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.make_output(0, x.dtype(), x.dims());
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* a = x.data<T>();
    T* o = y.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      C v = static_cast<C>(a[i]);
      o[i] = static_cast<T>(v / (C(1) + std::exp(-v)));
    }
  });
}

void infer_silu(InferContext& ctx) {
  if (!dtype_is_float(ctx.input(0).dtype) && ctx.input(0).dtype != DType::Undefined) ctx.fail("SiLU takes a float tensor");
  infer_same_as_input(ctx);
}

const ir::Graph& body_of(const ir::Node& n) {
  auto it = n.attrs.find("body");
  if (it == n.attrs.end() || !it->second.g) throw Error(n.describe() + ": " + n.op_type() + " needs a body graph");
  const ir::Graph& body = *it->second.g;
  if (body.inputs().size() != static_cast<size_t>(n.num_inputs()) ||
      body.outputs().size() != static_cast<size_t>(n.num_outputs()))
    throw Error(n.describe() + ": the body's inputs and outputs must match the node's");
  return body;
}

void infer_fused_elementwise(InferContext& ctx) {
  const ir::Graph& body = body_of(ctx.node());
  std::vector<ir::TensorType> ins;
  for (int i = 0; i < ctx.num_inputs(); ++i) ins.push_back(ctx.input(i));
  std::vector<ir::TensorType> outs = infer_subgraph(ctx, const_cast<ir::Graph&>(body), ins);
  for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, outs[i]);
}

// The body's nodes one by one on their reference kernels.
void fused_elementwise_kernel(KernelContext& ctx) {
  const ir::Graph& body = body_of(ctx.node());
  std::unordered_map<const ir::Value*, Tensor> v;
  for (int i = 0; i < ctx.num_inputs(); ++i) v[body.inputs()[i]] = ctx.input(i);
  for (const ir::Value* c : body.constants()) v[c] = c->constant();
  for (const ir::Node* n : body.nodes()) {
    std::vector<const Tensor*> args;
    for (const ir::Value* in : n->inputs()) args.push_back(in ? &v.at(in) : nullptr);
    std::vector<Tensor> outs = run_reference(*n, args);
    for (int k = 0; k < n->num_outputs(); ++k)
      if (n->output(k)) v[n->output(k)] = outs[k];
  }
  for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, v.at(body.outputs()[i]));
}

}  // namespace

KILN_REGISTER_OPS(kiln_fused) {
  reg.add({.name = "FusedElementwise", .domain = "kiln", .min_inputs = 0, .max_inputs = -1, .min_outputs = 1,
           .max_outputs = -1, .pattern = PatternKind::Opaque, .infer = infer_fused_elementwise,
           .kernel = fused_elementwise_kernel});
  // A reduction with its prologue: the body ends in the reduction, whose output is the node's.
  reg.add({.name = "FusedReduce", .domain = "kiln", .min_inputs = 0, .max_inputs = -1, .min_outputs = 1,
           .max_outputs = 1, .pattern = PatternKind::Opaque, .infer = infer_fused_elementwise,
           .kernel = fused_elementwise_kernel});
  // Convolutions with the Concat of their outputs (src/lower/fuse_conv_concat.cpp).
  reg.add({.name = "ConvConcat", .domain = "kiln", .min_inputs = 1, .max_inputs = -1, .min_outputs = 1,
           .max_outputs = 1, .pattern = PatternKind::Opaque, .infer = infer_fused_elementwise,
           .kernel = fused_elementwise_kernel});
  // Convolutions each feeding the next, run band by band (src/lower/fuse_conv_chain.cpp).
  reg.add({.name = "ConvChain", .domain = "kiln", .min_inputs = 1, .max_inputs = -1, .min_outputs = 1,
           .max_outputs = 2, .pattern = PatternKind::Opaque, .infer = infer_fused_elementwise,
           .kernel = fused_elementwise_kernel});
  // Two one-row products, the second reading the first (src/lower/fuse_gemv_chain.cpp).
  reg.add({.name = "GemvChain", .domain = "kiln", .min_inputs = 1, .max_inputs = -1, .min_outputs = 1,
           .max_outputs = 1, .pattern = PatternKind::Opaque, .infer = infer_fused_elementwise,
           .kernel = fused_elementwise_kernel});
  // A 1x1 conv with the elementwise group that computes its input (src/lower/fuse_conv_prologue.cpp).
  reg.add({.name = "PrologueConv", .domain = "kiln", .min_inputs = 1, .max_inputs = -1, .min_outputs = 1,
           .max_outputs = 1, .pattern = PatternKind::Opaque, .infer = infer_fused_elementwise,
           .kernel = fused_elementwise_kernel});
  for (const char* base : {"Conv", "Gemm", "MatMul"})
    reg.add({.name = std::string("Fused") + base, .domain = "kiln", .min_inputs = 2,
             .max_inputs = std::string(base) == "Conv" ? 5 : 3,
             .pattern = PatternKind::OutEWiseFusable, .infer = fused_infer(base), .kernel = fused_kernel(base)});
  for (std::string base : {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"})
    reg.add({.name = "Nhwc" + base, .domain = "kiln", .min_inputs = 1, .max_inputs = 1, .min_outputs = 1,
             .max_outputs = 1, .pattern = PatternKind::OutEWiseFusable,
             .infer = [base](InferContext& c) { infer_nhwc(c, base); },
             .kernel = [base](KernelContext& c) { nhwc_kernel(c, base); }});
  for (std::string base : {"DepthToSpace", "SpaceToDepth"})
    reg.add({.name = "Nhwc" + base, .domain = "kiln", .min_inputs = 1, .max_inputs = 1, .min_outputs = 1,
             .max_outputs = 1, .pattern = PatternKind::Injective,
             .infer = [base](InferContext& c) { infer_nhwc(c, base); },
             .kernel = [base](KernelContext& c) { nhwc_kernel(c, base); }});
  // Per-image normalizations on channels-last data (layout assignment); scale and bias as the base op's.
  for (std::string base : {"InstanceNormalization", "GroupNormalization"})
    reg.add({.name = "Nhwc" + base, .domain = "kiln", .min_inputs = 3, .max_inputs = 3, .min_outputs = 1,
             .max_outputs = 1, .pattern = PatternKind::Opaque,
             .infer = [base](InferContext& c) { infer_nhwc(c, base); },
             .kernel = [base](KernelContext& c) { nhwc_kernel(c, base); }});
  // ConvTranspose on channels-last data (layout assignment); weights [C, OC/group, kH, kW] as ONNX's.
  reg.add({.name = "NhwcConvTranspose", .domain = "kiln", .min_inputs = 2, .max_inputs = 3, .min_outputs = 1,
           .max_outputs = 1, .pattern = PatternKind::OutEWiseFusable,
           .infer = [](InferContext& c) { infer_nhwc(c, "ConvTranspose"); },
           .kernel = [](KernelContext& c) { nhwc_kernel(c, "ConvTranspose"); }});
  reg.add({.name = "SiLU", .domain = "kiln", .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::ElemWise,
           .infer = infer_silu, .kernel = silu_kernel});
}

}  // namespace kiln::ops
