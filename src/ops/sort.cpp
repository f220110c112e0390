// Ordering ops: TopK, CumSum, Unique and NonMaxSuppression.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

template <typename C>
bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>) return std::isnan(v);
  else return false;
}

// Strict weak orders that place NaN as the largest value, so sorting never misbehaves.
template <typename C>
bool greater_nan_first(C a, C b) {
  return (is_nan(a) && !is_nan(b)) || a > b;
}
template <typename C>
bool less_nan_last(C a, C b) {
  return (!is_nan(a) && is_nan(b)) || a < b;
}

// ---------------------------------------------------------------- TopK

// K is an attribute before opset 10 and a one-element int64 input from then on.
template <typename Ctx>
std::optional<int64_t> topk_k(const Ctx& ctx, const kiln::Tensor* k_value) {
  if (ctx.opset() < 10) {
    if (ctx.has_input(1)) ctx.fail("K as an input needs opset >= 10");
    return ctx.node().attr_int_required("k");
  }
  if (!ctx.has_input(1)) ctx.fail("missing required input K");
  if (!k_value) return std::nullopt;
  if (!dtype_is_integer(k_value->dtype()) || k_value->numel() != 1 || k_value->rank() > 1)
    ctx.fail("K must be a one-element 1-D integer tensor, got " + k_value->describe());
  return k_value->as_int64(0);
}

void infer_topk(InferContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  auto k = topk_k(ctx, ctx.value(1));
  if (k && *k < 0) ctx.fail("K must be non-negative, got " + std::to_string(*k));
  if (!x.rank_known) {
    ctx.set_output(0, ir::TensorType::unranked(x.dtype));
    ctx.set_output(1, ir::TensorType::unranked(DType::Int64));
    return;
  }
  if (x.rank() == 0) ctx.fail("input must have rank >= 1");
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", -1), x.rank(), ctx.node());
  std::vector<ir::Dim> dims = x.dims;
  if (k && dims[axis].is_static() && *k > dims[axis].value)
    ctx.fail("K " + std::to_string(*k) + " exceeds the axis extent " + dims[axis].str());
  dims[axis] = k ? ir::Dim(*k) : ctx.fresh_dim();
  ctx.set_output(0, x.dtype, dims);
  ctx.set_output(1, DType::Int64, dims);
}

void topk_kernel(KernelContext& ctx) {
  const kiln::Tensor& x = ctx.input(0);
  const int64_t k = *topk_k(ctx, ctx.has_input(1) ? &ctx.input(1) : nullptr);
  if (x.rank() == 0) ctx.fail("input must have rank >= 1");
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", -1), x.rank(), ctx.node());
  const int64_t n = x.dim(axis);
  if (k < 0 || k > n) ctx.fail("K " + std::to_string(k) + " is out of range for axis extent " + std::to_string(n));
  const bool largest = ctx.node().attr_int("largest", 1) != 0;
  // sorted=0 allows any order; returning sorted results is a valid choice.
  const int64_t outer = product(x.dims(), 0, axis), inner = product(x.dims(), axis + 1);
  std::vector<int64_t> dims = x.dims();
  dims[axis] = k;
  kiln::Tensor& values = ctx.make_output(0, x.dtype(), dims);
  kiln::Tensor* indices = ctx.has_output(1) ? &ctx.make_output(1, DType::Int64, dims) : nullptr;
  dispatch_numeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* xp = x.data<T>();
    T* vp = values.data<T>();
    std::vector<C> row(n);
    std::vector<int64_t> order(n);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        for (int64_t j = 0; j < n; ++j) row[j] = static_cast<C>(xp[(o * n + j) * inner + i]);
        std::iota(order.begin(), order.end(), 0);
        // Ties keep the lower index first.
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
          if (largest ? greater_nan_first(row[a], row[b]) : less_nan_last(row[a], row[b])) return true;
          if (largest ? greater_nan_first(row[b], row[a]) : less_nan_last(row[b], row[a])) return false;
          return a < b;
        });
        for (int64_t j = 0; j < k; ++j) {
          const int64_t at = (o * k + j) * inner + i;
          vp[at] = xp[(o * n + order[j]) * inner + i];
          if (indices) indices->data<int64_t>()[at] = order[j];
        }
      }
  });
}

// ---------------------------------------------------------------- CumSum

