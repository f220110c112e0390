// Activation functions: element-wise nonlinearities with scalar attributes, plus PRelu (a
// broadcast slope) and Clip (bounds as attributes or, from opset 11, as inputs).
#include <cmath>
#include <limits>
#include <type_traits>

#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

constexpr double kSqrt2 = 1.41421356237309504880;
constexpr double kSqrt2OverPi = 0.79788456080286535588;

// The op's parameters are read from the node once per kernel call: make(node) returns the
// element function (a generic lambda over float or double).
template <typename Make>
KernelFn float_unary_kernel(Make make) {
  return [make](KernelContext& ctx) {
    const Tensor& x = ctx.input(0);
    auto f = make(ctx.node());
    Tensor& o = ctx.make_output(0, x.dtype(), x.dims());
    dispatch_float(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      const T* pi = x.data<T>();
      T* po = o.data<T>();
      for (int64_t i = 0, n = x.numel(); i < n; ++i) po[i] = T(static_cast<C>(f(C(pi[i]))));
    });
  };
}

void infer_float_unary(InferContext& ctx) {
  DType d = ctx.input(0).dtype;
  if (d != DType::Undefined && !dtype_is_float(d)) ctx.fail("input must be a floating-point tensor, got " + dtype_name(d));
  infer_same_as_input(ctx);
}

void infer_numeric_unary(InferContext& ctx) {
  DType d = ctx.input(0).dtype;
  if (d != DType::Undefined && !dtype_is_float(d) && !dtype_is_integer(d))
    ctx.fail("input must be a numeric tensor, got " + dtype_name(d));
  infer_same_as_input(ctx);
}

template <typename Make>
void add_float_unary(Registry& reg, const char* name, int since, Make make, const char* domain = "") {
  reg.add({.name = name, .domain = domain, .since_version = since, .min_inputs = 1, .max_inputs = 1,
           .pattern = PatternKind::ElemWise, .infer = infer_float_unary, .kernel = float_unary_kernel(make)});
}

template <typename C>
C softplus(C x) {
  // log(1 + e^x) without overflow for large x.
  return x > C(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

// Gelu; `tanh` selects the tanh approximation.
auto make_gelu(bool tanh_approx) {
  return [tanh_approx](auto x) -> decltype(x) {
    using C = decltype(x);
    if (tanh_approx) {
      C inner = static_cast<C>(kSqrt2OverPi) * (x + C(0.044715) * x * x * x);
      return C(0.5) * x * (C(1) + std::tanh(inner));
    }
    return C(0.5) * x * (C(1) + std::erf(x / static_cast<C>(kSqrt2)));
  };
}

bool gelu_tanh(const ir::Node& n) {
  std::string a = n.attr_string("approximate", "none");
  if (a != "none" && a != "tanh") throw Error(n.describe() + ": approximate must be 'none' or 'tanh', got '" + a + "'");
  return a == "tanh";
}

void relu_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& o = ctx.make_output(0, x.dtype(), x.dims());
  dispatch_numeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* pi = x.data<T>();
    T* po = o.data<T>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) {
      C v = C(pi[i]);
      // NaN stays NaN (v < 0 is false).
      po[i] = v < C(0) ? T(C(0)) : pi[i];
    }
  });
}

// Opset 6's PRelu: a 1-D slope of X's channel count applies along the channel axis (1), not
// the last one.
bool legacy_channel_slope(int64_t opset, size_t x_rank, size_t slope_rank) {
  return opset < 7 && slope_rank == 1 && x_rank >= 3;
}

// PRelu: slope broadcasts to x (unidirectionally); the output has x's shape.
void prelu_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor s = ctx.input(1);
  if (legacy_channel_slope(ctx.opset(), x.dims().size(), s.dims().size()) && s.numel() > 1 && s.numel() == x.dim(1)) {
    std::vector<int64_t> d(static_cast<size_t>(x.rank() - 1), 1);
    d[0] = s.numel();
    s = s.reshaped(d);
  }
  if (x.dtype() != s.dtype())
    ctx.fail("slope must have X's element type, got " + dtype_name(s.dtype()) + " vs " + dtype_name(x.dtype()));
  if (broadcast_dims({x.dims(), s.dims()}, ctx.node()) != x.dims())
    ctx.fail("slope " + s.describe() + " does not broadcast to X " + x.describe());
  Tensor& o = ctx.make_output(0, x.dtype(), x.dims());
  dispatch_numeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* px = x.data<T>();
    const T* ps = s.data<T>();
    T* po = o.data<T>();
    auto f = [](T v, T sl) { return C(v) < C(0) ? T(static_cast<C>(C(v) * C(sl))) : v; };
    if (s.numel() == 1) {
      for (int64_t i = 0, n = x.numel(); i < n; ++i) po[i] = f(px[i], ps[0]);
    } else if (s.numel() == x.numel()) {
      for (int64_t i = 0, n = x.numel(); i < n; ++i) po[i] = f(px[i], ps[i]);
    } else {
      BroadcastWalker(x.dims(), {s.dims()}).run([&](int64_t i, const int64_t* off) { po[i] = f(px[i], ps[off[0]]); });
    }
  });
}

