// Ops that make tensors: Constant, ConstantOfShape, Range, and the random generators
// (RandomNormal[Like], RandomUniform[Like], Multinomial, Bernoulli). The random ops are marked
// non-deterministic so inference never folds them into constants.
#include <cmath>
#include <random>

#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

std::vector<ir::Dim> fresh_dims(InferContext& ctx, int64_t n) {
  std::vector<ir::Dim> d;
  for (int64_t i = 0; i < n; ++i) d.push_back(ctx.fresh_dim());
  return d;
}

// ---------------------------------------------------------------- Constant

Tensor constant_value(const ir::Node& node) {
  static const char* kinds[] = {"value", "value_float", "value_floats", "value_int", "value_ints",
                                "value_string", "value_strings", "sparse_value"};
  int count = 0;
  for (const char* k : kinds) count += node.has_attr(k) ? 1 : 0;
  if (count != 1) throw Error(node.describe() + ": exactly one value attribute must be set, found " + std::to_string(count));
  if (node.has_attr("sparse_value")) throw UnsupportedError(node.describe() + ": sparse_value is not supported");
  if (node.has_attr("value")) return node.attr_tensor_required("value");
  if (node.has_attr("value_float")) return Tensor::scalar<float>(node.attr_float("value_float", 0));
  if (node.has_attr("value_int")) return Tensor::scalar<int64_t>(node.attr_int("value_int", 0));
  if (node.has_attr("value_string")) return Tensor::scalar<std::string>(node.attr_string("value_string", ""));
  if (node.has_attr("value_floats")) {
    auto v = node.attr_floats("value_floats");
    return Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v);
  }
  if (node.has_attr("value_ints")) {
    auto v = node.attr_ints("value_ints");
    return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
  }
  auto v = node.attr_strings("value_strings");
  return Tensor::from_vector<std::string>({static_cast<int64_t>(v.size())}, v);
}

// ---------------------------------------------------------------- ConstantOfShape

Tensor fill_value(const ir::Node& node) {
  if (!node.has_attr("value")) return Tensor::scalar<float>(0.f);
  const Tensor& v = node.attr_tensor_required("value");
  if (v.numel() != 1) throw Error(node.describe() + ": value must hold exactly one element");
  return v;
}

std::vector<int64_t> shape_of(const Tensor& t, const ir::Node& node) {
  if (t.rank() != 1) throw Error(node.describe() + ": shape input must be 1-D");
  if (t.dtype() != DType::Int64) throw Error(node.describe() + ": shape input must be int64");
  std::vector<int64_t> s = t.to_int64_vector();
  for (int64_t d : s)
    if (d < 0) throw Error(node.describe() + ": negative dim " + std::to_string(d) + " in shape");
  return s;
}

void infer_constant_of_shape(InferContext& ctx) {
  const DType dt = fill_value(ctx.node()).dtype();
  if (const Tensor* s = ctx.value(0)) {
    ctx.set_output(0, ir::TensorType::from_dims(dt, shape_of(*s, ctx.node())));
    return;
  }
  const ir::TensorType& st = ctx.input(0);
  if (st.rank_known && st.rank() == 1 && st.dims[0].is_static())
    ctx.set_output(0, dt, fresh_dims(ctx, st.dims[0].value));
  else
    ctx.set_output(0, ir::TensorType::unranked(dt));
}

void kernel_constant_of_shape(KernelContext& ctx) {
  const Tensor v = fill_value(ctx.node());
  Tensor& out = ctx.make_output(0, v.dtype(), shape_of(ctx.input(0), ctx.node()));
  dispatch_all(v.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T x = v.data<T>()[0];
    T* d = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) d[i] = x;
  });
}

// ---------------------------------------------------------------- Range

int64_t range_count(const Tensor& start, const Tensor& limit, const Tensor& delta, const ir::Node& node) {
  if (start.numel() != 1 || limit.numel() != 1 || delta.numel() != 1)
    throw Error(node.describe() + ": start, limit and delta must be scalars");
  if (start.dtype() != limit.dtype() || start.dtype() != delta.dtype())
    throw Error(node.describe() + ": start, limit and delta must have the same dtype");
  int64_t n;
  if (dtype_is_integer(start.dtype())) {
    const int64_t s = start.as_int64(0), l = limit.as_int64(0), d = delta.as_int64(0);
    if (d == 0) throw Error(node.describe() + ": delta cannot be 0");
    const int64_t span = l - s;
    n = span / d + ((span % d != 0 && ((span < 0) == (d < 0))) ? 1 : 0);
  } else {
    const double s = start.as_double(0), l = limit.as_double(0), d = delta.as_double(0);
    if (d == 0 || !std::isfinite(s) || !std::isfinite(l) || !std::isfinite(d))
      throw Error(node.describe() + ": delta must be non-zero and the bounds finite");
    const double c = std::ceil((l - s) / d);
    if (c > 1e10) throw Error(node.describe() + ": range too large");
    n = static_cast<int64_t>(c);
  }
  return std::max<int64_t>(n, 0);
}

