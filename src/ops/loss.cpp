// Loss functions: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opset 12/13).
//
// Both read an input laid out [N, C, d1..dk] (C = classes) and a target [N, d1..dk] of class
// indices; viewed as [N, C, D] and [N, D] with D = d1*..*dk. SoftmaxCrossEntropyLoss is
// LogSoftmax over the class axis followed by NegativeLogLikelihoodLoss, so one kernel does
// the loss part of both. Sums are accumulated in double.
#include <cmath>
#include <limits>
#include <optional>

#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

enum class Reduction { None, Sum, Mean };

template <typename Ctx>
Reduction reduction_of(const Ctx& ctx) {
  const std::string r = ctx.node().attr_string("reduction", "mean");
  if (r == "none") return Reduction::None;
  if (r == "sum") return Reduction::Sum;
  if (r == "mean") return Reduction::Mean;
  ctx.fail("reduction must be 'none', 'sum' or 'mean', got '" + r + "'");
}

std::optional<int64_t> ignore_index_of(const ir::Node& n) {
  if (!n.has_attr("ignore_index")) return std::nullopt;
  return n.attr_int("ignore_index", 0);
}

// Shared inference: input [N, C, d...], target [N, d...], optional weight [C]. Output 0 is
// the loss (target's shape for reduction none, else a scalar); output 1, when `log_prob_out`,
// has the input's type.
void infer_loss(InferContext& ctx, bool log_prob_out) {
  const ir::TensorType& x = ctx.input(0);
  const ir::TensorType& t = ctx.input(1);
  if (x.dtype != DType::Undefined && !dtype_is_float(x.dtype))
    ctx.fail("input must be a floating-point tensor, got " + x.str());
  if (t.dtype != DType::Undefined && t.dtype != DType::Int32 && t.dtype != DType::Int64)
    ctx.fail("target must be int32 or int64, got " + t.str());
  if (x.rank_known && x.rank() < 2) ctx.fail("input must have rank >= 2 (N x C x ...), got " + x.str());
  if (t.rank_known && t.rank() < 1) ctx.fail("target must have rank >= 1 (N x ...), got " + t.str());
  if (x.rank_known && t.rank_known && t.rank() != x.rank() - 1)
    ctx.fail("target rank must be input rank - 1: input " + x.str() + ", target " + t.str());
  const Reduction red = reduction_of(ctx);
  ignore_index_of(ctx.node());  // validates the attribute kind

  // The loss's dims: target's, preferring whichever of input/target has the static extent.
  std::vector<ir::Dim> dims;
  bool rank_known = t.rank_known || x.rank_known;
  if (rank_known) {
    const int r = t.rank_known ? t.rank() : x.rank() - 1;
    for (int i = 0; i < r; ++i) {
      ir::Dim td = t.rank_known ? t.dims[i] : ir::Dim();
      ir::Dim xd = x.rank_known ? x.dims[i == 0 ? 0 : i + 1] : ir::Dim();
      if (td.is_static() && xd.is_static() && td.value != xd.value)
        ctx.fail("target " + t.str() + " does not match input " + x.str() + " at dim " + std::to_string(i));
      if (td.is_static()) dims.push_back(td);
      else if (xd.is_static()) dims.push_back(xd);
      else if (td.is_symbolic()) dims.push_back(td);
      else if (xd.is_symbolic()) dims.push_back(xd);
      else dims.push_back(ctx.fresh_dim());
    }
  }
  if (ctx.has_input(2)) {
    const ir::TensorType& w = ctx.input(2);
    if (w.dtype != DType::Undefined && x.dtype != DType::Undefined && w.dtype != x.dtype)
      ctx.fail("weight dtype must match input's: weight " + w.str() + ", input " + x.str());
    if (w.rank_known) {
      if (w.rank() != 1) ctx.fail("weight must be 1-D [C], got " + w.str());
      if (x.rank_known && x.dims[1].is_static() && w.dims[0].is_static() && w.dims[0].value != x.dims[1].value)
        ctx.fail("weight " + w.str() + " must have C = " + x.dims[1].str() + " entries");
    }
  }
  if (red != Reduction::None) ctx.set_output(0, x.dtype, {});
  else if (rank_known) ctx.set_output(0, x.dtype, dims);
  else ctx.set_output(0, ir::TensorType::unranked(x.dtype));
  if (log_prob_out && ctx.has_output(1)) ctx.set_output(1, x);
}

struct LossLayout {
  int64_t n, c, d;
};

LossLayout check_loss_inputs(const KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& t = ctx.input(1);
  if (!dtype_is_float(x.dtype())) ctx.fail("input must be a floating-point tensor, got " + x.describe());
  if (t.dtype() != DType::Int32 && t.dtype() != DType::Int64)
    ctx.fail("target must be int32 or int64, got " + t.describe());
  if (x.rank() < 2) ctx.fail("input must have rank >= 2 (N x C x ...), got " + x.describe());
  bool ok = t.rank() == x.rank() - 1 && t.dim(0) == x.dim(0);
  for (int i = 1; ok && i < t.rank(); ++i) ok = t.dim(i) == x.dim(i + 1);
  if (!ok) ctx.fail("target " + t.describe() + " must be input " + x.describe() + " without its class axis");
  const int64_t c = x.dim(1);
  if (ctx.has_input(2)) {
    const Tensor& w = ctx.input(2);
    if (w.dtype() != x.dtype()) ctx.fail("weight dtype must match input's, got " + w.describe());
    if (w.rank() != 1 || w.dim(0) != c)
      ctx.fail("weight must have shape [" + std::to_string(c) + "], got " + w.describe());
  }
  return {x.dim(0), c, product(x.dims(), 2)};
}

