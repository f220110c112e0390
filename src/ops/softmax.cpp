// Softmax, LogSoftmax and Hardmax.
//
// Before opset 13 the input is coerced to 2-D at `axis` (default 1) and normalized over the
// flattened trailing dims [axis, rank); from opset 13 over the single axis `axis` (default -1).
// TVM treats softmax as OutEWiseFusable: elementwise consumers may fuse into its output.
// Both forms are a normalization over a block of `n` elements at stride `inner`, repeated
// `outer` times, so one kernel serves both.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

enum class SoftmaxKind { Softmax, LogSoftmax, Hardmax };

struct Layout {
  int64_t outer, n, inner;
};

template <typename Ctx>
Layout layout_of(const Ctx& ctx, const std::vector<int64_t>& dims) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  const bool legacy = ctx.opset() < 13;
  const int64_t axis_attr = ctx.node().attr_int("axis", legacy ? 1 : -1);
  if (legacy) {
    // The legacy form allows axis == rank (a [N, 1] view); a scalar counts as rank 1.
    const int64_t r = std::max<int64_t>(rank, 1);
    if (axis_attr < -r || axis_attr > r)
      ctx.fail("axis " + std::to_string(axis_attr) + " is out of range for rank " + std::to_string(rank));
    const int64_t axis = axis_attr < 0 ? axis_attr + r : axis_attr;
    return {product(dims, 0, axis), product(dims, axis), 1};
  }
  if (rank == 0) ctx.fail("input must have rank >= 1");
  const int64_t axis = normalize_axis(axis_attr, rank, ctx.node());
  return {product(dims, 0, axis), dims[axis], product(dims, axis + 1)};
}

void infer_softmax(InferContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (!dtype_is_float(x.dtype) && x.dtype != DType::Undefined)
    ctx.fail("input must be a floating-point tensor, got " + dtype_name(x.dtype));
  if (x.rank_known) {
    // Validates the axis against the rank; extents do not matter for it.
    std::vector<int64_t> dims(x.rank(), 1);
    layout_of(ctx, dims);
  }
  infer_same_as_input(ctx);
}

template <typename T>
void softmax_typed(SoftmaxKind kind, const Layout& l, const T* xp, T* yp) {
  using C = compute_t<T>;
  // Per-column scratch so each block is read row by row (contiguous over `inner`).
  std::vector<C> mx(l.inner), sum(l.inner);
  std::vector<int64_t> arg(l.inner);
  for (int64_t o = 0; o < l.outer; ++o) {
    const T* xb = xp + o * l.n * l.inner;
    T* yb = yp + o * l.n * l.inner;
    std::fill(mx.begin(), mx.end(), -std::numeric_limits<C>::infinity());
    std::fill(arg.begin(), arg.end(), 0);
    for (int64_t j = 0; j < l.n; ++j)
      for (int64_t i = 0; i < l.inner; ++i) {
        C v = static_cast<C>(xb[j * l.inner + i]);
        if (v > mx[i]) { mx[i] = v; arg[i] = j; }
      }
    if (kind == SoftmaxKind::Hardmax) {
      for (int64_t j = 0; j < l.n; ++j)
        for (int64_t i = 0; i < l.inner; ++i) yb[j * l.inner + i] = static_cast<T>(C(arg[i] == j ? 1 : 0));
      continue;
    }
    std::fill(sum.begin(), sum.end(), C(0));
    for (int64_t j = 0; j < l.n; ++j)
      for (int64_t i = 0; i < l.inner; ++i) {
        C e = std::exp(static_cast<C>(xb[j * l.inner + i]) - mx[i]);
        sum[i] += e;
        if (kind == SoftmaxKind::Softmax) yb[j * l.inner + i] = static_cast<T>(e);
      }
    for (int64_t j = 0; j < l.n; ++j)
      for (int64_t i = 0; i < l.inner; ++i) {
        T& y = yb[j * l.inner + i];
        if (kind == SoftmaxKind::Softmax) y = static_cast<T>(static_cast<C>(y) / sum[i]);
        else y = static_cast<T>(static_cast<C>(xb[j * l.inner + i]) - mx[i] - std::log(sum[i]));
      }
  }
}

template <SoftmaxKind Kind>
void softmax_kernel(KernelContext& ctx) {
  const kiln::Tensor& x = ctx.input(0);
  const Layout l = layout_of(ctx, x.dims());
  kiln::Tensor& y = ctx.make_output(0, x.dtype(), x.dims());
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    softmax_typed<T>(Kind, l, x.data<T>(), y.data<T>());
  });
}

}  // namespace

KILN_REGISTER_OPS(softmax) {
  reg.add({.name = "Softmax", .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::OutEWiseFusable,
           .infer = infer_softmax, .kernel = softmax_kernel<SoftmaxKind::Softmax>});
  reg.add({.name = "LogSoftmax", .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::OutEWiseFusable,
           .infer = infer_softmax, .kernel = softmax_kernel<SoftmaxKind::LogSoftmax>});
  reg.add({.name = "Hardmax", .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::OutEWiseFusable,
           .infer = infer_softmax, .kernel = softmax_kernel<SoftmaxKind::Hardmax>});
}

}  // namespace kiln::ops