template <typename Ctx>
void check_axis_tensor(const Ctx& ctx, const kiln::Tensor& t) {
  if (!dtype_is_integer(t.dtype()) || t.numel() != 1 || t.rank() > 1)
    ctx.fail("axis must be an integer scalar, got " + t.describe());
}

void infer_cumsum(InferContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  const ir::TensorType& a = ctx.input(1);
  if (a.dtype != DType::Undefined && a.dtype != DType::Int32 && a.dtype != DType::Int64)
    ctx.fail("axis must be int32 or int64, got " + dtype_name(a.dtype));
  if (const kiln::Tensor* v = ctx.value(1)) {
    check_axis_tensor(ctx, *v);
    if (x.rank_known) normalize_axis(v->as_int64(0), x.rank(), ctx.node());
  }
  infer_same_as_input(ctx);
}

void cumsum_kernel(KernelContext& ctx) {
  const kiln::Tensor& x = ctx.input(0);
  check_axis_tensor(ctx, ctx.input(1));
  if (x.rank() == 0) ctx.fail("input must have rank >= 1");
  const int64_t axis = normalize_axis(ctx.input(1).as_int64(0), x.rank(), ctx.node());
  const bool exclusive = ctx.node().attr_int("exclusive", 0) != 0, reverse = ctx.node().attr_int("reverse", 0) != 0;
  const int64_t outer = product(x.dims(), 0, axis), n = x.dim(axis), inner = product(x.dims(), axis + 1);
  kiln::Tensor& y = ctx.make_output(0, x.dtype(), x.dims());
  dispatch_numeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    std::vector<C> acc(inner);
    for (int64_t o = 0; o < outer; ++o) {
      std::fill(acc.begin(), acc.end(), C(0));
      for (int64_t s = 0; s < n; ++s) {
        const int64_t j = reverse ? n - 1 - s : s;
        const T* in = xp + (o * n + j) * inner;
        T* out = yp + (o * n + j) * inner;
        for (int64_t i = 0; i < inner; ++i) {
          if (exclusive) { out[i] = static_cast<T>(acc[i]); acc[i] += static_cast<C>(in[i]); }
          else { acc[i] += static_cast<C>(in[i]); out[i] = static_cast<T>(acc[i]); }
        }
      }
    }
  });
}

// ---------------------------------------------------------------- Unique

void infer_unique(InferContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  const ir::Dim count = ctx.fresh_dim();
  const bool has_axis = ctx.node().has_attr("axis");
  if (!x.rank_known) {
    ctx.set_output(0, has_axis ? ir::TensorType::unranked(x.dtype) : ir::TensorType(x.dtype, {count}));
    ctx.set_output(1, DType::Int64, {count});
    ctx.set_output(2, DType::Int64, {ctx.fresh_dim()});
    ctx.set_output(3, DType::Int64, {count});
    return;
  }
  ir::Dim inverse_len;
  if (has_axis) {
    const int64_t axis = normalize_axis(ctx.node().attr_int("axis", 0), x.rank(), ctx.node());
    if (x.rank() == 0) ctx.fail("axis needs an input of rank >= 1");
    std::vector<ir::Dim> dims = x.dims;
    inverse_len = dims[axis];
    dims[axis] = count;
    ctx.set_output(0, x.dtype, dims);
  } else {
    int64_t numel = 1;
    for (const ir::Dim& d : x.dims) numel = d.is_static() && numel >= 0 ? numel * d.value : -1;
    inverse_len = numel >= 0 ? ir::Dim(numel) : ctx.fresh_dim();
    ctx.set_output(0, x.dtype, {count});
  }
  ctx.set_output(1, DType::Int64, {count});
  ctx.set_output(2, DType::Int64, {inverse_len});
  ctx.set_output(3, DType::Int64, {count});
}

