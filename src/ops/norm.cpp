// Normalizations: BatchNormalization, LayerNormalization, InstanceNormalization,
// GroupNormalization, RMSNormalization, LpNormalization, LRN and MeanVarianceNormalization.
//
// Statistics are accumulated in double whatever the element type; per-channel parameters
// (scale, bias, mean, var) are read as double too, which also covers BatchNormalization-15
// where they may have another float type than X.
#include <algorithm>
#include <cmath>

#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

std::vector<double> to_doubles(const kiln::Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.as_double(i);
  return v;
}

template <typename Ctx>
void require_float(const Ctx& ctx, DType t, const char* what) {
  if (t != DType::Undefined && !dtype_is_float(t))
    ctx.fail(std::string(what) + " must be a floating-point tensor, got " + dtype_name(t));
}

// Checks (at inference) that input i is 1-D with `extent` elements when both are known.
void check_vector_input(InferContext& ctx, int i, const ir::Dim& extent, const char* what) {
  if (!ctx.has_input(i)) return;
  const ir::TensorType& t = ctx.input(i);
  require_float(ctx, t.dtype, what);
  if (!t.rank_known) return;
  if (t.rank() != 1) ctx.fail(std::string(what) + " must be 1-D, got " + t.str());
  if (t.dims[0].is_static() && extent.is_static() && t.dims[0].value != extent.value)
    ctx.fail(std::string(what) + " has " + t.dims[0].str() + " elements, expected " + extent.str());
}

// Same check on concrete tensors in a kernel.
void check_vector(const KernelContext& ctx, const kiln::Tensor& t, int64_t extent, const char* what) {
  if (t.rank() != 1 || t.dim(0) != extent)
    ctx.fail(std::string(what) + " must have shape [" + std::to_string(extent) + "], got " + t.describe());
}

// Writes a computed double back to a float type.
template <typename T>
T from_double(double v) {
  return static_cast<T>(static_cast<compute_t<T>>(v));
}

// ---------------------------------------------------------------- BatchNormalization

bool bn_training(const ir::Node& n, int64_t opset) {
  if (opset >= 14) return n.attr_int("training_mode", 0) != 0;
  if (opset < 7) return n.attr_int("is_test", 0) == 0;  // opset 6: is_test selects inference
  // Before opset 14 the extra statistics outputs are what selects training mode.
  for (int i = 1; i < n.num_outputs(); ++i)
    if (n.output(i)) return true;
  return false;
}

bool bn_spatial(const ir::Node& n, int64_t opset) { return opset >= 9 || n.attr_int("spatial", 1) != 0; }

void infer_batchnorm(InferContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  require_float(ctx, x.dtype, "X");
  if (x.rank_known && x.rank() < 2) ctx.fail("X must have rank >= 2 (N x C x ...), got " + x.str());
  const int64_t opset = ctx.opset();
  const bool training = bn_training(ctx.node(), opset);
  if (opset >= 14 && !training && (ctx.has_output(1) || ctx.has_output(2)))
    ctx.fail("running_mean/running_var outputs need training_mode=1");
  if (opset >= 14 && (ctx.has_output(3) || ctx.has_output(4)))
    ctx.fail("saved_mean/saved_var outputs were removed in opset 14");
  ir::Dim c = x.rank_known ? x.dims[1] : ir::Dim();
  std::vector<ir::Dim> param_dims{c};
  if (bn_spatial(ctx.node(), opset)) {
    const char* names[] = {"scale", "B", "mean", "var"};
    for (int i = 1; i <= 4; ++i) check_vector_input(ctx, i, c, names[i - 1]);
  } else {
    param_dims = x.rank_known ? std::vector<ir::Dim>(x.dims.begin() + 1, x.dims.end()) : std::vector<ir::Dim>{};
  }
  infer_same_as_input(ctx);
  const DType stat_type = ctx.input(3).dtype == DType::Undefined ? x.dtype : ctx.input(3).dtype;
  for (int i = 1; i < ctx.num_outputs(); ++i) {
    if (!ctx.has_output(i)) continue;
    if (!x.rank_known && !bn_spatial(ctx.node(), opset)) ctx.set_output(i, ir::TensorType::unranked(stat_type));
    else ctx.set_output(i, stat_type, param_dims);
  }
}

