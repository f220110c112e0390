// DynamicQuantizeLinear (opset 11) and the quantized products QLinearMatMul and QLinearConv
// (opset 10). QuantizeLinear and DequantizeLinear are in quantize_linear.cpp.
//
// Rounding is round-half-to-even (std::nearbyint in the default rounding mode) and results
// saturate to the output integer type, as the ONNX reference does. Requantization multiplies
// the int32 accumulator by the float scale a_scale*b_scale/y_scale, like onnxruntime, so
// results agree bit for bit on the usual .5 boundaries.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "ops/core/conv_geometry.h"
#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

bool is_quant_type(DType t) { return t == DType::UInt8 || t == DType::Int8; }

// Saturating cast of a rounded float to a quantized integer type.
template <typename Q>
Q saturate(float v) {
  const float lo = static_cast<float>(std::numeric_limits<Q>::min());
  const float hi = static_cast<float>(std::numeric_limits<Q>::max());
  if (std::isnan(v)) return Q(0);
  return static_cast<Q>(std::min(hi, std::max(lo, v)));
}

template <typename Q>
void dispatch_quant(DType t, const ir::Node& node, Q&& f) {
  if (t == DType::UInt8) return f(uint8_t{});
  if (t == DType::Int8) return f(int8_t{});
  throw UnsupportedError(node.describe() + ": quantized type must be uint8 or int8, got " + dtype_name(t));
}

// ---------------------------------------------------------------- DynamicQuantizeLinear

void infer_dynamic_quantize(InferContext& ctx) {
  if (ctx.input(0).dtype != DType::Float) ctx.fail("x must be float, got " + ctx.input(0).str());
  infer_same_shape(ctx, DType::UInt8);
  if (ctx.has_output(1)) ctx.set_output(1, DType::Float, {});
  if (ctx.has_output(2)) ctx.set_output(2, DType::UInt8, {});
}

void dynamic_quantize_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::Float) ctx.fail("x must be float, got " + x.describe());
  const float* px = x.data<float>();
  // The range always includes 0 so that 0 is exactly representable.
  float lo = 0.f, hi = 0.f;
  for (int64_t i = 0; i < x.numel(); ++i) {
    lo = std::min(lo, px[i]);
    hi = std::max(hi, px[i]);
  }
  const float scale = (hi - lo) / 255.f;
  const float zp = scale > 0.f ? std::min(255.f, std::max(0.f, std::nearbyint((0.f - lo) / scale))) : 0.f;
  Tensor& y = ctx.make_output(0, DType::UInt8, x.dims());
  uint8_t* py = y.data<uint8_t>();
  for (int64_t i = 0; i < x.numel(); ++i) py[i] = scale > 0.f ? saturate<uint8_t>(std::nearbyint(px[i] / scale) + zp) : 0;
  if (ctx.has_output(1)) ctx.make_output(1, DType::Float, {}).data<float>()[0] = scale;
  if (ctx.has_output(2)) ctx.make_output(2, DType::UInt8, {}).data<uint8_t>()[0] = static_cast<uint8_t>(zp);
}

// ---------------------------------------------------------------- QLinearMatMul

// Elements of a quantized tensor minus its zero point, as int32; idx(i) picks element i's
// zero point (0 for per-tensor, a row/column/channel index otherwise).
template <typename F>
std::vector<int32_t> centered(const Tensor& t, const Tensor& zp, F&& idx) {
  std::vector<int32_t> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i)
    v[i] = static_cast<int32_t>(t.as_int64(i)) - static_cast<int32_t>(zp.as_int64(idx(i)));
  return v;
}

void check_quant_input(KernelContext& ctx, int data, int zp) {
  const Tensor& t = ctx.input(data);
  const Tensor& z = ctx.input(zp);
  if (!is_quant_type(t.dtype())) ctx.fail("input " + std::to_string(data) + " must be uint8 or int8, got " + t.describe());
  if (z.dtype() != t.dtype())
    ctx.fail("zero point (input " + std::to_string(zp) + ") must have its tensor's dtype, got " + z.describe());
}

