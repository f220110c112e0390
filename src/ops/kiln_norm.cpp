// Normalizations of the "kiln" domain, formed by the graph optimizer (src/passes/):
//
//   SkipLayerNorm(X, Skip, gamma, beta?, bias?) -> Y, Sum?
//       LayerNormalization over the last axis of S = X + Skip (+ bias), `epsilon` (default
//       1e-5): Y = (S - mean(S)) / sqrt(var(S) + epsilon) * gamma + beta. X and Skip have the
//       same shape [..., H]; gamma, beta and bias are [H]. The optional second output is S
//       itself, for when the residual sum has other readers (the next layer's skip input).
//       ONNX Runtime's com.microsoft.SkipLayerNormalization, with the sum as output 1 rather
//       than 3 (kiln has no use for the statistics outputs).
//
// Transformers read every residual Add only through the LayerNormalization after it (and the
// next residual Add); fusing the two keeps the sum from being written and read back.
//
// The reference kernel computes directly rather than calling the ai.onnx Add and
// LayerNormalization kernels, so this family's unit test links nothing else; it follows the
// LayerNormalization reference (src/ops/norm.cpp): statistics in double, S rounded to the
// element type first, as the unfused Add would.
#include <cmath>
#include <string>
#include <vector>

#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

const char* const kParamNames[] = {"gamma", "beta", "bias"};

void infer_skip_layernorm(InferContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  const ir::TensorType& skip = ctx.input(1);
  DType dt = x.dtype != DType::Undefined ? x.dtype : skip.dtype;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    const DType t = ctx.input(i).dtype;
    if (t == DType::Undefined) continue;
    if (!dtype_is_float(t)) ctx.fail("inputs must be floating-point, got " + std::string(dtype_name(t)));
    if (dt != DType::Undefined && t != dt)
      ctx.fail("all inputs must have one dtype, got " + std::string(dtype_name(t)) + " and " + dtype_name(dt));
  }
  if (!ctx.has_input(2)) ctx.fail("gamma is required");
  if (x.rank_known && x.rank() == 0) ctx.fail("X must have rank >= 1 (normalized over its last axis)");
  // No broadcasting: Skip has X's shape exactly, and each dim takes whichever side is static.
  ir::TensorType out = ir::TensorType::unranked(dt);
  if (x.rank_known && skip.rank_known) {
    if (x.rank() != skip.rank()) ctx.fail("Skip " + skip.str() + " must have X's shape " + x.str());
    out = ir::TensorType(dt, x.dims);
    for (int i = 0; i < x.rank(); ++i) {
      const ir::Dim &a = x.dims[i], &b = skip.dims[i];
      if (a.is_static() && b.is_static() && a.value != b.value)
        ctx.fail("Skip " + skip.str() + " must have X's shape " + x.str());
      if (!a.is_static() && b.is_static()) out.dims[i] = b;
      else if (!a.is_static() && !a.is_symbolic() && b.is_symbolic()) out.dims[i] = b;
    }
  } else if (x.rank_known || skip.rank_known) {
    out = ir::TensorType(dt, x.rank_known ? x.dims : skip.dims);
  }
  if (out.rank_known && out.rank() == 0) ctx.fail("X must have rank >= 1 (normalized over its last axis)");
  const ir::Dim h = out.rank_known ? out.dims.back() : ir::Dim();
  for (int i = 2; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    const ir::TensorType& p = ctx.input(i);
    if (!p.rank_known) continue;
    if (p.rank() != 1) ctx.fail(std::string(kParamNames[i - 2]) + " must be 1-D [H], got " + p.str());
    if (p.dims[0].is_static() && h.is_static() && p.dims[0].value != h.value)
      ctx.fail(std::string(kParamNames[i - 2]) + " has " + p.dims[0].str() + " elements, X's last dim is " + h.str());
  }
  ctx.set_output(0, out);
  if (ctx.num_outputs() > 1 && ctx.has_output(1)) ctx.set_output(1, out);
}

void skip_layernorm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& skip = ctx.input(1);
  if (x.rank() == 0) ctx.fail("X must have rank >= 1 (normalized over its last axis)");
  if (skip.dims() != x.dims()) ctx.fail("Skip " + skip.describe() + " must have X's shape " + x.describe());
  const int64_t h = x.dim(x.rank() - 1);
  const int64_t rows = h ? x.numel() / h : 0;
  const Tensor* params[3] = {};
  for (int i = 2; i < ctx.num_inputs() && i < 5; ++i) {
    if (!ctx.has_input(i)) continue;
    params[i - 2] = &ctx.input(i);
    if (params[i - 2]->rank() != 1 || params[i - 2]->dim(0) != h)
      ctx.fail(std::string(kParamNames[i - 2]) + " must have shape [" + std::to_string(h) + "], got " +
               params[i - 2]->describe());
  }
  if (!params[0]) ctx.fail("gamma is required");
  for (const Tensor* t : {&skip, params[0], params[1], params[2]})
    if (t && t->dtype() != x.dtype()) ctx.fail("all inputs must have X's dtype " + std::string(dtype_name(x.dtype())));
  const double eps = ctx.node().attr_float("epsilon", 1e-5f);
  const bool want_sum = ctx.num_outputs() > 1 && ctx.has_output(1);
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    auto d = [](T v) { return static_cast<double>(static_cast<C>(v)); };
    const T *xp = x.data<T>(), *sp = skip.data<T>();
    const T* gp = params[0]->template data<T>();
    const T* bp = params[1] ? params[1]->template data<T>() : nullptr;
    const T* biasp = params[2] ? params[2]->template data<T>() : nullptr;
    T* yp = ctx.make_output(0, x.dtype(), x.dims()).template data<T>();
    T* sum_out = want_sum ? ctx.make_output(1, x.dtype(), x.dims()).template data<T>() : nullptr;
    std::vector<T> row(static_cast<size_t>(h));
    for (int64_t r = 0; r < rows; ++r) {
      double sum = 0, sq = 0;
      for (int64_t j = 0; j < h; ++j) {
        C v = static_cast<C>(xp[r * h + j]) + static_cast<C>(sp[r * h + j]);
        if (biasp) v += static_cast<C>(biasp[j]);
        row[j] = static_cast<T>(v);
        sum += d(row[j]);
      }
      const double mean = sum / static_cast<double>(h);
      for (int64_t j = 0; j < h; ++j) sq += (d(row[j]) - mean) * (d(row[j]) - mean);
      const double inv = 1.0 / std::sqrt(sq / static_cast<double>(h) + eps);
      for (int64_t j = 0; j < h; ++j) {
        const double v = (d(row[j]) - mean) * inv * d(gp[j]) + (bp ? d(bp[j]) : 0.0);
        yp[r * h + j] = static_cast<T>(static_cast<C>(v));
        if (sum_out) sum_out[r * h + j] = row[j];
      }
    }
  });
}

}  // namespace

KILN_REGISTER_OPS(kiln_norm) {
  reg.add({.name = "SkipLayerNorm", .domain = "kiln", .min_inputs = 3, .max_inputs = 5, .min_outputs = 1,
           .max_outputs = 2, .pattern = PatternKind::Opaque, .infer = infer_skip_layernorm,
           .kernel = skip_layernorm_kernel});
}

}  // namespace kiln::ops