void unique_kernel(KernelContext& ctx) {
  const kiln::Tensor& x = ctx.input(0);
  const bool sorted = ctx.node().attr_int("sorted", 1) != 0;
  const bool has_axis = ctx.node().has_attr("axis");
  // Without an axis, the flattened input's elements are the "slices".
  std::vector<int64_t> dims = has_axis ? x.dims() : std::vector<int64_t>{x.numel()};
  if (has_axis && x.rank() == 0) ctx.fail("axis needs an input of rank >= 1");
  const int64_t axis = has_axis ? normalize_axis(ctx.node().attr_int("axis", 0), x.rank(), ctx.node()) : 0;
  const int64_t outer = product(dims, 0, axis), n = dims[axis], inner = product(dims, axis + 1);
  dispatch_all(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = std::conditional_t<std::is_same_v<T, std::string>, std::string, compute_t<T>>;
    const T* xp = x.template data<T>();
    auto at = [&](int64_t o, int64_t j, int64_t i) -> C { return static_cast<C>(xp[(o * n + j) * inner + i]); };
    // Lexicographic comparison of slices a and b: -1, 0 or 1.
    auto compare = [&](int64_t a, int64_t b) {
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          C va = at(o, a, i), vb = at(o, b, i);
          if (va < vb) return -1;
          if (vb < va) return 1;
        }
      return 0;
    };
    std::vector<int64_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return compare(a, b) < 0; });
    // Groups of equal slices, in sorted order; a stable sort puts each group's first
    // occurrence at its front.
    std::vector<int64_t> first, count, group_of(n);
    for (int64_t p = 0; p < n; ++p) {
      if (p == 0 || compare(order[p - 1], order[p]) != 0) { first.push_back(order[p]); count.push_back(0); }
      group_of[order[p]] = static_cast<int64_t>(first.size()) - 1;
      ++count.back();
    }
    const int64_t u = static_cast<int64_t>(first.size());
    std::vector<int64_t> out_order(u);  // out_order[r] = group emitted at position r
    std::iota(out_order.begin(), out_order.end(), 0);
    if (!sorted)
      std::sort(out_order.begin(), out_order.end(), [&](int64_t a, int64_t b) { return first[a] < first[b]; });
    std::vector<int64_t> rank_of(u);
    for (int64_t r = 0; r < u; ++r) rank_of[out_order[r]] = r;

    std::vector<int64_t> ydims = has_axis ? x.dims() : std::vector<int64_t>{u};
    ydims[axis] = u;
    kiln::Tensor& y = ctx.make_output(0, x.dtype(), ydims);
    T* yp = y.template data<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t r = 0; r < u; ++r)
        for (int64_t i = 0; i < inner; ++i) yp[(o * u + r) * inner + i] = xp[(o * n + first[out_order[r]]) * inner + i];
    if (ctx.has_output(1)) {
      int64_t* p = ctx.make_output(1, DType::Int64, {u}).data<int64_t>();
      for (int64_t r = 0; r < u; ++r) p[r] = first[out_order[r]];
    }
    if (ctx.has_output(2)) {
      int64_t* p = ctx.make_output(2, DType::Int64, {n}).data<int64_t>();
      for (int64_t j = 0; j < n; ++j) p[j] = rank_of[group_of[j]];
    }
    if (ctx.has_output(3)) {
      int64_t* p = ctx.make_output(3, DType::Int64, {u}).data<int64_t>();
      for (int64_t r = 0; r < u; ++r) p[r] = count[out_order[r]];
    }
  });
}

// ---------------------------------------------------------------- NonMaxSuppression

void infer_nms(InferContext& ctx) {
  const ir::TensorType& boxes = ctx.input(0);
  const ir::TensorType& scores = ctx.input(1);
  if (boxes.rank_known && (boxes.rank() != 3 || (boxes.dims[2].is_static() && boxes.dims[2].value != 4)))
    ctx.fail("boxes must have shape [batches, boxes, 4], got " + boxes.str());
  if (scores.rank_known && scores.rank() != 3)
    ctx.fail("scores must have shape [batches, classes, boxes], got " + scores.str());
  const int64_t cpb = ctx.node().attr_int("center_point_box", 0);
  if (cpb != 0 && cpb != 1) ctx.fail("center_point_box must be 0 or 1");
  ctx.set_output(0, DType::Int64, {ctx.fresh_dim(), 3});
}

struct Box {
  float y1, x1, y2, x2;
};

