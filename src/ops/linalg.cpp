// Linear algebra: Det (opset 11), the determinant of each square matrix in a [*, M, M] batch.
//
// LU decomposition with partial pivoting, in double whatever the element type: the
// determinant is the product of the pivots, negated once per row swap.
#include <cmath>
#include <utility>

#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

void infer_det(InferContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (x.dtype != DType::Undefined && !dtype_is_float(x.dtype))
    ctx.fail("input must be a floating-point tensor, got " + x.str());
  if (!x.rank_known) {
    ctx.set_output(0, ir::TensorType::unranked(x.dtype));
    return;
  }
  if (x.rank() < 2) ctx.fail("input must have rank >= 2 ([*, M, M]), got " + x.str());
  const ir::Dim& m = x.dims[x.rank() - 2];
  const ir::Dim& n = x.dims[x.rank() - 1];
  if ((m.is_static() && n.is_static() && m.value != n.value))
    ctx.fail("the last two dims must be square, got " + x.str());
  ctx.set_output(0, x.dtype, std::vector<ir::Dim>(x.dims.begin(), x.dims.end() - 2));
}

double determinant(std::vector<double>& a, int64_t m) {
  double det = 1;
  for (int64_t k = 0; k < m; ++k) {
    int64_t piv = k;
    for (int64_t r = k + 1; r < m; ++r)
      if (std::fabs(a[r * m + k]) > std::fabs(a[piv * m + k])) piv = r;
    if (a[piv * m + k] == 0) return 0;
    if (piv != k) {
      for (int64_t c = 0; c < m; ++c) std::swap(a[k * m + c], a[piv * m + c]);
      det = -det;
    }
    const double p = a[k * m + k];
    det *= p;
    for (int64_t r = k + 1; r < m; ++r) {
      const double f = a[r * m + k] / p;
      if (f == 0) continue;
      for (int64_t c = k + 1; c < m; ++c) a[r * m + c] -= f * a[k * m + c];
    }
  }
  return det;
}

void det_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("input must have rank >= 2 ([*, M, M]), got " + x.describe());
  const int64_t m = x.dim(x.rank() - 1);
  if (x.dim(x.rank() - 2) != m) ctx.fail("the last two dims must be square, got " + x.describe());
  std::vector<int64_t> out_dims(x.dims().begin(), x.dims().end() - 2);
  const int64_t batch = product(out_dims);
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    T* yp = ctx.make_output(0, x.dtype(), out_dims).template data<T>();
    std::vector<double> a(static_cast<size_t>(m * m));
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t i = 0; i < m * m; ++i) a[i] = static_cast<double>(static_cast<compute_t<T>>(xp[b * m * m + i]));
      yp[b] = static_cast<T>(static_cast<compute_t<T>>(determinant(a, m)));
    }
  });
}

}  // namespace

KILN_REGISTER_OPS(linalg) {
  reg.add({.name = "Det", .since_version = 11, .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::Opaque,
           .infer = infer_det, .kernel = det_kernel});
}

}  // namespace kiln::ops