void batchnorm_kernel(KernelContext& ctx) {
  const kiln::Tensor& x = ctx.input(0);
  const int64_t opset = ctx.opset();
  if (x.rank() < 2) ctx.fail("X must have rank >= 2 (N x C x ...), got " + x.describe());
  const bool training = bn_training(ctx.node(), opset), spatial = bn_spatial(ctx.node(), opset);
  const double eps = ctx.node().attr_float("epsilon", 1e-5f);
  const double momentum = ctx.node().attr_float("momentum", 0.9f);
  const int64_t n = x.dim(0), c = x.dim(1), s = product(x.dims(), 2);
  // Non-spatial (opset 7-8, spatial=0): one set of statistics per (channel, position).
  const int64_t groups = spatial ? c : c * s;
  std::vector<int64_t> param_shape = spatial ? std::vector<int64_t>{c}
                                             : std::vector<int64_t>(x.dims().begin() + 1, x.dims().end());
  std::vector<std::vector<double>> p;
  const char* names[] = {"scale", "B", "mean", "var"};
  for (int i = 1; i <= 4; ++i) {
    const kiln::Tensor& t = ctx.input(i);
    if (!dtype_is_float(t.dtype())) ctx.fail(std::string(names[i - 1]) + " must be floating-point");
    if (t.numel() != groups || (spatial && t.rank() != 1))
      ctx.fail(std::string(names[i - 1]) + " has shape " + t.describe() + ", expected " +
               std::to_string(groups) + " elements");
    p.push_back(to_doubles(t));
  }
  std::vector<double> mean = p[2], var = p[3];
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    // Element (ni, ci, si) belongs to group ci (spatial) or ci * s + si (non-spatial).
    auto group_of = [&](int64_t ci, int64_t si) { return spatial ? ci : ci * s + si; };
    if (training) {
      std::vector<double> sum(groups, 0.0), sq(groups, 0.0);
      for (int64_t ni = 0; ni < n; ++ni)
        for (int64_t ci = 0; ci < c; ++ci)
          for (int64_t si = 0; si < s; ++si) {
            double v = static_cast<double>(static_cast<compute_t<T>>(xp[(ni * c + ci) * s + si]));
            int64_t g = group_of(ci, si);
            sum[g] += v;
          }
      const double count = static_cast<double>(spatial ? n * s : n);
      for (int64_t g = 0; g < groups; ++g) mean[g] = sum[g] / count;
      for (int64_t ni = 0; ni < n; ++ni)
        for (int64_t ci = 0; ci < c; ++ci)
          for (int64_t si = 0; si < s; ++si) {
            int64_t g = group_of(ci, si);
            double d = static_cast<double>(static_cast<compute_t<T>>(xp[(ni * c + ci) * s + si])) - mean[g];
            sq[g] += d * d;
          }
      for (int64_t g = 0; g < groups; ++g) var[g] = sq[g] / count;  // population variance, as ONNX
    }
    std::vector<double> a(groups), b(groups);
    for (int64_t g = 0; g < groups; ++g) {
      a[g] = p[0][g] / std::sqrt(var[g] + eps);
      b[g] = p[1][g] - mean[g] * a[g];
    }
    T* yp = ctx.make_output(0, x.dtype(), x.dims()).template data<T>();
    for (int64_t ni = 0; ni < n; ++ni)
      for (int64_t ci = 0; ci < c; ++ci) {
        const int64_t base = (ni * c + ci) * s;
        for (int64_t si = 0; si < s; ++si) {
          int64_t g = group_of(ci, si);
          yp[base + si] = from_double<T>(static_cast<double>(static_cast<compute_t<T>>(xp[base + si])) * a[g] + b[g]);
        }
      }
  });
  if (!training) return;
  auto emit = [&](int i, const std::vector<double>& v) {
    if (!ctx.has_output(i)) return;
    const DType dt = ctx.input(3).dtype();
    kiln::Tensor& t = ctx.make_output(i, dt, param_shape);
    dispatch_float(dt, [&](auto tag) {
      using T = decltype(tag);
      for (int64_t g = 0; g < groups; ++g) t.data<T>()[g] = from_double<T>(v[g]);
    });
  };
  std::vector<double> running_mean(groups), running_var(groups);
  for (int64_t g = 0; g < groups; ++g) {
    running_mean[g] = p[2][g] * momentum + mean[g] * (1 - momentum);
    running_var[g] = p[3][g] * momentum + var[g] * (1 - momentum);
  }
  emit(1, running_mean);
  emit(2, running_var);
  emit(3, mean);  // saved_mean/saved_var: opset < 14 only
  emit(4, var);
}