// A scale/zero-point pair with 1 value or `n` values; fails otherwise.
void check_param_count(KernelContext& ctx, int scale, int zp, int64_t n, const char* what) {
  const Tensor& s = ctx.input(scale);
  const Tensor& z = ctx.input(zp);
  if (s.rank() > 1 || (s.numel() != 1 && s.numel() != n))
    ctx.fail(std::string(what) + " scale must be a scalar or have " + std::to_string(n) + " elements, got " + s.describe());
  if (z.numel() != s.numel()) ctx.fail(std::string(what) + " zero point must match its scale, got " + z.describe());
}

void infer_qlinear_matmul(InferContext& ctx) {
  const ir::TensorType& a = ctx.input(0);
  const ir::TensorType& b = ctx.input(3);
  const DType out = ctx.input(7).dtype;
  if (!is_quant_type(a.dtype) || !is_quant_type(b.dtype) || !is_quant_type(out))
    ctx.fail("a, b and y_zero_point must be uint8 or int8, got " + a.str() + ", " + b.str() + ", " + ctx.input(7).str());
  if (!a.rank_known || !b.rank_known) return ctx.set_output(0, ir::TensorType::unranked(out));
  if (a.rank() < 1 || b.rank() < 1) ctx.fail("operands must have rank >= 1");
  const int ar = a.rank(), br = b.rank();
  const ir::Dim& ka = a.dims[ar - 1];
  const ir::Dim& kb = br == 1 ? b.dims[0] : b.dims[br - 2];
  if (ka.is_static() && kb.is_static() && ka.value != kb.value)
    ctx.fail("inner dimensions do not match: a " + a.str() + ", b " + b.str());
  std::vector<ir::Dim> ab, bb;
  if (ar > 2) ab.assign(a.dims.begin(), a.dims.end() - 2);
  if (br > 2) bb.assign(b.dims.begin(), b.dims.end() - 2);
  ir::TensorType t = broadcast_types(ctx, {ir::TensorType(out, ab), ir::TensorType(out, bb)}, out);
  if (ar > 1) t.dims.push_back(a.dims[ar - 2]);
  if (br > 1) t.dims.push_back(b.dims[br - 1]);
  ctx.set_output(0, t);
}

void qlinear_matmul_kernel(KernelContext& ctx) {
  check_quant_input(ctx, 0, 2);
  check_quant_input(ctx, 3, 5);
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  const DType out = ctx.input(7).dtype();
  if (!is_quant_type(out)) ctx.fail("y_zero_point must be uint8 or int8, got " + ctx.input(7).describe());
  if (a.rank() < 1 || b.rank() < 1) ctx.fail("operands must have rank >= 1");
  const std::vector<int64_t>& ad = a.dims();
  const std::vector<int64_t>& bd = b.dims();
  const size_t ar = ad.size(), br = bd.size();
  const int64_t M = ar == 1 ? 1 : ad[ar - 2], K = ad[ar - 1];
  const int64_t Kb = br == 1 ? bd[0] : bd[br - 2], N = br == 1 ? 1 : bd[br - 1];
  if (K != Kb) ctx.fail("inner dimensions do not match: a " + a.describe() + ", b " + b.describe());
  // Per-row parameters for a, per-column for b (later opsets allow them; scalars are the norm).
  check_param_count(ctx, 1, 2, M, "a");
  check_param_count(ctx, 4, 5, N, "b");
  check_param_count(ctx, 6, 7, 1, "y");
  const Tensor &as = ctx.input(1), &bs = ctx.input(4);
  const bool a_rows = as.numel() > 1, b_cols = bs.numel() > 1;
  const std::vector<int32_t> av = centered(a, ctx.input(2), [&](int64_t i) { return a_rows ? (i / K) % M : 0; });
  const std::vector<int32_t> bv = centered(b, ctx.input(5), [&](int64_t i) { return b_cols ? i % N : 0; });
  std::vector<int64_t> abatch, bbatch;
  if (ar > 2) abatch.assign(ad.begin(), ad.end() - 2);
  if (br > 2) bbatch.assign(bd.begin(), bd.end() - 2);
  const std::vector<int64_t> batch = broadcast_dims({abatch, bbatch}, ctx.node());
  std::vector<int64_t> out_dims = batch;
  if (ar > 1) out_dims.push_back(M);
  if (br > 1) out_dims.push_back(N);
  const float ys = static_cast<float>(ctx.input(6).as_double(0));
  const float yz = static_cast<float>(ctx.input(7).as_int64(0));
  dispatch_quant(out, ctx.node(), [&](auto qtag) {
    using Q = decltype(qtag);
    Tensor& y = ctx.make_output(0, out, out_dims);
    Q* py = y.data<Q>();
    std::vector<int32_t> acc(static_cast<size_t>(N));
    BroadcastWalker walk(batch, {abatch, bbatch});
    walk.run([&](int64_t bi, const int64_t* off) {
      const int32_t* pa = av.data() + off[0] * M * K;
      const int32_t* pb = bv.data() + off[1] * K * N;
      for (int64_t i = 0; i < M; ++i) {
        std::fill(acc.begin(), acc.end(), 0);
        for (int64_t k = 0; k < K; ++k) {
          const int32_t x = pa[i * K + k];
          const int32_t* brow = pb + k * N;
          for (int64_t j = 0; j < N; ++j) acc[j] += x * brow[j];
        }
        const float sa = static_cast<float>(as.as_double(a_rows ? i : 0));
        for (int64_t j = 0; j < N; ++j) {
          const float mult = sa * static_cast<float>(bs.as_double(b_cols ? j : 0)) / ys;
          py[(bi * M + i) * N + j] = saturate<Q>(std::nearbyint(static_cast<float>(acc[j]) * mult) + yz);
        }
      }
    });
  });
}

