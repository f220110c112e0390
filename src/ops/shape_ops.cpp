// Shape-level ops: Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Expand.
// Reshape-like ops alias their input buffer; Transpose and Expand copy through strides.
#include <algorithm>
#include <set>

#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

// The product of a run of symbolic dims: static when all are static, the one symbol when the
// others are static 1s, else a fresh symbol.
ir::Dim dims_product(InferContext& ctx, const std::vector<ir::Dim>& dims, size_t b, size_t e) {
  int64_t p = 1;
  std::vector<const ir::Dim*> syms;
  for (size_t i = b; i < e; ++i) {
    if (dims[i].is_static()) p *= dims[i].value;
    else syms.push_back(&dims[i]);
  }
  if (syms.empty()) return ir::Dim(p);
  if (p == 0) return ir::Dim(0);
  if (syms.size() == 1 && p == 1 && syms[0]->is_symbolic()) return *syms[0];
  return ctx.fresh_dim();
}

// Axes for Squeeze/Unsqueeze: an attribute before opset 13, an optional input from 13.
// Returns false when the axes are given but not known at compile time.
bool axes_of(InferContext& ctx, std::vector<int64_t>& axes, bool& given) {
  given = false;
  if (ctx.opset() < 13) {
    given = ctx.node().has_attr("axes");
    axes = ctx.node().attr_ints("axes");
    return true;
  }
  if (!ctx.has_input(1)) return true;
  given = true;
  const Tensor* v = ctx.value(1);
  if (!v) return false;
  axes = v->to_int64_vector();
  return true;
}

std::vector<int64_t> kernel_axes(KernelContext& ctx, bool& given) {
  given = false;
  if (ctx.opset() < 13) {
    given = ctx.node().has_attr("axes");
    return ctx.node().attr_ints("axes");
  }
  if (!ctx.has_input(1)) return {};
  given = true;
  return ctx.input(1).to_int64_vector();
}

void check_unique(const std::vector<int64_t>& axes, const ir::Node& node) {
  std::set<int64_t> s(axes.begin(), axes.end());
  if (s.size() != axes.size()) throw Error(node.describe() + ": axes contain duplicates");
}

// ---------------------------------------------------------------- Shape / Size

void shape_range(int64_t rank, int64_t opset, const ir::Node& node, int64_t& b, int64_t& e) {
  b = 0;
  e = rank;
  if (opset < 15) return;
  b = node.attr_int("start", 0);
  e = node.attr_int("end", rank);
  if (b < 0) b += rank;
  if (e < 0) e += rank;
  b = std::clamp<int64_t>(b, 0, rank);
  e = std::clamp<int64_t>(e, 0, rank);
  if (e < b) e = b;
}

void infer_shape(InferContext& ctx) {
  const ir::TensorType& in = ctx.input(0);
  if (!in.rank_known) {
    ctx.set_output(0, DType::Int64, {ctx.fresh_dim()});
    return;
  }
  int64_t b, e;
  shape_range(in.rank(), ctx.opset(), ctx.node(), b, e);
  bool all_static = true;
  std::vector<int64_t> vals;
  for (int64_t i = b; i < e; ++i) {
    if (!in.dims[i].is_static()) all_static = false;
    else vals.push_back(in.dims[i].value);
  }
  if (all_static)
    ctx.set_output_value(0, Tensor::from_vector<int64_t>({e - b}, vals));
  else
    ctx.set_output(0, DType::Int64, {ir::Dim(e - b)});
}

void kernel_shape(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  int64_t b, e;
  shape_range(in.rank(), ctx.opset(), ctx.node(), b, e);
  std::vector<int64_t> vals(in.dims().begin() + b, in.dims().begin() + e);
  ctx.set_output(0, Tensor::from_vector<int64_t>({e - b}, vals));
}

void infer_size(InferContext& ctx) {
  const ir::TensorType& in = ctx.input(0);
  if (auto n = in.static_numel()) ctx.set_output_value(0, Tensor::scalar<int64_t>(*n));
  else ctx.set_output(0, DType::Int64, {});
}