void nms_kernel(KernelContext& ctx) {
  const kiln::Tensor& boxes = ctx.input(0);
  const kiln::Tensor& scores = ctx.input(1);
  if (boxes.rank() != 3 || boxes.dim(2) != 4)
    ctx.fail("boxes must have shape [batches, boxes, 4], got " + boxes.describe());
  if (scores.rank() != 3 || scores.dim(0) != boxes.dim(0) || scores.dim(2) != boxes.dim(1))
    ctx.fail("scores " + scores.describe() + " do not match boxes " + boxes.describe());
  const int64_t max_out = ctx.has_input(2) && ctx.input(2).numel() > 0 ? ctx.input(2).as_int64(0) : 0;
  const double iou_threshold = ctx.has_input(3) && ctx.input(3).numel() > 0 ? ctx.input(3).as_double(0) : 0.0;
  const bool has_score_threshold = ctx.has_input(4) && ctx.input(4).numel() > 0;
  const double score_threshold = has_score_threshold ? ctx.input(4).as_double(0) : 0.0;
  const bool center = ctx.node().attr_int("center_point_box", 0) != 0;
  const int64_t nb = boxes.dim(0), ns = boxes.dim(1), nc = scores.dim(1);

  std::vector<Box> bx(nb * ns);
  for (int64_t i = 0; i < nb * ns; ++i) {
    double a = boxes.as_double(i * 4), b = boxes.as_double(i * 4 + 1), c = boxes.as_double(i * 4 + 2),
           d = boxes.as_double(i * 4 + 3);
    if (center) {  // [x_center, y_center, width, height]
      bx[i] = {float(b - d / 2), float(a - c / 2), float(b + d / 2), float(a + c / 2)};
    } else {  // [y1, x1, y2, x2], either diagonal
      bx[i] = {float(std::min(a, c)), float(std::min(b, d)), float(std::max(a, c)), float(std::max(b, d))};
    }
  }
  auto iou = [](const Box& p, const Box& q) {
    const double ih = std::min(p.y2, q.y2) - std::max(p.y1, q.y1), iw = std::min(p.x2, q.x2) - std::max(p.x1, q.x1);
    if (ih <= 0 || iw <= 0) return 0.0;
    const double inter = ih * iw;
    const double uni = double(p.y2 - p.y1) * (p.x2 - p.x1) + double(q.y2 - q.y1) * (q.x2 - q.x1) - inter;
    return uni <= 0 ? 0.0 : inter / uni;
  };

  std::vector<int64_t> selected;  // triples
  for (int64_t b = 0; b < nb && max_out > 0; ++b)
    for (int64_t c = 0; c < nc; ++c) {
      std::vector<int64_t> cand;
      std::vector<double> sc(ns);
      for (int64_t s = 0; s < ns; ++s) {
        sc[s] = scores.as_double((b * nc + c) * ns + s);
        if (!has_score_threshold || sc[s] > score_threshold) cand.push_back(s);
      }
      std::stable_sort(cand.begin(), cand.end(), [&](int64_t p, int64_t q) { return sc[p] > sc[q]; });
      std::vector<int64_t> keep;
      for (int64_t s : cand) {
        if (static_cast<int64_t>(keep.size()) >= max_out) break;
        bool suppressed = false;
        for (int64_t k : keep)
          if (iou(bx[b * ns + s], bx[b * ns + k]) > iou_threshold) { suppressed = true; break; }
        if (!suppressed) keep.push_back(s);
      }
      for (int64_t s : keep) selected.insert(selected.end(), {b, c, s});
    }
  kiln::Tensor& out = ctx.make_output(0, DType::Int64, {static_cast<int64_t>(selected.size() / 3), 3});
  std::copy(selected.begin(), selected.end(), out.data<int64_t>());
}

}  // namespace

KILN_REGISTER_OPS(sort) {
  reg.add({.name = "TopK", .min_inputs = 1, .max_inputs = 2, .min_outputs = 2, .max_outputs = 2,
           .pattern = PatternKind::Opaque, .infer = infer_topk, .kernel = topk_kernel});
  reg.add({.name = "CumSum", .since_version = 11, .min_inputs = 2, .max_inputs = 2, .pattern = PatternKind::Opaque,
           .infer = infer_cumsum, .kernel = cumsum_kernel});
  reg.add({.name = "Unique", .since_version = 11, .min_inputs = 1, .max_inputs = 1, .min_outputs = 1,
           .max_outputs = 4, .pattern = PatternKind::Opaque, .infer = infer_unique, .kernel = unique_kernel});
  reg.add({.name = "NonMaxSuppression", .since_version = 10, .min_inputs = 2, .max_inputs = 5,
           .pattern = PatternKind::Opaque, .infer = infer_nms, .kernel = nms_kernel});
}

}  // namespace kiln::ops