// ---------------------------------------------------------------- LayerNormalization

// The stash_type attribute (LayerNormalization, RMSNormalization): a floating-point type.
DType stash_type_of(InferContext& ctx) {
  const int64_t stash = ctx.node().attr_int("stash_type", 1);
  DType stat_type = DType::Float;
  try {
    stat_type = dtype_from_onnx(static_cast<int32_t>(stash));
  } catch (const Error&) {
    ctx.fail("stash_type " + std::to_string(stash) + " is not a data type");
  }
  require_float(ctx, stat_type, "stash_type");
  return stat_type;
}

// The statistics shape: X's dims with the normalized ones [axis, rank) set to 1.
void infer_layernorm(InferContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  require_float(ctx, x.dtype, "X");
  require_float(ctx, ctx.input(1).dtype, "Scale");
  const DType stat_type = stash_type_of(ctx);
  infer_same_as_input(ctx);
  if (!x.rank_known) {
    for (int i = 1; i <= 2; ++i) ctx.set_output(i, ir::TensorType::unranked(stat_type));
    return;
  }
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", -1), x.rank(), ctx.node());
  std::vector<ir::Dim> dims = x.dims;
  for (int64_t i = axis; i < x.rank(); ++i) dims[i] = 1;
  for (int i = 1; i <= 2; ++i) ctx.set_output(i, stat_type, dims);
}

// Expands a parameter (broadcastable to `norm` dims, right-aligned) to one value per
// normalized element.
std::vector<double> expand_param(const KernelContext& ctx, const kiln::Tensor& t, const std::vector<int64_t>& norm,
                                 const char* what) {
  std::vector<int64_t> td = t.dims();
  while (td.size() > norm.size() && td.front() == 1) td.erase(td.begin());
  bool ok = td.size() <= norm.size();
  for (size_t i = 0; ok && i < td.size(); ++i) {
    int64_t want = norm[norm.size() - td.size() + i];
    ok = td[i] == want || td[i] == 1;
  }
  if (!ok) ctx.fail(std::string(what) + " of shape " + t.describe() + " does not broadcast to the normalized shape");
  std::vector<double> src = to_doubles(t), out(static_cast<size_t>(product(norm)));
  BroadcastWalker w(norm, {td});
  w.run([&](int64_t i, const int64_t* off) { out[i] = src[off[0]]; });
  return out;
}