void infer_range(InferContext& ctx) {
  const DType dt = ctx.input(0).dtype;
  if (ctx.value(0) && ctx.value(1) && ctx.value(2))
    ctx.set_output(0, dt, {ir::Dim(range_count(*ctx.value(0), *ctx.value(1), *ctx.value(2), ctx.node()))});
  else
    ctx.set_output(0, dt, {ctx.fresh_dim()});
}

void kernel_range(KernelContext& ctx) {
  const Tensor &s = ctx.input(0), &l = ctx.input(1), &d = ctx.input(2);
  const int64_t n = range_count(s, l, d, ctx.node());
  Tensor& out = ctx.make_output(0, s.dtype(), {n});
  dispatch_numeric(s.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const C start = static_cast<C>(s.data<T>()[0]), delta = static_cast<C>(d.data<T>()[0]);
    T* o = out.data<T>();
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(static_cast<C>(start + static_cast<C>(i) * delta));
  });
}

// ---------------------------------------------------------------- random ops

std::mt19937_64 make_rng(const ir::Node& node) {
  if (node.has_attr("seed")) {
    float s = node.attr_float("seed", 0);
    return std::mt19937_64(static_cast<uint64_t>(static_cast<int64_t>(s)));
  }
  return std::mt19937_64(std::random_device{}());
}

DType attr_dtype(const ir::Node& node, DType def) {
  return node.has_attr("dtype") ? dtype_from_onnx(static_cast<int32_t>(node.attr_int("dtype", 1))) : def;
}

template <typename Dist>
void fill_random(Tensor& out, Dist dist, std::mt19937_64& rng, const ir::Node& node) {
  if (!dtype_is_float(out.dtype()))
    throw Error(node.describe() + ": output dtype must be floating point, got " + dtype_name(out.dtype()));
  dispatch_float(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* d = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) d[i] = static_cast<T>(static_cast<compute_t<T>>(dist(rng)));
  });
}

std::vector<int64_t> attr_shape(const ir::Node& node) {
  if (!node.has_attr("shape")) throw Error(node.describe() + ": shape attribute is required");
  std::vector<int64_t> s = node.attr_ints("shape");
  for (int64_t d : s)
    if (d < 0) throw Error(node.describe() + ": negative dim in shape");
  return s;
}

// RandomNormal / RandomUniform and their *Like forms; `like` takes the shape from input 0.
void kernel_random(KernelContext& ctx, bool normal, bool like) {
  const ir::Node& n = ctx.node();
  std::vector<int64_t> dims = like ? ctx.input(0).dims() : attr_shape(n);
  const DType dt = attr_dtype(n, like ? ctx.input(0).dtype() : DType::Float);
  Tensor& out = ctx.make_output(0, dt, dims);
  std::mt19937_64 rng = make_rng(n);
  if (normal)
    fill_random(out, std::normal_distribution<double>(n.attr_float("mean", 0), n.attr_float("scale", 1)), rng, n);
  else
    fill_random(out, std::uniform_real_distribution<double>(n.attr_float("low", 0), n.attr_float("high", 1)), rng, n);
}

void infer_random(InferContext& ctx, bool like) {
  if (like) {
    infer_same_shape(ctx, attr_dtype(ctx.node(), ctx.input(0).dtype));
    return;
  }
  const DType dt = attr_dtype(ctx.node(), DType::Float);
  if (!dtype_is_float(dt)) ctx.fail("output dtype must be floating point");
  ctx.set_output(0, ir::TensorType::from_dims(dt, attr_shape(ctx.node())));
}

void infer_multinomial(InferContext& ctx) {
  const ir::TensorType& in = ctx.input(0);
  const DType dt = attr_dtype(ctx.node(), DType::Int32);
  if (dt != DType::Int32 && dt != DType::Int64) ctx.fail("dtype must be int32 or int64");
  const int64_t s = ctx.node().attr_int("sample_size", 1);
  ir::Dim batch = in.rank_known && in.rank() == 2 ? in.dims[0] : ctx.fresh_dim();
  if (in.rank_known && in.rank() != 2) ctx.fail("input must be 2-D [batch, classes]");
  ctx.set_output(0, dt, {batch, ir::Dim(s)});
}