void infer_prelu(InferContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  const ir::TensorType& s = ctx.input(1);
  if (x.dtype != DType::Undefined && s.dtype != DType::Undefined && x.dtype != s.dtype)
    ctx.fail("slope must have X's element type, got " + dtype_name(s.dtype) + " vs " + dtype_name(x.dtype));
  const bool legacy = x.rank_known && s.rank_known && legacy_channel_slope(ctx.opset(), x.dims.size(), s.dims.size());
  if (x.rank_known && s.rank_known && !legacy) {
    if (s.rank() > x.rank()) ctx.fail("slope has higher rank than X");
    for (int i = 0; i < s.rank(); ++i) {
      const ir::Dim& sd = s.dims[i];
      const ir::Dim& xd = x.dims[x.rank() - s.rank() + i];
      if (sd.is_static() && xd.is_static() && sd.value != 1 && sd.value != xd.value)
        ctx.fail("slope " + s.str() + " does not broadcast to X " + x.str());
    }
  }
  infer_same_as_input(ctx);
}

// Clip's bounds: attributes before opset 11, optional scalar inputs from 11.
template <typename T>
void clip_bounds(const KernelContext& ctx, compute_t<T>& lo, compute_t<T>& hi) {
  using C = compute_t<T>;
  lo = std::numeric_limits<C>::lowest();
  hi = std::numeric_limits<C>::max();
  if (ctx.opset() < 11) {
    if constexpr (std::is_floating_point_v<C>) {
      lo = static_cast<C>(ctx.node().attr_float("min", -std::numeric_limits<float>::max()));
      hi = static_cast<C>(ctx.node().attr_float("max", std::numeric_limits<float>::max()));
    }
    return;
  }
  for (int k = 1; k <= 2; ++k) {
    if (!ctx.has_input(k)) continue;
    const Tensor& b = ctx.input(k);
    if (b.dtype() != ctx.input(0).dtype())
      ctx.fail(std::string(k == 1 ? "min" : "max") + " must have the input's element type, got " + dtype_name(b.dtype()));
    if (b.numel() != 1) ctx.fail(std::string(k == 1 ? "min" : "max") + " must be a scalar, got " + b.describe());
    (k == 1 ? lo : hi) = C(b.data<T>()[0]);
  }
}

void clip_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& o = ctx.make_output(0, x.dtype(), x.dims());
  dispatch_numeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    C lo, hi;
    clip_bounds<T>(ctx, lo, hi);
    const T* pi = x.data<T>();
    T* po = o.data<T>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) {
      C v = C(pi[i]);
      // numpy.clip order: max bound applied last, so min > max yields max.
      if (v < lo) v = lo;
      if (v > hi) v = hi;
      po[i] = T(v);
    }
  });
}

void infer_clip(InferContext& ctx) {
  DType d = ctx.input(0).dtype;
  if (ctx.opset() < 12 && d != DType::Undefined && !dtype_is_float(d))
    ctx.fail("input must be floating-point before opset 12, got " + dtype_name(d));
  infer_numeric_unary(ctx);
  for (int k = 1; k <= 2 && k < ctx.num_inputs(); ++k) {
    if (!ctx.has_input(k)) continue;
    const ir::TensorType& b = ctx.input(k);
    if (b.dtype != DType::Undefined && d != DType::Undefined && b.dtype != d)
      ctx.fail(std::string(k == 1 ? "min" : "max") + " must have the input's element type, got " + dtype_name(b.dtype));
    if (b.rank_known) {
      auto n = b.static_numel();
      if (n && *n != 1) ctx.fail(std::string(k == 1 ? "min" : "max") + " must be a scalar, got " + b.str());
    }
  }
}

void shrink_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const double bias = ctx.node().attr_float("bias", 0.f);
  const double lambd = ctx.node().attr_float("lambd", 0.5f);
  Tensor& o = ctx.make_output(0, x.dtype(), x.dims());
  dispatch_numeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* pi = x.data<T>();
    T* po = o.data<T>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) {
      // In double so integer inputs get the spec's arithmetic before the cast back.
      double v = static_cast<double>(C(pi[i]));
      double r = v < -lambd ? v + bias : (v > lambd ? v - bias : 0.0);
      po[i] = T(static_cast<C>(r));
    }
  });
}

}  // namespace