void layernorm_kernel(KernelContext& ctx) {
  const kiln::Tensor& x = ctx.input(0);
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", -1), x.rank(), ctx.node());
  const double eps = ctx.node().attr_float("epsilon", 1e-5f);
  const DType stat_type = dtype_from_onnx(static_cast<int32_t>(ctx.node().attr_int("stash_type", 1)));
  if (!dtype_is_float(stat_type)) ctx.fail("stash_type must be a floating-point type");
  const std::vector<int64_t> norm(x.dims().begin() + axis, x.dims().end());
  const int64_t outer = product(x.dims(), 0, axis), m = product(norm);
  std::vector<double> scale = expand_param(ctx, ctx.input(1), norm, "Scale");
  std::vector<double> bias = ctx.has_input(2) ? expand_param(ctx, ctx.input(2), norm, "B")
                                              : std::vector<double>(static_cast<size_t>(m), 0.0);
  std::vector<int64_t> stat_dims = x.dims();
  for (size_t i = axis; i < stat_dims.size(); ++i) stat_dims[i] = 1;
  std::vector<double> means(outer), invs(outer);
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    T* yp = ctx.make_output(0, x.dtype(), x.dims()).template data<T>();
    for (int64_t o = 0; o < outer; ++o) {
      const T* row = xp + o * m;
      double sum = 0, sq = 0;
      for (int64_t j = 0; j < m; ++j) sum += static_cast<double>(static_cast<compute_t<T>>(row[j]));
      const double mean = m ? sum / m : 0.0;
      for (int64_t j = 0; j < m; ++j) {
        double d = static_cast<double>(static_cast<compute_t<T>>(row[j])) - mean;
        sq += d * d;
      }
      const double inv = 1.0 / std::sqrt((m ? sq / m : 0.0) + eps);
      for (int64_t j = 0; j < m; ++j)
        yp[o * m + j] = from_double<T>((static_cast<double>(static_cast<compute_t<T>>(row[j])) - mean) * inv * scale[j] + bias[j]);
      means[o] = mean;
      invs[o] = inv;
    }
  });
  auto emit = [&](int i, const std::vector<double>& v) {
    if (!ctx.has_output(i)) return;
    kiln::Tensor& t = ctx.make_output(i, stat_type, stat_dims);
    dispatch_float(stat_type, [&](auto tag) {
      using T = decltype(tag);
      for (int64_t k = 0; k < outer; ++k) t.data<T>()[k] = from_double<T>(v[k]);
    });
  };
  emit(1, means);
  emit(2, invs);
}

// ---------------------------------------------------------------- Instance / Group norm

// Normalizes x viewed as [n, groups, m] over m, then applies per-channel scale/bias with the
// channel of element (ni, ch, si) = [N, C, S] view.
template <typename T>
void group_normalize(const kiln::Tensor& x, kiln::Tensor& y, int64_t groups, double eps,
                     const std::vector<double>& scale_c, const std::vector<double>& bias_c) {
  const int64_t n = x.dim(0), c = x.dim(1), s = product(x.dims(), 2);
  const int64_t m = c / groups * s;
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  for (int64_t b = 0; b < n * groups; ++b) {
    const T* in = xp + b * m;
    double sum = 0, sq = 0;
    for (int64_t j = 0; j < m; ++j) sum += static_cast<double>(static_cast<compute_t<T>>(in[j]));
    const double mean = m ? sum / m : 0.0;
    for (int64_t j = 0; j < m; ++j) {
      double d = static_cast<double>(static_cast<compute_t<T>>(in[j])) - mean;
      sq += d * d;
    }
    const double inv = 1.0 / std::sqrt((m ? sq / m : 0.0) + eps);
    const int64_t first_channel = (b % groups) * (c / groups);
    for (int64_t j = 0; j < m; ++j) {
      const int64_t ch = first_channel + j / s;
      double v = (static_cast<double>(static_cast<compute_t<T>>(in[j])) - mean) * inv;
      yp[b * m + j] = from_double<T>(v * scale_c[ch] + bias_c[ch]);
    }
  }
}

void infer_instancenorm(InferContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  require_float(ctx, x.dtype, "input");
  if (x.rank_known && x.rank() < 2) ctx.fail("input must have rank >= 2 (N x C x ...), got " + x.str());
  ir::Dim c = x.rank_known ? x.dims[1] : ir::Dim();
  check_vector_input(ctx, 1, c, "scale");
  check_vector_input(ctx, 2, c, "B");
  infer_same_as_input(ctx);
}

void instancenorm_kernel(KernelContext& ctx) {
  const kiln::Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("input must have rank >= 2 (N x C x ...), got " + x.describe());
  const int64_t c = x.dim(1);
  check_vector(ctx, ctx.input(1), c, "scale");
  check_vector(ctx, ctx.input(2), c, "B");
  const double eps = ctx.node().attr_float("epsilon", 1e-5f);
  std::vector<double> scale = to_doubles(ctx.input(1)), bias = to_doubles(ctx.input(2));
  kiln::Tensor& y = ctx.make_output(0, x.dtype(), x.dims());
  dispatch_float(x.dtype(), [&](auto tag) { group_normalize<decltype(tag)>(x, y, c, eps, scale, bias); });
}