// ---------------------------------------------------------------- QLinearConv

// Convolution geometry on concrete dims, spatial rank 1..3.
struct ConvGeom {
  int64_t N = 0, C = 0, M = 0, group = 1;
  std::vector<int64_t> in, kernel, out, strides, dilations, pad_begin;
};

// Output extent and leading pad of one spatial axis (window_axis); an input shorter than the
// window gives no outputs.
void conv_axis(AutoPad auto_pad, int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe, int64_t& out,
               int64_t& begin) {
  const WindowAxis a = window_axis(auto_pad, in, k, s, d, {pb, pe});
  out = a.out;
  begin = a.pads.begin;
}

struct ConvAttrs {
  AutoPad auto_pad = AutoPad::NotSet;
  int64_t group = 1;
  std::vector<int64_t> strides, dilations, pads, kernel_shape;
};

template <typename Ctx>
ConvAttrs conv_attrs(const Ctx& ctx, size_t spatial) {
  const ir::Node& n = ctx.node();
  ConvAttrs a;
  a.auto_pad = auto_pad_or_fail(ctx);
  a.group = n.attr_int("group", 1);
  a.strides = n.attr_ints("strides", std::vector<int64_t>(spatial, 1));
  a.dilations = n.attr_ints("dilations", std::vector<int64_t>(spatial, 1));
  a.pads = n.attr_ints("pads", std::vector<int64_t>(2 * spatial, 0));
  a.kernel_shape = n.attr_ints("kernel_shape");
  if (a.group < 1) ctx.fail("group must be >= 1");
  if (a.strides.size() != spatial || a.dilations.size() != spatial || a.pads.size() != 2 * spatial ||
      (!a.kernel_shape.empty() && a.kernel_shape.size() != spatial))
    ctx.fail("strides/dilations/kernel_shape need " + std::to_string(spatial) + " values and pads " +
             std::to_string(2 * spatial));
  for (size_t i = 0; i < spatial; ++i)
    if (a.strides[i] < 1 || a.dilations[i] < 1 || a.pads[i] < 0 || a.pads[i + spatial] < 0)
      ctx.fail("strides and dilations must be >= 1 and pads >= 0");
  return a;
}