void kernel_multinomial(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  if (in.rank() != 2) ctx.fail("input must be 2-D [batch, classes]");
  const DType dt = attr_dtype(ctx.node(), DType::Int32);
  if (dt != DType::Int32 && dt != DType::Int64) ctx.fail("dtype must be int32 or int64");
  const int64_t s = ctx.node().attr_int("sample_size", 1);
  if (s < 1) ctx.fail("sample_size must be positive");
  const int64_t B = in.dim(0), K = in.dim(1);
  if (K < 1) ctx.fail("needs at least one class");
  Tensor& out = ctx.make_output(0, dt, {B, s});
  std::mt19937_64 rng = make_rng(ctx.node());
  std::vector<double> w(K);
  for (int64_t b = 0; b < B; ++b) {
    // Input rows are unnormalized log-probabilities.
    double mx = -INFINITY;
    for (int64_t k = 0; k < K; ++k) mx = std::max(mx, in.as_double(b * K + k));
    for (int64_t k = 0; k < K; ++k) w[k] = std::exp(in.as_double(b * K + k) - mx);
    std::discrete_distribution<int64_t> dist(w.begin(), w.end());
    for (int64_t j = 0; j < s; ++j) {
      const int64_t v = dist(rng);
      if (dt == DType::Int32) out.data<int32_t>()[b * s + j] = static_cast<int32_t>(v);
      else out.data<int64_t>()[b * s + j] = v;
    }
  }
}

void kernel_bernoulli(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const DType dt = attr_dtype(ctx.node(), in.dtype());
  Tensor& out = ctx.make_output(0, dt, in.dims());
  std::mt19937_64 rng = make_rng(ctx.node());
  std::uniform_real_distribution<double> u(0, 1);
  dispatch_numeric_bool(dt, [&](auto tag) {
    using T = decltype(tag);
    T* d = out.data<T>();
    for (int64_t i = 0; i < in.numel(); ++i)
      d[i] = static_cast<T>(static_cast<compute_t<T>>(u(rng) < in.as_double(i) ? 1 : 0));
  });
}

}  // namespace

KILN_REGISTER_OPS(generator) {
  reg.add({.name = "Constant", .min_inputs = 0, .max_inputs = 0, .pattern = PatternKind::Opaque,
           .infer = [](InferContext& ctx) { ctx.set_output_value(0, constant_value(ctx.node())); },
           .kernel = [](KernelContext& ctx) { ctx.set_output(0, constant_value(ctx.node())); }});
  reg.add({.name = "ConstantOfShape", .since_version = 9, .min_inputs = 1, .max_inputs = 1,
           .pattern = PatternKind::Opaque, .infer = infer_constant_of_shape, .kernel = kernel_constant_of_shape});
  reg.add({.name = "Range", .since_version = 11, .min_inputs = 3, .max_inputs = 3, .pattern = PatternKind::Opaque,
           .infer = infer_range, .kernel = kernel_range});
  reg.add({.name = "RandomNormal", .min_inputs = 0, .max_inputs = 0, .pattern = PatternKind::Opaque,
           .infer = [](InferContext& ctx) { infer_random(ctx, false); },
           .kernel = [](KernelContext& ctx) { kernel_random(ctx, true, false); }, .deterministic = false});
  reg.add({.name = "RandomUniform", .min_inputs = 0, .max_inputs = 0, .pattern = PatternKind::Opaque,
           .infer = [](InferContext& ctx) { infer_random(ctx, false); },
           .kernel = [](KernelContext& ctx) { kernel_random(ctx, false, false); }, .deterministic = false});
  reg.add({.name = "RandomNormalLike", .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::Opaque,
           .infer = [](InferContext& ctx) { infer_random(ctx, true); },
           .kernel = [](KernelContext& ctx) { kernel_random(ctx, true, true); }, .deterministic = false});
  reg.add({.name = "RandomUniformLike", .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::Opaque,
           .infer = [](InferContext& ctx) { infer_random(ctx, true); },
           .kernel = [](KernelContext& ctx) { kernel_random(ctx, false, true); }, .deterministic = false});
  reg.add({.name = "Multinomial", .since_version = 7, .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::Opaque,
           .infer = infer_multinomial, .kernel = kernel_multinomial, .deterministic = false});
  reg.add({.name = "Bernoulli", .since_version = 15, .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::Opaque,
           .infer = [](InferContext& ctx) { infer_same_shape(ctx, attr_dtype(ctx.node(), ctx.input(0).dtype)); },
           .kernel = kernel_bernoulli, .deterministic = false});
}

}  // namespace kiln::ops
