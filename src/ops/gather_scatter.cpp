// Indexing ops: Gather, GatherElements, GatherND, Scatter(Elements|ND), OneHot, NonZero, Compress.
// Every index is bounds-checked before it is used: a bad index is a kiln::Error naming the
// node, never an out-of-bounds read or write.
#include <kiln/error.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

std::vector<int64_t> index_values(const Tensor& t, const ir::Node& node, const char* what) {
  if (t.dtype() != DType::Int64 && t.dtype() != DType::Int32)
    throw Error(node.describe() + ": " + what + " must be int32 or int64, got " + dtype_name(t.dtype()));
  return t.to_int64_vector();
}

// Maps an index into [0, extent), accepting negative indices from the end.
int64_t fix_index(int64_t i, int64_t extent, const ir::Node& node) {
  if (i < -extent || i >= extent)
    throw Error(node.describe() + ": index " + std::to_string(i) + " is out of range for an axis of extent " +
                std::to_string(extent));
  return i < 0 ? i + extent : i;
}

enum class Reduction { None, Add, Mul, Max, Min };

Reduction reduction_of(const ir::Node& node, int64_t opset) {
  std::string r = node.attr_string("reduction", "none");
  if (r == "none") return Reduction::None;
  if (opset >= 16 && r == "add") return Reduction::Add;
  if (opset >= 16 && r == "mul") return Reduction::Mul;
  if (opset >= 18 && r == "max") return Reduction::Max;
  if (opset >= 18 && r == "min") return Reduction::Min;
  throw Error(node.describe() + ": unsupported reduction '" + r + "' at opset " + std::to_string(opset));
}

template <typename T>
void combine(T& dst, const T& src, Reduction r) {
  if constexpr (std::is_same_v<T, std::string>) {
    dst = src;
    (void)r;
  } else {
    if (r == Reduction::None) { dst = src; return; }
    using C = compute_t<T>;
    C a = static_cast<C>(dst), b = static_cast<C>(src), v;
    switch (r) {
      case Reduction::Add: v = static_cast<C>(a + b); break;
      case Reduction::Mul: v = static_cast<C>(a * b); break;
      case Reduction::Max: v = std::max(a, b); break;
      default: v = std::min(a, b); break;
    }
    dst = static_cast<T>(v);
  }
}

void check_reduction_dtype(Reduction r, DType t, const ir::Node& node) {
  if (r != Reduction::None && (t == DType::String || t == DType::Bool))
    throw Error(node.describe() + ": reduction is not defined for " + dtype_name(t));
}

// ---------------------------------------------------------------- Gather

void infer_gather(InferContext& ctx) {
  const ir::TensorType& data = ctx.input(0);
  const ir::TensorType& ind = ctx.input(1);
  if (!data.rank_known || !ind.rank_known) {
    ctx.set_output(0, ir::TensorType::unranked(data.dtype));
    return;
  }
  if (data.rank() < 1) ctx.fail("data must have rank >= 1");
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", 0), data.rank(), ctx.node());
  std::vector<ir::Dim> out(data.dims.begin(), data.dims.begin() + axis);
  out.insert(out.end(), ind.dims.begin(), ind.dims.end());
  out.insert(out.end(), data.dims.begin() + axis + 1, data.dims.end());
  ctx.set_output(0, data.dtype, out);
}

void kernel_gather(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  if (data.rank() < 1) ctx.fail("data must have rank >= 1");
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", 0), data.rank(), ctx.node());
  std::vector<int64_t> idx = index_values(ind, ctx.node(), "indices");
  const int64_t extent = data.dim(static_cast<int>(axis));
  for (int64_t& i : idx) i = fix_index(i, extent, ctx.node());
  std::vector<int64_t> out_dims(data.dims().begin(), data.dims().begin() + axis);
  out_dims.insert(out_dims.end(), ind.dims().begin(), ind.dims().end());
  out_dims.insert(out_dims.end(), data.dims().begin() + axis + 1, data.dims().end());
  Tensor& out = ctx.make_output(0, data.dtype(), out_dims);
  const int64_t outer = product(data.dims(), 0, axis), inner = product(data.dims(), axis + 1);
  const int64_t n = static_cast<int64_t>(idx.size());
  dispatch_all(data.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = data.data<T>();
    T* dst = out.data<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < n; ++k) {
        const T* s = src + (o * extent + idx[k]) * inner;
        T* d = dst + (o * n + k) * inner;
        for (int64_t j = 0; j < inner; ++j) d[j] = s[j];
      }
  });
}