void infer_qlinear_conv(InferContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  const ir::TensorType& w = ctx.input(3);
  const DType out = ctx.input(7).dtype;
  if (!is_quant_type(x.dtype) || !is_quant_type(w.dtype) || !is_quant_type(out))
    ctx.fail("x, w and y_zero_point must be uint8 or int8, got " + x.str() + ", " + w.str() + ", " + ctx.input(7).str());
  if (!x.rank_known) return ctx.set_output(0, ir::TensorType::unranked(out));
  if (x.rank() < 3 || x.rank() > 5) ctx.fail("x must have 1 to 3 spatial dims, got " + x.str());
  if (w.rank_known && w.rank() != x.rank()) ctx.fail("w's rank must match x's: " + w.str() + " vs " + x.str());
  const size_t sp = static_cast<size_t>(x.rank() - 2);
  const ConvAttrs a = conv_attrs(ctx, sp);
  std::vector<ir::Dim> dims = {x.dims[0], w.rank_known ? w.dims[0] : ctx.fresh_dim()};
  for (size_t i = 0; i < sp; ++i) {
    const ir::Dim& in = x.dims[2 + i];
    int64_t k = !a.kernel_shape.empty() ? a.kernel_shape[i] : (w.rank_known && w.dims[2 + i].is_static() ? w.dims[2 + i].value : -1);
    if (!in.is_static() || k < 0) { dims.push_back(ctx.fresh_dim()); continue; }
    int64_t o = 0, b = 0;
    conv_axis(a.auto_pad, in.value, k, a.strides[i], a.dilations[i], a.pads[i], a.pads[i + sp], o, b);
    dims.push_back(ir::Dim(o));
  }
  ctx.set_output(0, out, dims);
}