// Opset 18 gives scale/bias per group; opset 21 per channel. Both are accepted (by size).
void infer_groupnorm(InferContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  require_float(ctx, x.dtype, "X");
  const int64_t g = ctx.node().attr_int_required("num_groups");
  if (g <= 0) ctx.fail("num_groups must be positive");
  if (x.rank_known) {
    if (x.rank() < 2) ctx.fail("X must have rank >= 2 (N x C x ...), got " + x.str());
    if (x.dims[1].is_static() && x.dims[1].value % g != 0)
      ctx.fail("channel count " + x.dims[1].str() + " is not divisible by num_groups " + std::to_string(g));
  }
  infer_same_as_input(ctx);
}

void groupnorm_kernel(KernelContext& ctx) {
  const kiln::Tensor& x = ctx.input(0);
  const int64_t g = ctx.node().attr_int_required("num_groups");
  if (x.rank() < 2) ctx.fail("X must have rank >= 2 (N x C x ...), got " + x.describe());
  const int64_t c = x.dim(1);
  if (g <= 0 || c % g != 0)
    ctx.fail("channel count " + std::to_string(c) + " is not divisible by num_groups " + std::to_string(g));
  std::vector<double> per_channel[2];
  const char* names[] = {"scale", "bias"};
  for (int i = 0; i < 2; ++i) {
    const kiln::Tensor& t = ctx.input(1 + i);
    std::vector<double> v = to_doubles(t);
    if (t.rank() == 1 && t.dim(0) == c) {
      per_channel[i] = v;
    } else if (t.rank() == 1 && t.dim(0) == g) {
      for (int64_t ch = 0; ch < c; ++ch) per_channel[i].push_back(v[ch / (c / g)]);
    } else {
      ctx.fail(std::string(names[i]) + " must have num_groups or C elements, got " + t.describe());
    }
  }
  const double eps = ctx.node().attr_float("epsilon", 1e-5f);
  kiln::Tensor& y = ctx.make_output(0, x.dtype(), x.dims());
  dispatch_float(x.dtype(), [&](auto tag) { group_normalize<decltype(tag)>(x, y, g, eps, per_channel[0], per_channel[1]); });
}

// ---------------------------------------------------------------- LpNormalization

void infer_lpnorm(InferContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  require_float(ctx, x.dtype, "input");
  const int64_t p = ctx.node().attr_int("p", 2);
  if (p != 1 && p != 2) ctx.fail("p must be 1 or 2, got " + std::to_string(p));
  if (x.rank_known) normalize_axis(ctx.node().attr_int("axis", -1), x.rank(), ctx.node());
  infer_same_as_input(ctx);
}

void lpnorm_kernel(KernelContext& ctx) {
  const kiln::Tensor& x = ctx.input(0);
  const int64_t p = ctx.node().attr_int("p", 2);
  if (p != 1 && p != 2) ctx.fail("p must be 1 or 2, got " + std::to_string(p));
  if (x.rank() == 0) ctx.fail("input must have rank >= 1");
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", -1), x.rank(), ctx.node());
  const int64_t outer = product(x.dims(), 0, axis), n = x.dim(axis), inner = product(x.dims(), axis + 1);
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    T* yp = ctx.make_output(0, x.dtype(), x.dims()).template data<T>();
    std::vector<double> norm(inner);
    for (int64_t o = 0; o < outer; ++o) {
      const int64_t base = o * n * inner;
      std::fill(norm.begin(), norm.end(), 0.0);
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < inner; ++i) {
          double v = static_cast<double>(static_cast<compute_t<T>>(xp[base + j * inner + i]));
          norm[i] += p == 1 ? std::fabs(v) : v * v;
        }
      if (p == 2)
        for (double& v : norm) v = std::sqrt(v);
      // A zero vector stays zero rather than becoming 0/0 = NaN: the spec defines it so.
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < inner; ++i) {
          double v = static_cast<double>(static_cast<compute_t<T>>(xp[base + j * inner + i]));
          yp[base + j * inner + i] = from_double<T>(norm[i] == 0 ? 0.0 : v / norm[i]);
        }
    }
  });
}