// ---------------------------------------------------------------- GatherElements / ScatterElements

void check_elements_shapes(const Tensor& data, const Tensor& ind, int64_t axis, const ir::Node& node) {
  if (ind.rank() != data.rank())
    throw Error(node.describe() + ": indices rank " + std::to_string(ind.rank()) + " differs from data rank " +
                std::to_string(data.rank()));
  for (int d = 0; d < data.rank(); ++d)
    if (d != axis && ind.dim(d) > data.dim(d))
      throw Error(node.describe() + ": indices dim " + std::to_string(d) + " (" + std::to_string(ind.dim(d)) +
                  ") exceeds data dim (" + std::to_string(data.dim(d)) + ")");
}

// Calls fn(element number in indices, offset in data) for every index of an Elements op.
template <typename F>
void walk_elements(const Tensor& data, const Tensor& ind, int64_t axis, const ir::Node& node, F&& fn) {
  std::vector<int64_t> idx = index_values(ind, node, "indices");
  if (idx.empty()) return;
  std::vector<int64_t> strides = strides_of(data.dims());
  const int64_t extent = data.dim(static_cast<int>(axis));
  std::vector<int64_t> pos(ind.rank(), 0);
  int64_t e = 0;
  do {
    int64_t off = 0;
    for (int d = 0; d < ind.rank(); ++d)
      off += (d == axis ? fix_index(idx[e], extent, node) : pos[d]) * strides[d];
    fn(e, off);
    ++e;
  } while (next_index(pos, ind.dims()));
}

void infer_gather_elements(InferContext& ctx) {
  const ir::TensorType& data = ctx.input(0);
  const ir::TensorType& ind = ctx.input(1);
  if (data.rank_known && ind.rank_known) {
    if (data.rank() != ind.rank()) ctx.fail("indices rank differs from data rank");
    normalize_axis(ctx.node().attr_int("axis", 0), data.rank(), ctx.node());
  }
  ir::TensorType t = ind;
  t.dtype = data.dtype;
  ctx.set_output(0, t);
}

void kernel_gather_elements(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  if (data.rank() < 1) ctx.fail("data must have rank >= 1");
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", 0), data.rank(), ctx.node());
  check_elements_shapes(data, ind, axis, ctx.node());
  Tensor& out = ctx.make_output(0, data.dtype(), ind.dims());
  dispatch_all(data.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = data.data<T>();
    T* dst = out.data<T>();
    walk_elements(data, ind, axis, ctx.node(), [&](int64_t e, int64_t off) { dst[e] = src[off]; });
  });
}

void infer_scatter(InferContext& ctx) { infer_same_as_input(ctx); }

void kernel_scatter_elements(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  const Tensor& upd = ctx.input(2);
  if (data.rank() < 1) ctx.fail("data must have rank >= 1");
  if (upd.dims() != ind.dims()) ctx.fail("updates shape must equal indices shape");
  if (upd.dtype() != data.dtype()) ctx.fail("updates dtype differs from data dtype");
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", 0), data.rank(), ctx.node());
  check_elements_shapes(data, ind, axis, ctx.node());
  const Reduction red = ctx.node().op_type() == "Scatter" ? Reduction::None : reduction_of(ctx.node(), ctx.opset());
  check_reduction_dtype(red, data.dtype(), ctx.node());
  Tensor out = data.clone();
  dispatch_all(data.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* u = upd.data<T>();
    T* dst = out.data<T>();
    walk_elements(data, ind, axis, ctx.node(), [&](int64_t e, int64_t off) { combine<T>(dst[off], u[e], red); });
  });
  ctx.set_output(0, out);
}

// ---------------------------------------------------------------- GatherND / ScatterND