// ---------------------------------------------------------------- Reshape

bool reshape_shape_known(InferContext& ctx, std::vector<int64_t>& shape) {
  if (ctx.opset() < 5) {
    shape = ctx.node().attr_ints("shape");
    return true;
  }
  const Tensor* v = ctx.value(1);
  if (!v) return false;
  shape = v->to_int64_vector();
  return true;
}

// Resolves a requested shape against concrete input dims (0 = copy, -1 = inferred).
std::vector<int64_t> resolve_reshape(const std::vector<int64_t>& in, std::vector<int64_t> shape, bool allowzero,
                                     const ir::Node& node) {
  int infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t s = shape[i];
    if (s == -1) {
      if (infer_at >= 0) throw Error(node.describe() + ": shape has more than one -1");
      infer_at = static_cast<int>(i);
      continue;
    }
    if (s == 0 && !allowzero) {
      if (i >= in.size()) throw Error(node.describe() + ": shape entry 0 at position " + std::to_string(i) +
                                      " has no input dim to copy");
      s = shape[i] = in[i];
    }
    if (s < 0) throw Error(node.describe() + ": invalid shape entry " + std::to_string(s));
    known = mul_dims(known, s);
  }
  const int64_t n = product(in);
  if (infer_at >= 0) {
    if (known == 0 || n % known != 0)
      throw Error(node.describe() + ": cannot infer -1 when reshaping " + std::to_string(n) + " elements");
    shape[infer_at] = n / known;
  } else if (known != n) {
    throw Error(node.describe() + ": cannot reshape " + std::to_string(n) + " elements into " +
                std::to_string(known));
  }
  return shape;
}

void infer_reshape(InferContext& ctx) {
  const ir::TensorType& in = ctx.input(0);
  const bool allowzero = ctx.opset() >= 14 && ctx.node().attr_int("allowzero", 0) != 0;
  std::vector<int64_t> shape;
  if (!reshape_shape_known(ctx, shape)) {
    const ir::TensorType& st = ctx.input(1);
    if (st.rank_known && st.rank() == 1 && st.dims[0].is_static()) {
      std::vector<ir::Dim> dims;
      for (int64_t i = 0; i < st.dims[0].value; ++i) dims.push_back(ctx.fresh_dim());
      ctx.set_output(0, in.dtype, dims);
    } else {
      ctx.set_output(0, ir::TensorType::unranked(in.dtype));
    }
    return;
  }
  if (in.is_static()) {
    ctx.set_output(0, ir::TensorType::from_dims(in.dtype, resolve_reshape(in.static_dims(), shape, allowzero, ctx.node())));
    return;
  }
  std::vector<ir::Dim> out(shape.size());
  int infer_at = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t s = shape[i];
    if (s == -1) {
      if (infer_at >= 0) ctx.fail("shape has more than one -1");
      infer_at = static_cast<int>(i);
    } else if (s == 0 && !allowzero) {
      if (!in.rank_known) { out[i] = ctx.fresh_dim(); continue; }
      if (static_cast<int>(i) >= in.rank()) ctx.fail("shape entry 0 at position " + std::to_string(i) + " has no input dim to copy");
      out[i] = in.dims[i];
    } else if (s < 0) {
      ctx.fail("invalid shape entry " + std::to_string(s));
    } else {
      out[i] = ir::Dim(s);
    }
  }
  if (infer_at >= 0) {
    // -1 = (input extent) / (other output extents): cancel symbols common to both sides.
    ir::Dim res = ctx.fresh_dim();
    if (in.rank_known) {
      std::multiset<std::string> in_syms, out_syms;
      int64_t in_p = 1, out_p = 1;
      bool unknown = false;
      for (const auto& d : in.dims) {
        if (d.is_static()) in_p *= d.value;
        else if (d.is_symbolic()) in_syms.insert(d.symbol);
        else unknown = true;
      }
      for (size_t i = 0; i < out.size(); ++i) {
        if (static_cast<int>(i) == infer_at) continue;
        if (out[i].is_static()) out_p *= out[i].value;
        else if (out[i].is_symbolic()) {
          auto it = in_syms.find(out[i].symbol);
          if (it != in_syms.end()) in_syms.erase(it);
          else out_syms.insert(out[i].symbol);
        } else unknown = true;
      }
      if (!unknown && out_syms.empty() && out_p != 0) {
        if (in_syms.empty()) {
          if (in_p % out_p != 0) ctx.fail("cannot infer -1 when reshaping");
          res = ir::Dim(in_p / out_p);
        } else if (in_syms.size() == 1 && in_p == out_p) {
          res = ir::Dim::sym(*in_syms.begin());
        }
      }
    }
    out[infer_at] = res;
  }
  ctx.set_output(0, in.dtype, out);
}