void qlinear_conv_kernel(KernelContext& ctx) {
  check_quant_input(ctx, 0, 2);
  check_quant_input(ctx, 3, 5);
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(3);
  const DType out = ctx.input(7).dtype();
  if (!is_quant_type(out)) ctx.fail("y_zero_point must be uint8 or int8, got " + ctx.input(7).describe());
  if (x.rank() < 3 || x.rank() > 5) ctx.fail("x must have 1 to 3 spatial dims, got " + x.describe());
  if (w.rank() != x.rank()) ctx.fail("w's rank must match x's: " + w.describe() + " vs " + x.describe());
  const size_t sp = static_cast<size_t>(x.rank() - 2);
  const ConvAttrs a = conv_attrs(ctx, sp);
  const int64_t N = x.dim(0), C = x.dim(1), M = w.dim(0), G = a.group;
  if (C % G != 0 || M % G != 0 || w.dim(1) != C / G)
    ctx.fail("channel mismatch: x " + x.describe() + ", w " + w.describe() + ", group " + std::to_string(G));
  for (size_t i = 0; i < sp; ++i)
    if (!a.kernel_shape.empty() && a.kernel_shape[i] != w.dim(static_cast<int>(2 + i)))
      ctx.fail("kernel_shape does not match w " + w.describe());
  check_param_count(ctx, 1, 2, 1, "x");
  check_param_count(ctx, 4, 5, M, "w");
  check_param_count(ctx, 6, 7, 1, "y");
  const Tensor* bias = ctx.has_input(8) ? &ctx.input(8) : nullptr;
  if (bias && (bias->dtype() != DType::Int32 || bias->dims() != std::vector<int64_t>{M}))
    ctx.fail("B must be int32[" + std::to_string(M) + "], got " + bias->describe());

  // Spatial axes padded to 3 (leading 1s) so one loop nest serves Conv1D/2D/3D.
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, o[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1}, p[3] = {0, 0, 0};
  std::vector<int64_t> out_dims = {N, M};
  for (size_t i = 0; i < sp; ++i) {
    const size_t j = 3 - sp + i;
    in[j] = x.dim(static_cast<int>(2 + i));
    k[j] = w.dim(static_cast<int>(2 + i));
    s[j] = a.strides[i];
    d[j] = a.dilations[i];
    conv_axis(a.auto_pad, in[j], k[j], s[j], d[j], a.pads[i], a.pads[i + sp], o[j], p[j]);
    out_dims.push_back(o[j]);
  }
  const int64_t in_sp = in[0] * in[1] * in[2], k_sp = k[0] * k[1] * k[2], o_sp = o[0] * o[1] * o[2];
  const int64_t Cg = C / G, Mg = M / G;
  const bool w_per_channel = ctx.input(4).numel() > 1;
  // Zero points subtracted up front, so padding (real 0) contributes nothing.
  const std::vector<int32_t> xv = centered(x, ctx.input(2), [](int64_t) { return int64_t{0}; });
  const std::vector<int32_t> wv =
      centered(w, ctx.input(5), [&](int64_t i) { return w_per_channel ? i / (Cg * k_sp) : int64_t{0}; });
  const float xs = static_cast<float>(ctx.input(1).as_double(0)), ys = static_cast<float>(ctx.input(6).as_double(0));
  const float yz = static_cast<float>(ctx.input(7).as_int64(0));
  std::vector<int32_t> acc(static_cast<size_t>(o_sp));
  dispatch_quant(out, ctx.node(), [&](auto qtag) {
    using Q = decltype(qtag);
    Tensor& y = ctx.make_output(0, out, out_dims);
    Q* py = y.data<Q>();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < M; ++m) {
        const int64_t g = m / Mg;
        std::fill(acc.begin(), acc.end(), bias ? bias->data<int32_t>()[m] : 0);
        for (int64_t c = 0; c < Cg; ++c) {
          const int32_t* xc = xv.data() + (n * C + g * Cg + c) * in_sp;
          const int32_t* wc = wv.data() + (m * Cg + c) * k_sp;
          for (int64_t kd = 0; kd < k[0]; ++kd)
            for (int64_t kh = 0; kh < k[1]; ++kh)
              for (int64_t kw = 0; kw < k[2]; ++kw) {
                const int32_t wgt = wc[(kd * k[1] + kh) * k[2] + kw];
                if (wgt == 0) continue;
                for (int64_t od = 0; od < o[0]; ++od) {
                  const int64_t id = od * s[0] - p[0] + kd * d[0];
                  if (id < 0 || id >= in[0]) continue;
                  for (int64_t oh = 0; oh < o[1]; ++oh) {
                    const int64_t ih = oh * s[1] - p[1] + kh * d[1];
                    if (ih < 0 || ih >= in[1]) continue;
                    const int32_t* xrow = xc + (id * in[1] + ih) * in[2];
                    int32_t* arow = acc.data() + (od * o[1] + oh) * o[2];
                    for (int64_t ow = 0; ow < o[2]; ++ow) {
                      const int64_t iw = ow * s[2] - p[2] + kw * d[2];
                      if (iw >= 0 && iw < in[2]) arow[ow] += wgt * xrow[iw];
                    }
                  }
                }
              }
        }
        const float mult = xs * static_cast<float>(ctx.input(4).as_double(w_per_channel ? m : 0)) / ys;
        Q* yo = py + (n * M + m) * o_sp;
        for (int64_t i = 0; i < o_sp; ++i) yo[i] = saturate<Q>(std::nearbyint(static_cast<float>(acc[i]) * mult) + yz);
      }
  });
}

}  // namespace

KILN_REGISTER_OPS(quantize) {
  reg.add({.name = "DynamicQuantizeLinear", .since_version = 11, .min_inputs = 1, .max_inputs = 1, .min_outputs = 1,
           .max_outputs = 3, .pattern = PatternKind::Opaque, .infer = infer_dynamic_quantize,
           .kernel = dynamic_quantize_kernel});
  reg.add({.name = "QLinearMatMul", .since_version = 10, .min_inputs = 8, .max_inputs = 8,
           .pattern = PatternKind::OutEWiseFusable, .infer = infer_qlinear_matmul, .kernel = qlinear_matmul_kernel});
  reg.add({.name = "QLinearConv", .since_version = 10, .min_inputs = 8, .max_inputs = 9,
           .pattern = PatternKind::OutEWiseFusable, .infer = infer_qlinear_conv, .kernel = qlinear_conv_kernel});
}

}  // namespace kiln::ops