void infer_gather_nd(InferContext& ctx) {
  const ir::TensorType& data = ctx.input(0);
  const ir::TensorType& ind = ctx.input(1);
  const int64_t b = ctx.opset() >= 12 ? ctx.node().attr_int("batch_dims", 0) : 0;
  if (!data.rank_known || !ind.rank_known || ind.rank() < 1 || !ind.dims.back().is_static()) {
    ctx.set_output(0, ir::TensorType::unranked(data.dtype));
    return;
  }
  const int64_t last = ind.dims.back().value;
  if (b < 0 || b >= std::min(data.rank(), ind.rank())) ctx.fail("batch_dims " + std::to_string(b) + " out of range");
  if (last < 1 || last > data.rank() - b) ctx.fail("indices last dim " + std::to_string(last) + " out of range");
  std::vector<ir::Dim> out(ind.dims.begin(), ind.dims.end() - 1);
  out.insert(out.end(), data.dims.begin() + b + last, data.dims.end());
  ctx.set_output(0, data.dtype, out);
}

struct NDPlan {
  int64_t batches, per_batch, slice, data_batch_stride, last;
  std::vector<int64_t> offsets;  // per (batch, tuple): element offset into data
};

NDPlan plan_nd(const Tensor& data, const Tensor& ind, int64_t b, const ir::Node& node) {
  if (ind.rank() < 1) throw Error(node.describe() + ": indices must have rank >= 1");
  if (b < 0 || b >= std::min(data.rank(), ind.rank()))
    throw Error(node.describe() + ": batch_dims " + std::to_string(b) + " out of range");
  for (int d = 0; d < b; ++d)
    if (data.dim(d) != ind.dim(d)) throw Error(node.describe() + ": batch dims of data and indices differ");
  NDPlan p;
  p.last = ind.dims().back();
  if (p.last < 1 || p.last > data.rank() - b)
    throw Error(node.describe() + ": indices last dim " + std::to_string(p.last) + " out of range");
  p.batches = product(data.dims(), 0, b);
  p.per_batch = product(ind.dims(), b, ind.rank() - 1);
  p.slice = product(data.dims(), b + p.last);
  p.data_batch_stride = product(data.dims(), b);
  std::vector<int64_t> idx = index_values(ind, node, "indices");
  std::vector<int64_t> strides = strides_of(data.dims());
  p.offsets.resize(p.batches * p.per_batch);
  for (int64_t t = 0; t < p.batches * p.per_batch; ++t) {
    int64_t off = (t / std::max<int64_t>(p.per_batch, 1)) * p.data_batch_stride;
    for (int64_t j = 0; j < p.last; ++j)
      off += fix_index(idx[t * p.last + j], data.dim(static_cast<int>(b + j)), node) * strides[b + j];
    p.offsets[t] = off;
  }
  return p;
}

void kernel_gather_nd(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  const int64_t b = ctx.opset() >= 12 ? ctx.node().attr_int("batch_dims", 0) : 0;
  NDPlan p = plan_nd(data, ind, b, ctx.node());
  std::vector<int64_t> out_dims(ind.dims().begin(), ind.dims().end() - 1);
  out_dims.insert(out_dims.end(), data.dims().begin() + b + p.last, data.dims().end());
  Tensor& out = ctx.make_output(0, data.dtype(), out_dims);
  dispatch_all(data.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = data.data<T>();
    T* dst = out.data<T>();
    for (size_t t = 0; t < p.offsets.size(); ++t)
      for (int64_t j = 0; j < p.slice; ++j) dst[t * p.slice + j] = src[p.offsets[t] + j];
  });
}

void kernel_scatter_nd(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  const Tensor& upd = ctx.input(2);
  if (upd.dtype() != data.dtype()) ctx.fail("updates dtype differs from data dtype");
  NDPlan p = plan_nd(data, ind, 0, ctx.node());
  std::vector<int64_t> want(ind.dims().begin(), ind.dims().end() - 1);
  want.insert(want.end(), data.dims().begin() + p.last, data.dims().end());
  if (upd.dims() != want) ctx.fail("updates shape does not match indices and data shapes");
  const Reduction red = reduction_of(ctx.node(), ctx.opset());
  check_reduction_dtype(red, data.dtype(), ctx.node());
  Tensor out = data.clone();
  dispatch_all(data.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* u = upd.data<T>();
    T* dst = out.data<T>();
    for (size_t t = 0; t < p.offsets.size(); ++t)
      for (int64_t j = 0; j < p.slice; ++j) combine<T>(dst[p.offsets[t] + j], u[t * p.slice + j], red);
  });
  ctx.set_output(0, out);
}