// ---------------------------------------------------------------- LRN

void infer_lrn(InferContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  require_float(ctx, x.dtype, "X");
  if (ctx.node().attr_int_required("size") <= 0) ctx.fail("size must be positive");
  if (x.rank_known && x.rank() < 2) ctx.fail("X must have rank >= 2 (N x C x ...), got " + x.str());
  infer_same_as_input(ctx);
}

void lrn_kernel(KernelContext& ctx) {
  const kiln::Tensor& x = ctx.input(0);
  const int64_t size = ctx.node().attr_int_required("size");
  if (size <= 0) ctx.fail("size must be positive");
  if (x.rank() < 2) ctx.fail("X must have rank >= 2 (N x C x ...), got " + x.describe());
  const double alpha = ctx.node().attr_float("alpha", 1e-4f), beta = ctx.node().attr_float("beta", 0.75f),
               bias = ctx.node().attr_float("bias", 1.0f);
  const int64_t n = x.dim(0), c = x.dim(1), s = product(x.dims(), 2);
  // Window over channels [ci - floor((size-1)/2), ci + ceil((size-1)/2)].
  const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    T* yp = ctx.make_output(0, x.dtype(), x.dims()).template data<T>();
    std::vector<double> sq(s);
    for (int64_t ni = 0; ni < n; ++ni)
      for (int64_t ci = 0; ci < c; ++ci) {
        std::fill(sq.begin(), sq.end(), 0.0);
        for (int64_t k = std::max<int64_t>(0, ci - lo); k <= std::min(c - 1, ci + hi); ++k) {
          const T* row = xp + (ni * c + k) * s;
          for (int64_t si = 0; si < s; ++si) {
            double v = static_cast<double>(static_cast<compute_t<T>>(row[si]));
            sq[si] += v * v;
          }
        }
        const int64_t base = (ni * c + ci) * s;
        for (int64_t si = 0; si < s; ++si) {
          double v = static_cast<double>(static_cast<compute_t<T>>(xp[base + si]));
          yp[base + si] = from_double<T>(v / std::pow(bias + alpha / static_cast<double>(size) * sq[si], beta));
        }
      }
  });
}

// ---------------------------------------------------------------- MeanVarianceNormalization

std::vector<int64_t> mvn_axes(const ir::Node& n) { return n.attr_ints("axes", {0, 2, 3}); }

void infer_mvn(InferContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  require_float(ctx, x.dtype, "X");
  if (x.rank_known) normalize_axes(mvn_axes(ctx.node()), x.rank(), ctx.node());
  infer_same_as_input(ctx);
}

// Matches ONNX's function body: (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9), with the
// variance computed as E[(X - E[X])^2] for accuracy.
void mvn_kernel(KernelContext& ctx) {
  const kiln::Tensor& x = ctx.input(0);
  std::vector<int64_t> stat_dims = x.dims();
  for (int64_t a : normalize_axes(mvn_axes(ctx.node()), x.rank(), ctx.node())) {
    if (a >= x.rank()) ctx.fail("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(x.rank()));
    stat_dims[a] = 1;
  }
  const int64_t groups = product(stat_dims);
  const double count = groups ? static_cast<double>(x.numel() / groups) : 0.0;
  BroadcastWalker walker(x.dims(), {stat_dims});
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    auto in = [&](int64_t i) { return static_cast<double>(static_cast<compute_t<T>>(xp[i])); };
    std::vector<double> mean(groups, 0.0), var(groups, 0.0);
    walker.run([&](int64_t i, const int64_t* off) { mean[off[0]] += in(i); });
    for (double& m : mean) m /= count;
    walker.run([&](int64_t i, const int64_t* off) {
      double d = in(i) - mean[off[0]];
      var[off[0]] += d * d;
    });
    for (double& v : var) v = std::sqrt(v / count) + 1e-9;
    T* yp = ctx.make_output(0, x.dtype(), x.dims()).template data<T>();
    walker.run([&](int64_t i, const int64_t* off) { yp[i] = from_double<T>((in(i) - mean[off[0]]) / var[off[0]]); });
  });
}