void kernel_reshape(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  std::vector<int64_t> shape =
      ctx.opset() < 5 ? ctx.node().attr_ints("shape") : ctx.input(1).to_int64_vector();
  const bool allowzero = ctx.opset() >= 14 && ctx.node().attr_int("allowzero", 0) != 0;
  ctx.set_output(0, in.reshaped(resolve_reshape(in.dims(), shape, allowzero, ctx.node())));
}

// ---------------------------------------------------------------- Flatten

int64_t flatten_axis(int64_t axis, int64_t rank, const ir::Node& node) {
  if (axis < -rank || axis > rank)
    throw Error(node.describe() + ": axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

void infer_flatten(InferContext& ctx) {
  const ir::TensorType& in = ctx.input(0);
  if (!in.rank_known) {
    ctx.set_output(0, in.dtype, {ctx.fresh_dim(), ctx.fresh_dim()});
    return;
  }
  const int64_t a = flatten_axis(ctx.node().attr_int("axis", 1), in.rank(), ctx.node());
  ctx.set_output(0, in.dtype, {dims_product(ctx, in.dims, 0, a), dims_product(ctx, in.dims, a, in.dims.size())});
}

void kernel_flatten(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const int64_t a = flatten_axis(ctx.node().attr_int("axis", 1), in.rank(), ctx.node());
  ctx.set_output(0, in.reshaped({product(in.dims(), 0, a), product(in.dims(), a)}));
}

// ---------------------------------------------------------------- Squeeze / Unsqueeze

void infer_squeeze(InferContext& ctx) {
  const ir::TensorType& in = ctx.input(0);
  std::vector<int64_t> axes;
  bool given;
  if (!axes_of(ctx, axes, given) || !in.rank_known) {
    ctx.set_output(0, ir::TensorType::unranked(in.dtype));
    return;
  }
  std::vector<bool> drop(in.rank(), false);
  if (given) {
    for (int64_t a : normalize_axes(axes, in.rank(), ctx.node())) {
      const ir::Dim& d = in.dims[a];
      if (d.is_static() && d.value != 1) ctx.fail("cannot squeeze axis " + std::to_string(a) + " of extent " + d.str());
      drop[a] = true;
    }
  } else {
    for (int i = 0; i < in.rank(); ++i) {
      if (!in.dims[i].is_static()) {  // might be 1 at run time
        ctx.set_output(0, ir::TensorType::unranked(in.dtype));
        return;
      }
      drop[i] = in.dims[i].value == 1;
    }
  }
  std::vector<ir::Dim> out;
  for (int i = 0; i < in.rank(); ++i)
    if (!drop[i]) out.push_back(in.dims[i]);
  ctx.set_output(0, in.dtype, out);
}

void kernel_squeeze(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  bool given;
  std::vector<int64_t> axes = kernel_axes(ctx, given);
  std::vector<bool> drop(in.rank(), false);
  if (given) {
    for (int64_t a : normalize_axes(axes, in.rank(), ctx.node())) {
      if (in.dim(a) != 1) ctx.fail("cannot squeeze axis " + std::to_string(a) + " of extent " + std::to_string(in.dim(a)));
      drop[a] = true;
    }
  } else {
    for (int i = 0; i < in.rank(); ++i) drop[i] = in.dim(i) == 1;
  }
  std::vector<int64_t> out;
  for (int i = 0; i < in.rank(); ++i)
    if (!drop[i]) out.push_back(in.dim(i));
  ctx.set_output(0, in.reshaped(out));
}

std::vector<bool> unsqueeze_mask(const std::vector<int64_t>& axes, int64_t out_rank, const ir::Node& node) {
  std::vector<int64_t> norm = normalize_axes(axes, out_rank, node);
  check_unique(norm, node);
  std::vector<bool> ins(out_rank, false);
  for (int64_t a : norm) ins[a] = true;
  return ins;
}

void infer_unsqueeze(InferContext& ctx) {
  const ir::TensorType& in = ctx.input(0);
  std::vector<int64_t> axes;
  bool given;
  const bool known = axes_of(ctx, axes, given);
  if (known && !given) ctx.fail("axes are required");
  if (!in.rank_known) {
    ctx.set_output(0, ir::TensorType::unranked(in.dtype));
    return;
  }
  if (!known) {
    const ir::TensorType& at = ctx.input(1);
    if (at.rank_known && at.rank() == 1 && at.dims[0].is_static()) {
      std::vector<ir::Dim> dims;
      for (int64_t i = 0; i < in.rank() + at.dims[0].value; ++i) dims.push_back(ctx.fresh_dim());
      ctx.set_output(0, in.dtype, dims);
    } else {
      ctx.set_output(0, ir::TensorType::unranked(in.dtype));
    }
    return;
  }
  const int64_t out_rank = in.rank() + static_cast<int64_t>(axes.size());
  std::vector<bool> ins = unsqueeze_mask(axes, out_rank, ctx.node());
  std::vector<ir::Dim> out;
  size_t j = 0;
  for (int64_t i = 0; i < out_rank; ++i) out.push_back(ins[i] ? ir::Dim(1) : in.dims[j++]);
  ctx.set_output(0, in.dtype, out);
}

void kernel_unsqueeze(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  bool given;
  std::vector<int64_t> axes = kernel_axes(ctx, given);
  if (!given) ctx.fail("axes are required");
  const int64_t out_rank = in.rank() + static_cast<int64_t>(axes.size());
  std::vector<bool> ins = unsqueeze_mask(axes, out_rank, ctx.node());
  std::vector<int64_t> out;
  size_t j = 0;
  for (int64_t i = 0; i < out_rank; ++i) out.push_back(ins[i] ? 1 : in.dim(static_cast<int>(j++)));
  ctx.set_output(0, in.reshaped(out));
}

// ---------------------------------------------------------------- Transpose

std::vector<int64_t> transpose_perm(const ir::Node& node, int64_t rank) {
  std::vector<int64_t> perm = node.attr_ints("perm");
  if (!node.has_attr("perm")) {
    for (int64_t i = rank; i-- > 0;) perm.push_back(i);
    return perm;
  }
  if (static_cast<int64_t>(perm.size()) != rank)
    throw Error(node.describe() + ": perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(rank));
  std::vector<bool> seen(rank, false);
  for (int64_t& p : perm) {
    p = normalize_axis(p, rank, node);
    if (seen[p]) throw Error(node.describe() + ": perm is not a permutation");
    seen[p] = true;
  }
  return perm;
}

void infer_transpose(InferContext& ctx) {
  const ir::TensorType& in = ctx.input(0);
  if (!in.rank_known) {
    std::vector<int64_t> perm = ctx.node().attr_ints("perm");
    if (ctx.node().has_attr("perm")) {
      std::vector<ir::Dim> dims;
      for (size_t i = 0; i < perm.size(); ++i) dims.push_back(ctx.fresh_dim());
      ctx.set_output(0, in.dtype, dims);
    } else {
      ctx.set_output(0, in);
    }
    return;
  }
  std::vector<int64_t> perm = transpose_perm(ctx.node(), in.rank());
  std::vector<ir::Dim> out;
  for (int64_t p : perm) out.push_back(in.dims[p]);
  ctx.set_output(0, in.dtype, out);
}

void kernel_transpose(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  std::vector<int64_t> perm = transpose_perm(ctx.node(), in.rank());
  std::vector<int64_t> out_dims, strides, own = strides_of(in.dims());
  for (int64_t p : perm) {
    out_dims.push_back(in.dim(static_cast<int>(p)));
    strides.push_back(own[p]);
  }
  Tensor& out = ctx.make_output(0, in.dtype(), out_dims);
  copy_strided(in, out, out.dims(), strides);
}

// ---------------------------------------------------------------- Expand

void infer_expand(InferContext& ctx) {
  const ir::TensorType& in = ctx.input(0);
  const Tensor* shape = ctx.value(1);
  if (shape) {
    ctx.set_output(0, broadcast_types(ctx, {in, ir::TensorType::from_dims(in.dtype, shape->to_int64_vector())}, in.dtype));
    return;
  }
  const ir::TensorType& st = ctx.input(1);
  if (in.rank_known && st.rank_known && st.rank() == 1 && st.dims[0].is_static()) {
    const int64_t r = std::max<int64_t>(in.rank(), st.dims[0].value);
    std::vector<ir::Dim> dims;
    for (int64_t i = 0; i < r; ++i) dims.push_back(ctx.fresh_dim());
    ctx.set_output(0, in.dtype, dims);
  } else {
    ctx.set_output(0, ir::TensorType::unranked(in.dtype));
  }
}

void kernel_expand(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const Tensor& shape = ctx.input(1);
  if (shape.rank() != 1) ctx.fail("shape must be 1-D");
  std::vector<int64_t> sv = shape.to_int64_vector();
  for (int64_t s : sv)
    if (s < 0) ctx.fail("shape has a negative entry " + std::to_string(s));
  std::vector<int64_t> out_dims = broadcast_dims({in.dims(), sv}, ctx.node());
  Tensor& out = ctx.make_output(0, in.dtype(), out_dims);
  copy_strided(in, out, out.dims(), broadcast_strides(in.dims(), out_dims));
}

}  // namespace

KILN_REGISTER_OPS(shape_ops) {
  reg.add({.name = "Shape", .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::Opaque,
           .infer = infer_shape, .kernel = kernel_shape});
  reg.add({.name = "Size", .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::Opaque,
           .infer = infer_size,
           .kernel = [](KernelContext& ctx) { ctx.set_output(0, Tensor::scalar<int64_t>(ctx.input(0).numel())); }});
  reg.add({.name = "Reshape", .min_inputs = 1, .max_inputs = 2, .pattern = PatternKind::Injective,
           .infer =
               [](InferContext& ctx) {
                 if (ctx.opset() >= 5 && !ctx.has_input(1)) ctx.fail("missing required input 1 (shape)");
                 infer_reshape(ctx);
               },
           .kernel = kernel_reshape});
  reg.add({.name = "Flatten", .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::Injective,
           .infer = infer_flatten, .kernel = kernel_flatten});
  reg.add({.name = "Squeeze", .min_inputs = 1, .max_inputs = 2, .pattern = PatternKind::Injective,
           .infer = infer_squeeze, .kernel = kernel_squeeze});
  reg.add({.name = "Unsqueeze", .min_inputs = 1, .max_inputs = 2, .pattern = PatternKind::Injective,
           .infer = infer_unsqueeze, .kernel = kernel_unsqueeze});
  reg.add({.name = "Transpose", .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::Injective,
           .infer = infer_transpose, .kernel = kernel_transpose});
  reg.add({.name = "Expand", .since_version = 8, .min_inputs = 2, .max_inputs = 2, .pattern = PatternKind::Injective,
           .infer = infer_expand, .kernel = kernel_expand});
}

}  // namespace kiln::ops