// ---------------------------------------------------------------- OneHot

int64_t onehot_axis(const ir::Node& node, int64_t rank) {
  int64_t a = node.attr_int("axis", -1);
  if (a < -(rank + 1) || a > rank)
    throw Error(node.describe() + ": axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
  return a < 0 ? a + rank + 1 : a;
}

int64_t depth_of(const Tensor& t, const ir::Node& node) {
  if (t.numel() != 1) throw Error(node.describe() + ": depth must have one element");
  const double d = t.as_double(0);
  if (!(d >= 1) || d > 1e12) throw Error(node.describe() + ": depth must be positive, got " + std::to_string(d));
  return static_cast<int64_t>(d);
}

void infer_onehot(InferContext& ctx) {
  const ir::TensorType& ind = ctx.input(0);
  const ir::TensorType& vals = ctx.input(2);
  if (!ind.rank_known) {
    ctx.set_output(0, ir::TensorType::unranked(vals.dtype));
    return;
  }
  const int64_t a = onehot_axis(ctx.node(), ind.rank());
  ir::Dim depth = ctx.value(1) ? ir::Dim(depth_of(*ctx.value(1), ctx.node())) : ctx.fresh_dim();
  std::vector<ir::Dim> out = ind.dims;
  out.insert(out.begin() + a, depth);
  ctx.set_output(0, vals.dtype, out);
}

void kernel_onehot(KernelContext& ctx) {
  const Tensor& ind = ctx.input(0);
  const int64_t depth = depth_of(ctx.input(1), ctx.node());
  const Tensor& vals = ctx.input(2);
  if (vals.numel() != 2) ctx.fail("values must have two elements [off, on]");
  const int64_t a = onehot_axis(ctx.node(), ind.rank());
  std::vector<int64_t> out_dims = ind.dims();
  out_dims.insert(out_dims.begin() + a, depth);
  Tensor& out = ctx.make_output(0, vals.dtype(), out_dims);
  const int64_t post = product(ind.dims(), a), n = ind.numel();
  dispatch_all(vals.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T off = vals.data<T>()[0], on = vals.data<T>()[1];
    T* dst = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) dst[i] = off;
    for (int64_t i = 0; i < n; ++i) {
      const double v = ind.as_double(i);
      int64_t k = static_cast<int64_t>(v);
      if (k < 0) k += depth;
      if (k < 0 || k >= depth) continue;  // out-of-range indices leave an all-off row
      const int64_t p = i / post, q = i % post;
      dst[(p * depth + k) * post + q] = on;
    }
  });
}

// ---------------------------------------------------------------- NonZero / Compress

void infer_nonzero(InferContext& ctx) {
  const ir::TensorType& in = ctx.input(0);
  ctx.set_output(0, DType::Int64, {in.rank_known ? ir::Dim(in.rank()) : ctx.fresh_dim(), ctx.fresh_dim()});
}

template <typename T>
bool is_nonzero(const T& v) {
  if constexpr (std::is_same_v<T, std::string>) return !v.empty();
  else return static_cast<compute_t<T>>(v) != compute_t<T>(0);
}

void kernel_nonzero(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  std::vector<int64_t> hits;
  dispatch_all(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = in.data<T>();
    for (int64_t i = 0; i < in.numel(); ++i)
      if (is_nonzero<T>(p[i])) hits.push_back(i);
  });
  const int64_t r = in.rank(), n = static_cast<int64_t>(hits.size());
  Tensor& out = ctx.make_output(0, DType::Int64, {r, n});
  int64_t* dst = out.data<int64_t>();
  for (int64_t k = 0; k < n; ++k) {
    int64_t rem = hits[k];
    for (int64_t d = r; d-- > 0;) {
      dst[d * n + k] = rem % in.dim(static_cast<int>(d));
      rem /= in.dim(static_cast<int>(d));
    }
  }
}