// The NLL part: loss[n, d] = -logp[n, target[n, d], d] * weight[target]; ignored targets give
// 0 and weigh nothing in the mean.
template <typename T>
void nll_typed(KernelContext& ctx, const LossLayout& l, const T* logp) {
  using C = compute_t<T>;
  const Tensor& target = ctx.input(1);
  const Tensor& x = ctx.input(0);
  const Reduction red = reduction_of(ctx);
  const std::optional<int64_t> ignore = ignore_index_of(ctx.node());
  const T* wp = ctx.has_input(2) ? ctx.input(2).data<T>() : nullptr;
  std::vector<int64_t> tgt = target.to_int64_vector();

  std::vector<C> loss(static_cast<size_t>(l.n * l.d));
  double sum = 0, wsum = 0;
  for (int64_t n = 0; n < l.n; ++n)
    for (int64_t d = 0; d < l.d; ++d) {
      const int64_t k = tgt[n * l.d + d];
      if (ignore && k == *ignore) continue;
      if (k < 0 || k >= l.c)
        ctx.fail("target " + std::to_string(k) + " is outside the class range [0, " + std::to_string(l.c) + ")");
      const C w = wp ? static_cast<C>(wp[k]) : C(1);
      const C v = -static_cast<C>(logp[(n * l.c + k) * l.d + d]) * w;
      loss[n * l.d + d] = v;
      sum += static_cast<double>(v);
      wsum += static_cast<double>(w);
    }
  if (red == Reduction::None) {
    T* out = ctx.make_output(0, x.dtype(), target.dims()).template data<T>();
    for (size_t i = 0; i < loss.size(); ++i) out[i] = static_cast<T>(loss[i]);
    return;
  }
  // A mean over nothing (every target ignored) is 0/0 = NaN, as the ONNX reference computes.
  const double v = red == Reduction::Sum ? sum : sum / wsum;
  ctx.make_output(0, x.dtype(), {}).template data<T>()[0] = static_cast<T>(static_cast<C>(v));
}

void nll_kernel(KernelContext& ctx) {
  const LossLayout l = check_loss_inputs(ctx);
  dispatch_float(ctx.input(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    nll_typed<T>(ctx, l, ctx.input(0).data<T>());
  });
}

void sce_kernel(KernelContext& ctx) {
  const LossLayout l = check_loss_inputs(ctx);
  const Tensor& x = ctx.input(0);
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    // Log-softmax over the class axis, read row by row so the inner loop runs over D.
    Tensor logp(x.dtype(), x.dims());
    const T* xp = x.data<T>();
    T* lp = logp.data<T>();
    std::vector<double> mx(l.d), sum(l.d);
    for (int64_t n = 0; n < l.n; ++n) {
      const T* xb = xp + n * l.c * l.d;
      T* lb = lp + n * l.c * l.d;
      std::fill(mx.begin(), mx.end(), -std::numeric_limits<double>::infinity());
      std::fill(sum.begin(), sum.end(), 0.0);
      for (int64_t c = 0; c < l.c; ++c)
        for (int64_t d = 0; d < l.d; ++d) mx[d] = std::max(mx[d], static_cast<double>(static_cast<C>(xb[c * l.d + d])));
      for (int64_t c = 0; c < l.c; ++c)
        for (int64_t d = 0; d < l.d; ++d) sum[d] += std::exp(static_cast<double>(static_cast<C>(xb[c * l.d + d])) - mx[d]);
      for (int64_t c = 0; c < l.c; ++c)
        for (int64_t d = 0; d < l.d; ++d)
          lb[c * l.d + d] = static_cast<T>(static_cast<C>(static_cast<double>(static_cast<C>(xb[c * l.d + d])) - mx[d] - std::log(sum[d])));
    }
    nll_typed<T>(ctx, l, lp);
    if (ctx.has_output(1)) ctx.set_output(1, logp);
  });
}

}  // namespace

KILN_REGISTER_OPS(loss) {
  reg.add({.name = "NegativeLogLikelihoodLoss", .since_version = 12, .min_inputs = 2, .max_inputs = 3,
           .pattern = PatternKind::Opaque,
           .infer = [](InferContext& ctx) { infer_loss(ctx, false); }, .kernel = nll_kernel});
  reg.add({.name = "SoftmaxCrossEntropyLoss", .since_version = 12, .min_inputs = 2, .max_inputs = 3,
           .min_outputs = 1, .max_outputs = 2, .pattern = PatternKind::Opaque,
           .infer = [](InferContext& ctx) { infer_loss(ctx, true); }, .kernel = sce_kernel});
}

}  // namespace kiln::ops
