// ai.onnx.ml ops: Binarizer and ArrayFeatureExtractor (ML opset 1).
#include <kiln/error.h>

#include <string>
#include <vector>

#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

// ---------------------------------------------------------------- Binarizer: x > threshold ? 1 : 0

void binarizer_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const double threshold = ctx.node().attr_float("threshold", 0.f);
  dispatch_numeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = ctx.make_output(0, x.dtype(), x.dims()).template data<T>();
    for (int64_t i = 0; i < x.numel(); ++i)
      py[i] = static_cast<double>(static_cast<compute_t<T>>(px[i])) > threshold ? T(1) : T(0);
  });
}

// ---------------------------------------------------------------- ArrayFeatureExtractor

// Y [..., k]: X's elements at the k indices along its last axis (all of Y's elements, in
// order); a 1-D X gives [1, k].
void infer_array_feature_extractor(InferContext& ctx) {
  const ir::TensorType &x = ctx.input(0), &idx = ctx.input(1);
  if (idx.dtype != DType::Int64) ctx.fail("indices must be int64, got " + idx.str());
  if (!x.rank_known || !idx.rank_known || !idx.is_static()) return ctx.set_output(0, ir::TensorType::unranked(x.dtype));
  const int64_t k = product(idx.static_dims());
  std::vector<ir::Dim> dims = x.rank() <= 1 ? std::vector<ir::Dim>{ir::Dim(1)} : std::vector<ir::Dim>(x.dims.begin(), x.dims.end() - 1);
  dims.push_back(ir::Dim(k));
  ctx.set_output(0, x.dtype, dims);
}

void array_feature_extractor_kernel(KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &idx = ctx.input(1);
  if (x.rank() < 1) ctx.fail("X must have rank >= 1, got " + x.describe());
  const int64_t last = x.dims().back(), rows = x.numel() / std::max<int64_t>(last, 1), k = idx.numel();
  const std::vector<int64_t> ix = idx.to_int64_vector();
  for (int64_t i : ix)
    if (i < 0 || i >= last) ctx.fail("index " + std::to_string(i) + " is outside the last axis of " + x.describe());
  std::vector<int64_t> dims = x.rank() == 1 ? std::vector<int64_t>{1} : std::vector<int64_t>(x.dims().begin(), x.dims().end() - 1);
  dims.push_back(k);
  dispatch_all(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = ctx.make_output(0, x.dtype(), dims).template data<T>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < k; ++j) py[r * k + j] = px[r * last + ix[j]];
  });
}

}  // namespace

KILN_REGISTER_OPS(ml) {
  reg.add({.name = "Binarizer", .domain = "ai.onnx.ml", .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::ElemWise,
           .infer = infer_same_as_input, .kernel = binarizer_kernel});
  reg.add({.name = "ArrayFeatureExtractor", .domain = "ai.onnx.ml", .min_inputs = 2, .max_inputs = 2,
           .pattern = PatternKind::Opaque, .infer = infer_array_feature_extractor, .kernel = array_feature_extractor_kernel});
}

}  // namespace kiln::ops
