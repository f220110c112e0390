// Reductions: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare and ArgMax/ArgMin.
//
// The axes of a Reduce* op are an attribute up to opset 12 (ReduceSum) or 17 (the others) and
// an optional input afterwards, where noop_with_empty_axes decides whether "no axes" means
// "reduce everything" (the default) or "pass the input through".
#include <cmath>
#include <limits>
#include <optional>

#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

enum class ReduceKind { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

struct ReduceOp {
  const char* name;
  ReduceKind kind;
  int axes_input_since;  // opset from which axes is an input instead of an attribute
};

bool axes_are_input(const ReduceOp& op, int64_t opset) { return opset >= op.axes_input_since; }

// The axes a node asks for: nullopt when they come from an input whose value is not known.
// Validates the attribute/input form against the opset.
template <typename Ctx>
std::optional<std::vector<int64_t>> requested_axes(const Ctx& ctx, const ReduceOp& op,
                                                   const kiln::Tensor* axes_value) {
  const ir::Node& n = ctx.node();
  if (axes_are_input(op, ctx.opset())) {
    if (n.has_attr("axes"))
      ctx.fail("axes is an input from opset " + std::to_string(op.axes_input_since) + ", not an attribute");
    if (!ctx.has_input(1)) return std::vector<int64_t>{};
    if (!axes_value) return std::nullopt;
    if (!dtype_is_integer(axes_value->dtype()) || axes_value->rank() > 1)
      ctx.fail("axes input must be a 1-D integer tensor, got " + axes_value->describe());
    return axes_value->to_int64_vector();
  }
  if (ctx.has_input(1))
    ctx.fail("axes as an input needs opset >= " + std::to_string(op.axes_input_since));
  return n.attr_ints("axes");
}

// Which axes of a rank-`rank` input get reduced; nullopt = no reduction at all (noop).
template <typename Ctx>
std::optional<std::vector<bool>> reduced_mask(const Ctx& ctx, const std::vector<int64_t>& axes, int64_t rank) {
  if (axes.empty()) {
    if (ctx.node().attr_int("noop_with_empty_axes", 0) != 0) return std::nullopt;
    return std::vector<bool>(rank, true);
  }
  std::vector<bool> mask(rank, false);
  for (int64_t a : normalize_axes(axes, rank, ctx.node())) {
    if (a >= rank) ctx.fail("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
    mask[a] = true;
  }
  return mask;
}

void infer_reduce(InferContext& ctx, const ReduceOp& op) {
  const ir::TensorType& x = ctx.input(0);
  const bool keep = ctx.node().attr_int("keepdims", 1) != 0;
  auto axes = requested_axes(ctx, op, ctx.value(1));
  if (!axes) {
    // Unknown axes: with keepdims the rank stays, every extent may become 1.
    if (!keep || !x.rank_known) return ctx.set_output(0, ir::TensorType::unranked(x.dtype));
    std::vector<ir::Dim> dims;
    for (const ir::Dim& d : x.dims) dims.push_back(d.is_static() && d.value == 1 ? d : ctx.fresh_dim());
    return ctx.set_output(0, x.dtype, dims);
  }
  if (axes->empty() && ctx.node().attr_int("noop_with_empty_axes", 0) != 0) return ctx.set_output(0, x);
  if (!x.rank_known) return ctx.set_output(0, ir::TensorType::unranked(x.dtype));
  auto mask = reduced_mask(ctx, *axes, x.rank());
  std::vector<ir::Dim> dims;
  for (int i = 0; i < x.rank(); ++i) {
    if (!(*mask)[i]) dims.push_back(x.dims[i]);
    else if (keep) dims.push_back(1);
  }
  ctx.set_output(0, x.dtype, dims);
}

// Accumulates in double for floating types, in the element type for integers.
template <typename A>
bool is_nan(A v) {
  if constexpr (std::is_floating_point_v<A>) return std::isnan(v);
  else return false;
}

template <typename T>
using acc_t = std::conditional_t<is_float_v<T>, double, T>;

template <typename T>
void reduce_typed(ReduceKind kind, const kiln::Tensor& x, const std::vector<int64_t>& keep_dims, kiln::Tensor& y) {
  using C = compute_t<T>;
  using A = acc_t<T>;
  const int64_t nout = product(keep_dims);
  const int64_t count = nout == 0 ? 0 : x.numel() / nout;
  const T* xp = x.data<T>();
  BroadcastWalker walker(x.dims(), {keep_dims});
  constexpr A lowest = std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity()
                                                            : std::numeric_limits<A>::lowest();
  constexpr A highest = std::numeric_limits<A>::has_infinity ? std::numeric_limits<A>::infinity()
                                                             : std::numeric_limits<A>::max();
  auto in = [&](int64_t i) { return static_cast<A>(static_cast<C>(xp[i])); };
  auto fold = [&](A init, auto combine) {
    std::vector<A> acc(nout, init);
    walker.run([&](int64_t i, const int64_t* off) { combine(acc[off[0]], in(i)); });
    return acc;
  };

  std::vector<A> acc;
  switch (kind) {
    case ReduceKind::Sum:
    case ReduceKind::Mean:
    case ReduceKind::LogSum:
      acc = fold(A(0), [](A& a, A v) { a += v; });
      break;
    case ReduceKind::Prod: acc = fold(A(1), [](A& a, A v) { a *= v; }); break;
    case ReduceKind::L1:
      acc = fold(A(0), [](A& a, A v) {
        if constexpr (std::is_signed_v<A>) a += v < 0 ? A(-v) : v;
        else a += v;
      });
      break;
    case ReduceKind::L2:
    case ReduceKind::SumSquare: acc = fold(A(0), [](A& a, A v) { a += v * v; }); break;
    // is_nan keeps a NaN once seen, as numpy does.
    case ReduceKind::Max: acc = fold(lowest, [](A& a, A v) { if (v > a || is_nan(v)) a = v; }); break;
    case ReduceKind::Min: acc = fold(highest, [](A& a, A v) { if (v < a || is_nan(v)) a = v; }); break;
    case ReduceKind::LogSumExp: {
      // Subtract the running max so large inputs do not overflow exp().
      std::vector<A> mx = fold(lowest, [](A& a, A v) { if (v > a || is_nan(v)) a = v; });
      for (A& m : mx)
        if (!std::isfinite(static_cast<double>(m))) m = A(0);
      acc.assign(nout, A(0));
      walker.run([&](int64_t i, const int64_t* off) {
        acc[off[0]] += static_cast<A>(std::exp(static_cast<double>(in(i) - mx[off[0]])));
      });
      for (int64_t i = 0; i < nout; ++i)
        acc[i] = static_cast<A>(std::log(static_cast<double>(acc[i])) + static_cast<double>(mx[i]));
      break;
    }
  }
  T* yp = y.data<T>();
  for (int64_t i = 0; i < nout; ++i) {
    A a = acc[i];
    switch (kind) {
      case ReduceKind::Mean:
        if constexpr (std::is_floating_point_v<A>) a = a / static_cast<A>(count);  // 0/0 = NaN
        else a = count == 0 ? A(0) : static_cast<A>(a / static_cast<A>(count));
        break;
      case ReduceKind::L2: a = static_cast<A>(std::sqrt(static_cast<double>(a))); break;
      case ReduceKind::LogSum: a = static_cast<A>(std::log(static_cast<double>(a))); break;
      default: break;
    }
    yp[i] = static_cast<T>(static_cast<C>(a));
  }
}

void reduce_kernel(KernelContext& ctx, const ReduceOp& op) {
  const kiln::Tensor& x = ctx.input(0);
  const bool keep = ctx.node().attr_int("keepdims", 1) != 0;
  const kiln::Tensor* axes_t = ctx.has_input(1) ? &ctx.input(1) : nullptr;
  auto axes = requested_axes(ctx, op, axes_t);
  auto mask = reduced_mask(ctx, *axes, x.rank());
  if (!mask) return ctx.set_output(0, x);
  std::vector<int64_t> keep_dims, out_dims;
  for (int i = 0; i < x.rank(); ++i) {
    keep_dims.push_back((*mask)[i] ? 1 : x.dim(i));
    if (!(*mask)[i]) out_dims.push_back(x.dim(i));
    else if (keep) out_dims.push_back(1);
  }
  // Booleans (ReduceMax and ReduceMin from opset 20): any and all, reduced as bytes.
  if (x.dtype() == DType::Bool && (op.kind == ReduceKind::Max || op.kind == ReduceKind::Min) && ctx.opset() >= 20) {
    kiln::Tensor bytes(DType::UInt8, x.dims()), reduced(DType::UInt8, out_dims);
    for (int64_t i = 0; i < x.numel(); ++i) bytes.data<uint8_t>()[i] = x.data<bool>()[i] ? 1 : 0;
    reduce_typed<uint8_t>(op.kind, bytes, keep_dims, reduced);
    kiln::Tensor& y = ctx.make_output(0, DType::Bool, out_dims);
    for (int64_t i = 0; i < y.numel(); ++i) y.data<bool>()[i] = reduced.data<uint8_t>()[i] != 0;
    return;
  }
  kiln::Tensor& y = ctx.make_output(0, x.dtype(), out_dims);
  dispatch_numeric(x.dtype(), [&](auto tag) { reduce_typed<decltype(tag)>(op.kind, x, keep_dims, y); });
}

// ---------------------------------------------------------------- ArgMax / ArgMin

void infer_arg(InferContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (!x.rank_known) return ctx.set_output(0, ir::TensorType::unranked(DType::Int64));
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", 0), x.rank(), ctx.node());
  if (x.rank() == 0) ctx.fail("input must have rank >= 1");
  if (x.dims[axis].is_static() && x.dims[axis].value == 0) ctx.fail("cannot take the arg-extreme of an empty axis");
  std::vector<ir::Dim> dims = x.dims;
  if (ctx.node().attr_int("keepdims", 1) != 0) dims[axis] = 1;
  else dims.erase(dims.begin() + axis);
  ctx.set_output(0, DType::Int64, dims);
}

template <bool IsMax>
void arg_kernel(KernelContext& ctx) {
  const kiln::Tensor& x = ctx.input(0);
  if (x.rank() == 0) ctx.fail("input must have rank >= 1");
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", 0), x.rank(), ctx.node());
  const bool last = ctx.node().attr_int("select_last_index", 0) != 0;
  const int64_t outer = product(x.dims(), 0, axis), n = x.dim(axis), inner = product(x.dims(), axis + 1);
  if (n == 0) ctx.fail("cannot take the arg-extreme of an empty axis");
  std::vector<int64_t> dims = x.dims();
  if (ctx.node().attr_int("keepdims", 1) != 0) dims[axis] = 1;
  else dims.erase(dims.begin() + axis);
  kiln::Tensor& y = ctx.make_output(0, DType::Int64, dims);
  int64_t* yp = y.data<int64_t>();
  dispatch_numeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* xp = x.data<T>();
    // Walk the reduced axis row by row so the inner loop stays contiguous.
    std::vector<C> best(inner);
    for (int64_t o = 0; o < outer; ++o) {
      const T* base = xp + o * n * inner;
      int64_t* idx = yp + o * inner;
      for (int64_t i = 0; i < inner; ++i) { best[i] = static_cast<C>(base[i]); idx[i] = 0; }
      for (int64_t j = 1; j < n; ++j) {
        const T* row = base + j * inner;
        for (int64_t i = 0; i < inner; ++i) {
          C v = static_cast<C>(row[i]);
          bool better = IsMax ? (last ? v >= best[i] : v > best[i]) : (last ? v <= best[i] : v < best[i]);
          if (better) { best[i] = v; idx[i] = j; }
        }
      }
    }
  });
}