void infer_compress(InferContext& ctx) {
  const ir::TensorType& in = ctx.input(0);
  const Tensor* cond = ctx.value(1);
  ir::Dim n = ctx.fresh_dim();
  if (cond) {
    int64_t c = 0;
    for (int64_t i = 0; i < cond->numel(); ++i) c += cond->as_double(i) != 0;
    n = ir::Dim(c);
  }
  if (!ctx.node().has_attr("axis")) {
    ctx.set_output(0, in.dtype, {n});
    return;
  }
  if (!in.rank_known) {
    ctx.set_output(0, ir::TensorType::unranked(in.dtype));
    return;
  }
  if (in.rank() == 0) ctx.fail("axis needs an input of rank >= 1");
  const int64_t a = normalize_axis(ctx.node().attr_int("axis", 0), in.rank(), ctx.node());
  std::vector<ir::Dim> out = in.dims;
  out[a] = n;
  ctx.set_output(0, in.dtype, out);
}

void kernel_compress(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const Tensor& cond = ctx.input(1);
  if (cond.rank() != 1) ctx.fail("condition must be 1-D");
  const bool has_axis = ctx.node().has_attr("axis");
  if (has_axis && in.rank() == 0) ctx.fail("axis needs an input of rank >= 1");
  const int64_t a = has_axis ? normalize_axis(ctx.node().attr_int("axis", 0), in.rank(), ctx.node()) : 0;
  const int64_t extent = has_axis ? in.dim(static_cast<int>(a)) : in.numel();
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < cond.numel(); ++i) {
    if (cond.as_double(i) == 0) continue;
    if (i >= extent) ctx.fail("condition selects index " + std::to_string(i) + " beyond extent " + std::to_string(extent));
    keep.push_back(i);
  }
  const int64_t n = static_cast<int64_t>(keep.size());
  std::vector<int64_t> out_dims = {n};
  int64_t outer = 1, inner = 1;
  if (has_axis) {
    out_dims = in.dims();
    out_dims[a] = n;
    outer = product(in.dims(), 0, a);
    inner = product(in.dims(), a + 1);
  }
  Tensor& out = ctx.make_output(0, in.dtype(), out_dims);
  dispatch_all(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = in.data<T>();
    T* dst = out.data<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < n; ++k) {
        const T* s = src + (o * extent + keep[k]) * inner;
        T* d = dst + (o * n + k) * inner;
        for (int64_t j = 0; j < inner; ++j) d[j] = s[j];
      }
  });
}

// ---------------------------------------------------------------- TensorScatter (opset 24)

// A KV-cache update: the present cache is past_cache with `update` written along `axis` from
// write_indices[b] (one per batch, default 0) on; mode "circular" wraps past the cache's end,
// "linear" must fit. Every other dim of update matches the cache's.
void infer_tensor_scatter(InferContext& ctx) {
  const ir::TensorType &past = ctx.input(0), &upd = ctx.input(1);
  if (upd.dtype != past.dtype) ctx.fail("update must have past_cache's type, got " + upd.str());
  if (ctx.has_input(2) && ctx.input(2).dtype != DType::Int64) ctx.fail("write_indices must be int64, got " + ctx.input(2).str());
  const std::string mode = ctx.node().attr_string("mode", "linear");
  if (mode != "linear" && mode != "circular") ctx.fail("mode must be linear or circular, got '" + mode + "'");
  ctx.set_output(0, past);
}

