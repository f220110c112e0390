#include "ops/core/shape_util.h"

#include <algorithm>

#include "ir/strided_copy.h"
#include "ops/core/dispatch.h"

namespace kiln::ops {

bool same_type(const ir::TensorType& a, const ir::TensorType& b) {
  if (a.dtype != b.dtype || a.rank_known != b.rank_known || a.is_sequence != b.is_sequence ||
      a.is_optional != b.is_optional || a.rank() != b.rank())
    return false;
  for (int i = 0; i < a.rank(); ++i)
    if (!a.dims[i].same_as(b.dims[i])) return false;
  return true;
}

ir::TensorType unify_types(const ir::TensorType& a, const ir::TensorType& b, const std::function<ir::Dim()>& fresh) {
  if (same_type(a, b)) return a;
  ir::TensorType t = ir::TensorType::unranked(a.dtype != DType::Undefined ? a.dtype : b.dtype);
  t.is_sequence = a.is_sequence || b.is_sequence;
  t.is_optional = a.is_optional || b.is_optional;
  if (a.rank_known && b.rank_known && a.rank() == b.rank()) {
    t.rank_known = true;
    for (int i = 0; i < a.rank(); ++i) t.dims.push_back(a.dims[i].same_as(b.dims[i]) ? a.dims[i] : fresh());
  }
  return t;
}

int64_t normalize_axis(int64_t axis, int64_t rank, const ir::Node& node) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    throw Error(node.describe() + ": axis " + std::to_string(axis) + " is out of range for rank " +
                std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank, const ir::Node& node) {
  std::vector<int64_t> out;
  for (int64_t a : axes) out.push_back(normalize_axis(a, rank, node));
  return out;
}

int64_t mul_dims(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw Error("shape overflows int64");
  return r;
}

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < std::min(end, dims.size()); ++i) p = mul_dims(p, dims[i]);
  return p;
}

std::vector<int64_t> strides_of(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);
  }
  return s + "]";
}

void copy_strided(const Tensor& in, Tensor& out, const std::vector<int64_t>& view_dims,
                  const std::vector<int64_t>& in_strides, int64_t base) {
  dispatch_all(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    ir::strided_copy<T>(in.data<T>(), out.data<T>(), view_dims, in_strides, base);
  });
}

std::vector<int64_t> broadcast_dims(const std::vector<std::vector<int64_t>>& shapes, const ir::Node& node) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto& s : shapes) {
    size_t off = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t d = s[i];
      int64_t& o = out[off + i];
      if (d == o || d == 1) continue;
      if (o == 1) { o = d; continue; }
      throw Error(node.describe() + ": shapes cannot be broadcast (dimension " + std::to_string(d) +
                  " vs " + std::to_string(o) + ")");
    }
  }
  return out;
}

ir::TensorType broadcast_types(InferContext& ctx, const std::vector<ir::TensorType>& types, DType out) {
  size_t rank = 0;
  for (const auto& t : types) {
    if (!t.rank_known) return ir::TensorType::unranked(out);
    rank = std::max(rank, t.dims.size());
  }
  std::vector<ir::Dim> dims(rank, ir::Dim(1));
  for (const auto& t : types) {
    size_t off = rank - t.dims.size();
    for (size_t i = 0; i < t.dims.size(); ++i) {
      const ir::Dim& d = t.dims[i];
      ir::Dim& o = dims[off + i];
      if (d.is_static() && d.value == 1) continue;
      if (o.is_static() && o.value == 1) { o = d; continue; }
      if (d.same_as(o)) continue;
      if (d.is_static() && o.is_static())
        ctx.fail("shapes cannot be broadcast (dimension " + d.str() + " vs " + o.str() + ")");
      // A symbol against a static extent > 1 must equal it (or be 1): take the static one.
      if (d.is_static()) { o = d; continue; }
      if (o.is_static()) continue;
      o = ctx.fresh_dim();
    }
  }
  return ir::TensorType(out, std::move(dims));
}

std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  std::vector<int64_t> s(out.size(), 0);
  std::vector<int64_t> own = strides_of(in);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) s[off + i] = in[i] == 1 ? 0 : own[i];
  return s;
}

BroadcastWalker::BroadcastWalker(const std::vector<int64_t>& out, const std::vector<std::vector<int64_t>>& ins)
    : out_(out) {
  for (const auto& in : ins) strides_.push_back(broadcast_strides(in, out));
}

void infer_same_as_input(InferContext& ctx) { ctx.set_output(0, ctx.input(0)); }

void infer_same_shape(InferContext& ctx, DType dtype) {
  ir::TensorType t = ctx.input(0);
  t.dtype = dtype;
  ctx.set_output(0, t);
}

}  // namespace kiln::ops