const ReduceOp kReduceOps[] = {
    {"ReduceSum", ReduceKind::Sum, 13},       {"ReduceMean", ReduceKind::Mean, 18},
    {"ReduceMax", ReduceKind::Max, 18},       {"ReduceMin", ReduceKind::Min, 18},
    {"ReduceProd", ReduceKind::Prod, 18},     {"ReduceL1", ReduceKind::L1, 18},
    {"ReduceL2", ReduceKind::L2, 18},         {"ReduceLogSum", ReduceKind::LogSum, 18},
    {"ReduceLogSumExp", ReduceKind::LogSumExp, 18}, {"ReduceSumSquare", ReduceKind::SumSquare, 18},
};

}  // namespace

KILN_REGISTER_OPS(reduce) {
  for (const ReduceOp& op : kReduceOps) {
    reg.add({.name = op.name, .max_version = 18, .min_inputs = 1, .max_inputs = 2, .pattern = PatternKind::CommReduce,
             .infer = [&op](InferContext& ctx) { infer_reduce(ctx, op); },
             .kernel = [&op](KernelContext& ctx) { reduce_kernel(ctx, op); }});
  }
  reg.add({.name = "ArgMax", .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::CommReduce,
           .infer = infer_arg, .kernel = arg_kernel<true>});
  reg.add({.name = "ArgMin", .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::CommReduce,
           .infer = infer_arg, .kernel = arg_kernel<false>});
}

}  // namespace kiln::ops