// ---------------------------------------------------------------- RMSNormalization (opset 23)

void infer_rmsnorm(InferContext& ctx) {
  require_float(ctx, ctx.input(0).dtype, "X");
  require_float(ctx, ctx.input(1).dtype, "scale");
  stash_type_of(ctx);
  if (ctx.input(0).rank_known) normalize_axis(ctx.node().attr_int("axis", -1), ctx.input(0).rank(), ctx.node());
  infer_same_as_input(ctx);
}

// Y = X / sqrt(mean(X^2 over [axis, rank)) + epsilon), in X's type, times scale (ONNX's
// function: the normalized value is cast back to X's type before the scale multiplies it).
void rmsnorm_kernel(KernelContext& ctx) {
  const kiln::Tensor& x = ctx.input(0);
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", -1), x.rank(), ctx.node());
  const double eps = ctx.node().attr_float("epsilon", 1e-5f);
  const std::vector<int64_t> norm(x.dims().begin() + axis, x.dims().end());
  const int64_t outer = product(x.dims(), 0, axis), m = product(norm);
  const std::vector<double> scale = expand_param(ctx, ctx.input(1), norm, "scale");
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    T* yp = ctx.make_output(0, x.dtype(), x.dims()).template data<T>();
    for (int64_t o = 0; o < outer; ++o) {
      const T* row = xp + o * m;
      double sq = 0;
      for (int64_t j = 0; j < m; ++j) {
        const double v = static_cast<double>(static_cast<compute_t<T>>(row[j]));
        sq += v * v;
      }
      const double inv = 1.0 / std::sqrt((m ? sq / m : 0.0) + eps);
      for (int64_t j = 0; j < m; ++j) {
        const T normalized = from_double<T>(static_cast<double>(static_cast<compute_t<T>>(row[j])) * inv);
        yp[o * m + j] = from_double<T>(static_cast<double>(static_cast<compute_t<T>>(normalized)) * scale[j]);
      }
    }
  });
}

}  // namespace

KILN_REGISTER_OPS(norm) {
  // Inference form is a per-channel affine map of X: a broadcast pattern.
  reg.add({.name = "BatchNormalization", .since_version = 6, .min_inputs = 5, .max_inputs = 5,
           .min_outputs = 1, .max_outputs = 5, .pattern = PatternKind::Broadcast,
           .infer = infer_batchnorm, .kernel = batchnorm_kernel});
  // Registered from opset 1 (ONNX has it from 17) so graph rewrites may introduce it in older models.
  reg.add({.name = "LayerNormalization", .since_version = 1, .min_inputs = 2, .max_inputs = 3,
           .min_outputs = 1, .max_outputs = 3, .pattern = PatternKind::Opaque,
           .infer = infer_layernorm, .kernel = layernorm_kernel});
  reg.add({.name = "RMSNormalization", .since_version = 23, .max_version = 23, .min_inputs = 2, .max_inputs = 2,
           .pattern = PatternKind::Opaque, .infer = infer_rmsnorm, .kernel = rmsnorm_kernel});
  reg.add({.name = "InstanceNormalization", .min_inputs = 3, .max_inputs = 3, .pattern = PatternKind::Opaque,
           .infer = infer_instancenorm, .kernel = instancenorm_kernel});
  reg.add({.name = "GroupNormalization", .since_version = 18, .max_version = 21, .min_inputs = 3, .max_inputs = 3,
           .pattern = PatternKind::Opaque, .infer = infer_groupnorm, .kernel = groupnorm_kernel});
  reg.add({.name = "LpNormalization", .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::Opaque,
           .infer = infer_lpnorm, .kernel = lpnorm_kernel});
  reg.add({.name = "LRN", .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::Opaque,
           .infer = infer_lrn, .kernel = lrn_kernel});
  reg.add({.name = "MeanVarianceNormalization", .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::Opaque,
           .infer = infer_mvn, .kernel = mvn_kernel});
}

}  // namespace kiln::ops