void kernel_tensor_scatter(KernelContext& ctx) {
  const Tensor &past = ctx.input(0), &upd = ctx.input(1);
  const Tensor* idx = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  const std::string mode = ctx.node().attr_string("mode", "linear");
  if (past.rank() < 2 || upd.rank() != past.rank()) ctx.fail("past_cache and update must have one rank of at least 2");
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", -2), past.rank(), ctx.node());
  if (axis == 0) ctx.fail("axis must not be the batch axis");
  for (int64_t i = 0; i < past.rank(); ++i)
    if (i == axis ? upd.dim(static_cast<int>(i)) > past.dim(static_cast<int>(i))
                  : upd.dim(static_cast<int>(i)) != past.dim(static_cast<int>(i)))
      ctx.fail("update " + upd.describe() + " does not fit past_cache " + past.describe() + " along axis " + std::to_string(axis));
  const int64_t B = past.dim(0), max_len = past.dim(static_cast<int>(axis)), len = upd.dim(static_cast<int>(axis));
  if (idx && (idx->rank() != 1 || idx->dim(0) != B)) ctx.fail("write_indices must be [" + std::to_string(B) + "], got " + idx->describe());
  if (past.dtype() == DType::String) throw UnsupportedError(ctx.node().describe() + ": string caches are not supported");
  Tensor& out = ctx.make_output(0, past.dtype(), past.dims());
  const size_t esz = dtype_size(past.dtype());
  std::memcpy(out.raw(), past.raw(), past.nbytes());
  // [B, mid, axis, inner]: mid spans the dims between the batch and the axis.
  const int64_t mid = product(past.dims(), 1, axis), inner = product(past.dims(), axis + 1, past.rank());
  const char* u = static_cast<const char*>(upd.raw());
  char* o = static_cast<char*>(out.raw());
  for (int64_t b = 0; b < B; ++b) {
    const int64_t start = idx ? idx->data<int64_t>()[b] : 0;
    if (start < 0 || (mode == "linear" && start + len > max_len) || (mode == "circular" && start >= max_len && max_len > 0))
      ctx.fail("write index " + std::to_string(start) + " for batch " + std::to_string(b) + " does not fit " +
               std::to_string(len) + " steps into " + std::to_string(max_len) + " (" + mode + ")");
    for (int64_t m = 0; m < mid; ++m)
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = mode == "circular" ? (start + s) % max_len : start + s;
        std::memcpy(o + (((b * mid + m) * max_len + t) * inner) * esz, u + (((b * mid + m) * len + s) * inner) * esz,
                    static_cast<size_t>(inner) * esz);
      }
  }
}

}  // namespace

KILN_REGISTER_OPS(gather_scatter) {
  reg.add({.name = "Gather", .min_inputs = 2, .max_inputs = 2, .pattern = PatternKind::Injective,
           .infer = infer_gather, .kernel = kernel_gather});
  reg.add({.name = "GatherElements", .since_version = 11, .min_inputs = 2, .max_inputs = 2,
           .pattern = PatternKind::Injective, .infer = infer_gather_elements, .kernel = kernel_gather_elements});
  reg.add({.name = "GatherND", .since_version = 11, .min_inputs = 2, .max_inputs = 2,
           .pattern = PatternKind::Injective, .infer = infer_gather_nd, .kernel = kernel_gather_nd});
  reg.add({.name = "ScatterND", .since_version = 11, .max_version = 18, .min_inputs = 3, .max_inputs = 3,
           .pattern = PatternKind::Opaque, .infer = infer_scatter, .kernel = kernel_scatter_nd});
  reg.add({.name = "ScatterElements", .since_version = 11, .max_version = 18, .min_inputs = 3, .max_inputs = 3,
           .pattern = PatternKind::Opaque, .infer = infer_scatter, .kernel = kernel_scatter_elements});
  reg.add({.name = "TensorScatter", .since_version = 24, .min_inputs = 2, .max_inputs = 3,
           .pattern = PatternKind::Opaque, .infer = infer_tensor_scatter, .kernel = kernel_tensor_scatter});
  reg.add({.name = "Scatter", .since_version = 9, .min_inputs = 3, .max_inputs = 3,
           .pattern = PatternKind::Opaque, .infer = infer_scatter, .kernel = kernel_scatter_elements});
  reg.add({.name = "OneHot", .since_version = 9, .min_inputs = 3, .max_inputs = 3,
           .pattern = PatternKind::Injective, .infer = infer_onehot, .kernel = kernel_onehot});
  reg.add({.name = "NonZero", .since_version = 9, .min_inputs = 1, .max_inputs = 1,
           .pattern = PatternKind::Opaque, .infer = infer_nonzero, .kernel = kernel_nonzero});
  reg.add({.name = "Compress", .since_version = 9, .min_inputs = 2, .max_inputs = 2,
           .pattern = PatternKind::Opaque, .infer = infer_compress, .kernel = kernel_compress});
}

}  // namespace kiln::ops