KILN_REGISTER_OPS(activation) {
  reg.add({.name = "Relu", .since_version = 1, .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::ElemWise,
           .infer = infer_numeric_unary, .kernel = relu_kernel});
  add_float_unary(reg, "LeakyRelu", 1, [](const ir::Node& n) {
    float alpha = n.attr_float("alpha", 0.01f);
    return [alpha](auto x) -> decltype(x) { return x < 0 ? static_cast<decltype(x)>(alpha) * x : x; };
  });
  reg.add({.name = "PRelu", .since_version = 6, .min_inputs = 2, .max_inputs = 2, .pattern = PatternKind::Broadcast,
           .infer = infer_prelu, .kernel = prelu_kernel});
  add_float_unary(reg, "Elu", 1, [](const ir::Node& n) {
    float alpha = n.attr_float("alpha", 1.f);
    return [alpha](auto x) -> decltype(x) {
      using C = decltype(x);
      return x < 0 ? static_cast<C>(alpha) * (std::exp(x) - C(1)) : x;
    };
  });
  add_float_unary(reg, "Selu", 1, [](const ir::Node& n) {
    float alpha = n.attr_float("alpha", 1.67326319217681884765625f);
    float gamma = n.attr_float("gamma", 1.05070102214813232421875f);
    return [alpha, gamma](auto x) -> decltype(x) {
      using C = decltype(x);
      return static_cast<C>(gamma) * (x > 0 ? x : static_cast<C>(alpha) * (std::exp(x) - C(1)));
    };
  });
  add_float_unary(reg, "Celu", 12, [](const ir::Node& n) {
    float alpha = n.attr_float("alpha", 1.f);
    if (alpha == 0) throw Error(n.describe() + ": alpha must not be 0");
    return [alpha](auto x) -> decltype(x) {
      using C = decltype(x);
      C a = static_cast<C>(alpha);
      return std::max(C(0), x) + std::min(C(0), a * (std::exp(x / a) - C(1)));
    };
  });
  add_float_unary(reg, "Sigmoid", 1, [](const ir::Node&) {
    return [](auto x) -> decltype(x) {
      using C = decltype(x);
      // Both branches avoid overflow of exp for large |x|.
      if (x >= 0) return C(1) / (C(1) + std::exp(-x));
      C e = std::exp(x);
      return e / (C(1) + e);
    };
  });
  add_float_unary(reg, "HardSigmoid", 1, [](const ir::Node& n) {
    float alpha = n.attr_float("alpha", 0.2f);
    float beta = n.attr_float("beta", 0.5f);
    return [alpha, beta](auto x) -> decltype(x) {
      using C = decltype(x);
      return std::max(C(0), std::min(C(1), static_cast<C>(alpha) * x + static_cast<C>(beta)));
    };
  });
  add_float_unary(reg, "HardSwish", 14, [](const ir::Node&) {
    return [](auto x) -> decltype(x) {
      using C = decltype(x);
      return x * std::max(C(0), std::min(C(1), x / C(6) + C(0.5)));
    };
  });
  add_float_unary(reg, "Tanh", 1, [](const ir::Node&) { return [](auto x) -> decltype(x) { return std::tanh(x); }; });
  add_float_unary(reg, "Softplus", 1, [](const ir::Node&) { return [](auto x) -> decltype(x) { return softplus(x); }; });
  add_float_unary(reg, "Softsign", 1, [](const ir::Node&) {
    return [](auto x) -> decltype(x) { return x / (decltype(x)(1) + std::abs(x)); };
  });
  add_float_unary(reg, "ThresholdedRelu", 10, [](const ir::Node& n) {
    float alpha = n.attr_float("alpha", 1.f);
    return [alpha](auto x) -> decltype(x) { return x > static_cast<decltype(x)>(alpha) ? x : decltype(x)(0); };
  });
  add_float_unary(reg, "Mish", 18, [](const ir::Node&) {
    return [](auto x) -> decltype(x) { return x * std::tanh(softplus(x)); };
  });
  // Swish (opset 24): x * sigmoid(alpha * x).
  add_float_unary(reg, "Swish", 24, [](const ir::Node& n) {
    const float alpha = n.attr_float("alpha", 1.f);
    return [alpha](auto x) -> decltype(x) {
      using C = decltype(x);
      return x / (C(1) + std::exp(-static_cast<C>(alpha) * x));
    };
  });
  reg.add({.name = "Shrink", .since_version = 9, .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::ElemWise,
           .infer = infer_numeric_unary, .kernel = shrink_kernel});

  // Gelu is an opset-20 op; registered from opset 1 so the optimizer can form it in older
  // models. com.microsoft's contrib Gelu is the exact (erf) form.
  reg.add({.name = "Gelu", .since_version = 1, .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::ElemWise,
           .infer = [](InferContext& ctx) {
             gelu_tanh(ctx.node());
             infer_float_unary(ctx);
           },
           .kernel = float_unary_kernel([](const ir::Node& n) { return make_gelu(gelu_tanh(n)); })});
  add_float_unary(reg, "Gelu", 1, [](const ir::Node&) { return make_gelu(false); }, "com.microsoft");

  reg.add({.name = "Clip", .since_version = 1, .min_inputs = 1, .max_inputs = 3, .pattern = PatternKind::ElemWise,
           .infer = infer_clip, .kernel = clip_kernel});
}

}  // namespace kiln::ops
