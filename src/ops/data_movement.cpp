// Data movement ops: Concat, Split, Slice, Tile, Pad, DepthToSpace, SpaceToDepth, Trilu,
// ReverseSequence, EyeLike.
#include <algorithm>
#include <limits>

#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"
#include "ops/core/pad_args.h"
#include "ops/core/slice_args.h"

namespace kiln::ops {

namespace {

std::vector<ir::Dim> fresh_dims(InferContext& ctx, int64_t n) {
  std::vector<ir::Dim> d;
  for (int64_t i = 0; i < n; ++i) d.push_back(ctx.fresh_dim());
  return d;
}

// ---------------------------------------------------------------- Concat

void infer_concat(InferContext& ctx) {
  const ir::TensorType* ranked = nullptr;
  DType dt = DType::Undefined;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    const ir::TensorType& t = ctx.input(i);
    if (dt == DType::Undefined) dt = t.dtype;
    else if (t.dtype != DType::Undefined && t.dtype != dt) ctx.fail("inputs have different dtypes");
    if (t.rank_known && !ranked) ranked = &t;
  }
  if (!ranked) {
    ctx.set_output(0, ir::TensorType::unranked(dt));
    return;
  }
  const int rank = ranked->rank();
  if (rank == 0) ctx.fail("cannot concatenate scalars");
  const int64_t axis = normalize_axis(ctx.node().attr_int_required("axis"), rank, ctx.node());
  std::vector<ir::Dim> out(rank);
  int64_t sum = 0;
  bool sum_known = true;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    const ir::TensorType& t = ctx.input(i);
    if (!t.rank_known) { sum_known = false; continue; }
    if (t.rank() != rank) ctx.fail("inputs have different ranks");
    for (int d = 0; d < rank; ++d) {
      const ir::Dim& x = t.dims[d];
      if (d == axis) {
        if (x.is_static()) sum += x.value;
        else sum_known = false;
        continue;
      }
      ir::Dim& o = out[d];
      if (x.is_static() && o.is_static() && x.value != o.value)
        ctx.fail("dim " + std::to_string(d) + " differs between inputs (" + x.str() + " vs " + o.str() + ")");
      if (x.is_static() || (!o.is_static() && o.symbol.empty())) o = x;
    }
  }
  for (int d = 0; d < rank; ++d)
    if (d != axis && !out[d].is_static() && out[d].symbol.empty()) out[d] = ctx.fresh_dim();
  out[axis] = sum_known ? ir::Dim(sum) : ctx.fresh_dim();
  ctx.set_output(0, dt, out);
}

void kernel_concat(KernelContext& ctx) {
  std::vector<const Tensor*> ins;
  for (int i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i)) ins.push_back(&ctx.input(i));
  if (ins.empty()) ctx.fail("needs at least one input");
  const Tensor& first = *ins[0];
  const int rank = first.rank();
  if (rank == 0) ctx.fail("cannot concatenate scalars");
  const int64_t axis = normalize_axis(ctx.node().attr_int_required("axis"), rank, ctx.node());
  std::vector<int64_t> out_dims = first.dims();
  out_dims[axis] = 0;
  for (const Tensor* t : ins) {
    if (t->dtype() != first.dtype()) ctx.fail("inputs have different dtypes");
    if (t->rank() != rank) ctx.fail("inputs have different ranks");
    for (int d = 0; d < rank; ++d)
      if (d != axis && t->dim(d) != first.dim(d))
        ctx.fail("dim " + std::to_string(d) + " differs between inputs (" + t->describe() + " vs " + first.describe() + ")");
    out_dims[axis] += t->dim(static_cast<int>(axis));
  }
  Tensor& out = ctx.make_output(0, first.dtype(), out_dims);
  const int64_t outer = product(out_dims, 0, axis), out_row = product(out_dims, axis);
  dispatch_all(first.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* dst = out.data<T>();
    int64_t col = 0;
    for (const Tensor* t : ins) {
      const int64_t row = product(t->dims(), axis);
      const T* src = t->data<T>();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < row; ++j) dst[o * out_row + col + j] = src[o * row + j];
      col += row;
    }
  });
}

// ---------------------------------------------------------------- Split

// The split sizes when they are given (attribute or input), else empty.
bool split_sizes(const ir::Node& node, int64_t opset, const Tensor* split_input, bool has_split_input,
                 std::vector<int64_t>& sizes) {
  if (opset < 13) {
    sizes = node.attr_ints("split");
    return true;
  }
  if (!has_split_input) return true;
  if (!split_input) return false;
  sizes = split_input->to_int64_vector();
  return true;
}

std::vector<int64_t> equal_split(int64_t extent, int64_t n, int64_t opset, const ir::Node& node) {
  if (n < 1) throw Error(node.describe() + ": needs at least one output");
  std::vector<int64_t> s;
  if (extent % n == 0) {
    s.assign(n, extent / n);
  } else if (opset >= 18) {  // uneven: every chunk ceil(extent/n), the last one smaller
    const int64_t c = (extent + n - 1) / n;
    for (int64_t i = 0; i < n; ++i) s.push_back(std::max<int64_t>(0, std::min(c, extent - i * c)));
  } else {
    throw Error(node.describe() + ": axis extent " + std::to_string(extent) + " does not split evenly into " +
                std::to_string(n) + " outputs");
  }
  return s;
}

void check_split(const std::vector<int64_t>& sizes, int64_t extent, int n, const ir::Node& node) {
  if (static_cast<int>(sizes.size()) != n)
    throw Error(node.describe() + ": split has " + std::to_string(sizes.size()) + " entries for " + std::to_string(n) + " outputs");
  int64_t s = 0;
  for (int64_t v : sizes) {
    if (v < 0) throw Error(node.describe() + ": negative split size");
    s += v;
  }
  if (extent >= 0 && s != extent)
    throw Error(node.describe() + ": split sizes add up to " + std::to_string(s) + ", axis extent is " + std::to_string(extent));
}

void infer_split(InferContext& ctx) {
  const ir::TensorType& in = ctx.input(0);
  const int n = ctx.num_outputs();
  if (!in.rank_known) {
    for (int i = 0; i < n; ++i) ctx.set_output(i, ir::TensorType::unranked(in.dtype));
    return;
  }
  if (in.rank() == 0) ctx.fail("cannot split a scalar");
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", 0), in.rank(), ctx.node());
  const ir::Dim& ad = in.dims[axis];
  std::vector<int64_t> sizes;
  bool known = split_sizes(ctx.node(), ctx.opset(), ctx.value(1), ctx.has_input(1), sizes);
  if (known && sizes.empty() && ad.is_static()) sizes = equal_split(ad.value, n, ctx.opset(), ctx.node());
  if (known && !sizes.empty()) check_split(sizes, ad.is_static() ? ad.value : -1, n, ctx.node());
  for (int i = 0; i < n; ++i) {
    std::vector<ir::Dim> d = in.dims;
    d[axis] = !sizes.empty() ? ir::Dim(sizes[i]) : (n == 1 ? ad : ctx.fresh_dim());
    ctx.set_output(i, in.dtype, d);
  }
}

void kernel_split(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const int n = ctx.num_outputs();
  if (in.rank() == 0) ctx.fail("cannot split a scalar");
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", 0), in.rank(), ctx.node());
  const int64_t extent = in.dim(static_cast<int>(axis));
  std::vector<int64_t> sizes;
  split_sizes(ctx.node(), ctx.opset(), ctx.has_input(1) ? &ctx.input(1) : nullptr, ctx.has_input(1), sizes);
  if (sizes.empty()) sizes = equal_split(extent, n, ctx.opset(), ctx.node());
  check_split(sizes, extent, n, ctx.node());
  const int64_t outer = product(in.dims(), 0, axis), inner = product(in.dims(), axis + 1);
  int64_t start = 0;
  for (int i = 0; i < n; ++i) {
    std::vector<int64_t> d = in.dims();
    d[axis] = sizes[i];
    if (!ctx.has_output(i)) { start += sizes[i]; continue; }
    Tensor& out = ctx.make_output(i, in.dtype(), d);
    copy_strided(in, out, {outer, sizes[i] * inner}, {extent * inner, 1}, start * inner);
    start += sizes[i];
  }
}

// ---------------------------------------------------------------- Slice

void infer_slice(InferContext& ctx) {
  const ir::TensorType& in = ctx.input(0);
  if (!in.rank_known) {
    ctx.set_output(0, ir::TensorType::unranked(in.dtype));
    return;
  }
  SliceArgs a;
  if (!slice_args(ctx.node(), ctx.opset(), [&](int i) { return ctx.value(i); }, a)) {
    std::vector<ir::Dim> out = in.dims;
    const Tensor* ax = ctx.node().has_input(3) ? ctx.value(3) : nullptr;
    if (ax) {
      for (int64_t x : normalize_axes(ax->to_int64_vector(), in.rank(), ctx.node())) out[x] = ctx.fresh_dim();
    } else {
      out = fresh_dims(ctx, in.rank());
    }
    ctx.set_output(0, in.dtype, out);
    return;
  }
  std::vector<int64_t> axes = slice_axes(a, in.rank(), ctx.node());
  std::vector<ir::Dim> out = in.dims;
  for (size_t i = 0; i < axes.size(); ++i) {
    const ir::Dim& d = in.dims[axes[i]];
    if (d.is_static()) {
      int64_t s = a.starts[i];
      out[axes[i]] = ir::Dim(clamp_slice(s, a.ends[i], a.steps[i], d.value, ctx.node()));
    } else if (a.steps[i] == 1 && a.starts[i] == 0 && a.ends[i] >= std::numeric_limits<int32_t>::max()) {
      out[axes[i]] = d;  // the whole axis
    } else {
      if (a.steps[i] == 0) ctx.fail("slice step cannot be 0");
      out[axes[i]] = ctx.fresh_dim();
    }
  }
  ctx.set_output(0, in.dtype, out);
}

void kernel_slice(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  SliceArgs a;
  slice_args(ctx.node(), ctx.opset(), [&](int i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; }, a);
  std::vector<int64_t> axes = slice_axes(a, in.rank(), ctx.node());
  std::vector<int64_t> out_dims = in.dims(), strides = strides_of(in.dims());
  int64_t base = 0;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t x = axes[i];
    int64_t s = a.starts[i];
    out_dims[x] = clamp_slice(s, a.ends[i], a.steps[i], in.dim(static_cast<int>(x)), ctx.node());
    if (out_dims[x] > 0) base += s * strides[x];
    // With one element taken the stride is never used, and a huge step would overflow it.
    if (out_dims[x] > 1) strides[x] *= a.steps[i];
  }
  Tensor& out = ctx.make_output(0, in.dtype(), out_dims);
  copy_strided(in, out, out_dims, strides, base);
}

// ---------------------------------------------------------------- Tile

void infer_tile(InferContext& ctx) {
  const ir::TensorType& in = ctx.input(0);
  const Tensor* rep = ctx.value(1);
  if (!in.rank_known) {
    ctx.set_output(0, ir::TensorType::unranked(in.dtype));
    return;
  }
  if (!rep) {
    ctx.set_output(0, in.dtype, fresh_dims(ctx, in.rank()));
    return;
  }
  std::vector<int64_t> r = rep->to_int64_vector();
  if (static_cast<int>(r.size()) != in.rank()) ctx.fail("repeats must have one entry per input dim");
  std::vector<ir::Dim> out = in.dims;
  for (int i = 0; i < in.rank(); ++i) {
    if (r[i] < 0) ctx.fail("negative repeat");
    if (out[i].is_static()) out[i] = ir::Dim(out[i].value * r[i]);
    else if (r[i] == 0) out[i] = ir::Dim(0);
    else if (r[i] != 1) out[i] = ctx.fresh_dim();
  }
  ctx.set_output(0, in.dtype, out);
}

void kernel_tile(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  std::vector<int64_t> r = ctx.input(1).to_int64_vector();
  if (static_cast<int>(r.size()) != in.rank()) ctx.fail("repeats must have one entry per input dim");
  std::vector<int64_t> out_dims = in.dims();
  for (int i = 0; i < in.rank(); ++i) {
    if (r[i] < 0) ctx.fail("negative repeat");
    out_dims[i] *= r[i];
  }
  Tensor& out = ctx.make_output(0, in.dtype(), out_dims);
  if (out.numel() == 0) return;
  if (in.rank() == 0) { copy_strided(in, out, {}, {}); return; }
  // Viewing the output as [r0, d0, r1, d1, ...] makes tiling a strided copy with 0 strides.
  std::vector<int64_t> view, strides, own = strides_of(in.dims());
  for (int i = 0; i < in.rank(); ++i) {
    view.push_back(r[i]);
    strides.push_back(0);
    view.push_back(in.dim(i));
    strides.push_back(own[i]);
  }
  copy_strided(in, out, view, strides);
}

// ---------------------------------------------------------------- Pad

void infer_pad(InferContext& ctx) {
  const ir::TensorType& in = ctx.input(0);
  if (!in.rank_known) {
    ctx.set_output(0, ir::TensorType::unranked(in.dtype));
    return;
  }
  const int64_t r = in.rank();
  PadArgs p;
  if (!pad_args(ctx.node(), ctx.opset(), r, [&](int i) { return ctx.value(i); }, p)) {
    ctx.set_output(0, in.dtype, fresh_dims(ctx, r));
    return;
  }
  std::vector<ir::Dim> out = in.dims;
  for (int64_t i = 0; i < r; ++i) {
    const int64_t add = p.pads[i] + p.pads[i + r];
    if (out[i].is_static()) {
      if (out[i].value + add < 0) ctx.fail("pads crop more than axis " + std::to_string(i) + " holds");
      out[i] = ir::Dim(out[i].value + add);
    } else if (add != 0) {
      out[i] = ctx.fresh_dim();
    }
  }
  ctx.set_output(0, in.dtype, out);
}

// Output 0 of shape out_dims: `in` shifted by `begin` per axis (negative: cropped), the cells
// outside it by `mode` (Pad's modes) or, for "constant", the fill value (Pad's own when
// `pad_fill`, else zero).
void pad_copy(KernelContext& ctx, const Tensor& in, const std::vector<int64_t>& begin,
              const std::vector<int64_t>& out_dims, const std::string& mode, bool pad_fill) {
  const int64_t r = in.rank();
  Tensor& out = ctx.make_output(0, in.dtype(), out_dims);
  if (out.numel() == 0) return;
  // Per axis, the source coordinate of every output coordinate.
  std::vector<std::vector<int64_t>> src(r);
  for (int64_t i = 0; i < r; ++i)
    for (int64_t o = 0; o < out_dims[i]; ++o) src[i].push_back(pad_source(o, begin[i], in.dim(static_cast<int>(i)), mode));
  std::vector<int64_t> strides = strides_of(in.dims());
  dispatch_all(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T fill{};
    if constexpr (!std::is_same_v<T, std::string>) {
      double v = 0;
      if (pad_fill && ctx.opset() < 11) v = ctx.node().attr_float("value", 0.f);
      else if (pad_fill && ctx.has_input(2) && ctx.input(2).numel() > 0) v = ctx.input(2).as_double(0);
      fill = static_cast<T>(static_cast<compute_t<T>>(v));
    } else if (pad_fill && ctx.opset() >= 11 && ctx.has_input(2) && ctx.input(2).numel() > 0) {
      fill = ctx.input(2).data<std::string>()[0];
    }
    const T* s = in.data<T>();
    T* d = out.data<T>();
    if (r == 0) { d[0] = s[0]; return; }
    const int64_t inner = out_dims[r - 1];
    const std::vector<int64_t>& last = src[r - 1];
    std::vector<int64_t> row(r - 1, 0), row_dims(out_dims.begin(), out_dims.end() - 1);
    int64_t o = 0;
    do {
      int64_t off = 0;
      bool outside = false;
      for (int64_t i = 0; i + 1 < r; ++i) {
        const int64_t c = src[i][row[i]];
        if (c < 0) { outside = true; break; }
        off += c * strides[i];
      }
      for (int64_t j = 0; j < inner; ++j) d[o + j] = outside || last[j] < 0 ? fill : s[off + last[j]];
      o += inner;
    } while (next_index(row, row_dims));
  });
}

void kernel_pad(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const int64_t r = in.rank();
  PadArgs p;
  pad_args(ctx.node(), ctx.opset(), r, [&](int i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; }, p);
  std::vector<int64_t> out_dims(r);
  for (int64_t i = 0; i < r; ++i) {
    out_dims[i] = in.dim(static_cast<int>(i)) + p.pads[i] + p.pads[i + r];
    if (out_dims[i] < 0) ctx.fail("pads crop more than axis " + std::to_string(i) + " holds");
    if (in.dim(static_cast<int>(i)) == 0 && out_dims[i] > 0 && p.mode != "constant")
      ctx.fail("cannot " + p.mode + "-pad an empty axis");
  }
  pad_copy(ctx, in, std::vector<int64_t>(p.pads.begin(), p.pads.begin() + r), out_dims, p.mode, true);
}

// ---------------------------------------------------------------- CenterCropPad (opset 18)

// The axes and target extents: `shape` (1-D int64) gives one extent per axis of the `axes`
// attribute (default: every axis).
template <typename Ctx>
std::vector<int64_t> center_crop_axes(const Ctx& ctx, int64_t rank, const Tensor& shape) {
  if (shape.rank() != 1 || (shape.dtype() != DType::Int64 && shape.dtype() != DType::Int32))
    ctx.fail("shape must be a 1-D integer tensor, got " + shape.describe());
  std::vector<int64_t> axes;
  if (ctx.node().attrs.count("axes")) {
    for (int64_t a : ctx.node().attr_ints("axes")) axes.push_back(normalize_axis(a, rank, ctx.node()));
  } else {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  if (static_cast<int64_t>(axes.size()) != shape.numel())
    ctx.fail("shape has " + std::to_string(shape.numel()) + " extents for " + std::to_string(axes.size()) + " axes");
  for (int64_t i = 0; i < shape.numel(); ++i)
    if (shape.as_int64(i) < 0) ctx.fail("shape extents must be non-negative, got " + std::to_string(shape.as_int64(i)));
  return axes;
}

void infer_center_crop_pad(InferContext& ctx) {
  const ir::TensorType& in = ctx.input(0);
  if (!in.rank_known) return ctx.set_output(0, ir::TensorType::unranked(in.dtype));
  std::vector<ir::Dim> out = in.dims;
  const Tensor* shape = ctx.value(1);
  if (!shape) {
    const std::vector<int64_t> all = ctx.node().attrs.count("axes") ? ctx.node().attr_ints("axes") : std::vector<int64_t>{};
    if (all.empty()) out = fresh_dims(ctx, in.rank());
    for (int64_t a : all) out[normalize_axis(a, in.rank(), ctx.node())] = ctx.fresh_dim();
    return ctx.set_output(0, in.dtype, out);
  }
  const std::vector<int64_t> axes = center_crop_axes(ctx, in.rank(), *shape);
  for (size_t i = 0; i < axes.size(); ++i) out[axes[i]] = ir::Dim(shape->as_int64(static_cast<int64_t>(i)));
  ctx.set_output(0, in.dtype, out);
}

// Each listed axis cropped or zero-padded to its extent around the centre; an odd difference
// leaves the extra element at the end.
void kernel_center_crop_pad(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const std::vector<int64_t> axes = center_crop_axes(ctx, in.rank(), ctx.input(1));
  std::vector<int64_t> out_dims = in.dims(), begin(in.rank(), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t want = ctx.input(1).as_int64(static_cast<int64_t>(i)), delta = want - in.dim(static_cast<int>(axes[i]));
    begin[axes[i]] = delta >= 0 ? delta / 2 : -((-delta) / 2);
    out_dims[axes[i]] = want;
  }
  pad_copy(ctx, in, begin, out_dims, "constant", false);
}

// ---------------------------------------------------------------- DepthToSpace / SpaceToDepth

int64_t block_size(const ir::Node& node) {
  const int64_t b = node.attr_int_required("blocksize");
  if (b < 1) throw Error(node.describe() + ": blocksize must be positive");
  return b;
}

void infer_depth_to_space(InferContext& ctx, bool to_space) {
  const ir::TensorType& in = ctx.input(0);
  const int64_t b = block_size(ctx.node());
  if (!in.rank_known) {
    ctx.set_output(0, in.dtype, fresh_dims(ctx, 4));
    return;
  }
  if (in.rank() != 4) ctx.fail("input must be 4-D");
  auto scale = [&](const ir::Dim& d, bool mul, int64_t f) -> ir::Dim {
    if (!d.is_static()) return f == 1 ? d : ctx.fresh_dim();
    if (!mul && d.value % f != 0) ctx.fail("dim " + d.str() + " is not divisible by " + std::to_string(f));
    return ir::Dim(mul ? d.value * f : d.value / f);
  };
  std::vector<ir::Dim> out = {in.dims[0], scale(in.dims[1], !to_space, b * b), scale(in.dims[2], to_space, b),
                              scale(in.dims[3], to_space, b)};
  ctx.set_output(0, in.dtype, out);
}

void kernel_depth_to_space(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const int64_t b = block_size(ctx.node());
  if (in.rank() != 4) ctx.fail("input must be 4-D");
  const int64_t N = in.dim(0), C = in.dim(1), H = in.dim(2), W = in.dim(3);
  if (C % (b * b) != 0) ctx.fail("channels " + std::to_string(C) + " not divisible by blocksize^2");
  const int64_t c = C / (b * b);
  const bool crd = ctx.node().attr_string("mode", "DCR") == "CRD";
  if (!crd && ctx.node().attr_string("mode", "DCR") != "DCR") ctx.fail("mode must be DCR or CRD");
  // Output viewed as [N, c, H, b, W, b]; each axis' stride into the 6-D view of the input.
  std::vector<int64_t> view = {N, c, H, b, W, b}, st;
  if (crd) {
    std::vector<int64_t> s = strides_of({N, c, b, b, H, W});
    st = {s[0], s[1], s[4], s[2], s[5], s[3]};
  } else {
    std::vector<int64_t> s = strides_of({N, b, b, c, H, W});
    st = {s[0], s[3], s[4], s[1], s[5], s[2]};
  }
  Tensor& out = ctx.make_output(0, in.dtype(), {N, c, H * b, W * b});
  copy_strided(in, out, view, st);
}

void kernel_space_to_depth(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const int64_t b = block_size(ctx.node());
  if (in.rank() != 4) ctx.fail("input must be 4-D");
  const int64_t N = in.dim(0), C = in.dim(1), H = in.dim(2), W = in.dim(3);
  if (H % b != 0 || W % b != 0) ctx.fail("spatial dims not divisible by blocksize");
  // Input as [N, C, H/b, b, W/b, b] read in the order (0, 3, 5, 1, 2, 4).
  std::vector<int64_t> s = strides_of({N, C, H / b, b, W / b, b});
  std::vector<int64_t> view = {N, b, b, C, H / b, W / b}, st = {s[0], s[3], s[5], s[1], s[2], s[4]};
  Tensor& out = ctx.make_output(0, in.dtype(), {N, C * b * b, H / b, W / b});
  copy_strided(in, out, view, st);
}

// ---------------------------------------------------------------- Trilu

void kernel_trilu(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  if (in.rank() < 2) ctx.fail("input must have rank >= 2");
  const int64_t k = ctx.has_input(1) ? ctx.input(1).as_int64(0) : 0;
  const bool upper = ctx.node().attr_int("upper", 1) != 0;
  Tensor out = in.clone();
  const int64_t N = in.dim(in.rank() - 2), M = in.dim(in.rank() - 1), mats = product(in.dims(), 0, in.rank() - 2);
  dispatch_all(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* d = out.data<T>();
    for (int64_t m = 0; m < mats; ++m)
      for (int64_t i = 0; i < N; ++i)
        for (int64_t j = 0; j < M; ++j) {
          const bool keep = upper ? j - i >= k : j - i <= k;
          if (!keep) d[(m * N + i) * M + j] = T{};
        }
  });
  ctx.set_output(0, out);
}

// ---------------------------------------------------------------- ReverseSequence

void kernel_reverse_sequence(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  if (in.rank() < 2) ctx.fail("input must have rank >= 2");
  const int64_t ba = normalize_axis(ctx.node().attr_int("batch_axis", 1), in.rank(), ctx.node());
  const int64_t ta = normalize_axis(ctx.node().attr_int("time_axis", 0), in.rank(), ctx.node());
  if (ba == ta) ctx.fail("batch_axis and time_axis must differ");
  std::vector<int64_t> lens = ctx.input(1).to_int64_vector();
  const int64_t B = in.dim(static_cast<int>(ba)), Tm = in.dim(static_cast<int>(ta));
  if (static_cast<int64_t>(lens.size()) != B) ctx.fail("sequence_lens must have one entry per batch");
  for (int64_t l : lens)
    if (l < 0 || l > Tm) ctx.fail("sequence length " + std::to_string(l) + " out of range [0, " + std::to_string(Tm) + "]");
  Tensor out = in.clone();
  if (in.numel() > 0) {
    std::vector<int64_t> strides = strides_of(in.dims()), idx(in.rank(), 0);
    dispatch_all(in.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* s = in.data<T>();
      T* d = out.data<T>();
      int64_t e = 0;
      do {
        const int64_t t = idx[ta], l = lens[idx[ba]];
        if (t < l) d[e] = s[e + (l - 1 - 2 * t) * strides[ta]];
        ++e;
      } while (next_index(idx, in.dims()));
    });
  }
  ctx.set_output(0, out);
}

// ---------------------------------------------------------------- EyeLike

DType eyelike_dtype(const ir::Node& node, DType in) {
  return node.has_attr("dtype") ? dtype_from_onnx(static_cast<int32_t>(node.attr_int("dtype", 1))) : in;
}

void kernel_eyelike(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  if (in.rank() != 2) ctx.fail("input must be 2-D");
  const DType dt = eyelike_dtype(ctx.node(), in.dtype());
  const int64_t k = ctx.node().attr_int("k", 0);
  Tensor& out = ctx.make_output(0, dt, in.dims());
  const int64_t R = in.dim(0), C = in.dim(1);
  dispatch_numeric_bool(dt, [&](auto tag) {
    using T = decltype(tag);
    T* d = out.data<T>();
    for (int64_t i = 0; i < R; ++i) {
      const int64_t j = i + k;
      if (j >= 0 && j < C) d[i * C + j] = static_cast<T>(1);
    }
  });
}

}  // namespace

KILN_REGISTER_OPS(data_movement) {
  reg.add({.name = "Concat", .min_inputs = 1, .max_inputs = -1, .pattern = PatternKind::Tuple,
           .infer = infer_concat, .kernel = kernel_concat});
  reg.add({.name = "Split", .max_version = 18, .min_inputs = 1, .max_inputs = 2, .min_outputs = 1, .max_outputs = -1,
           .pattern = PatternKind::Injective, .infer = infer_split, .kernel = kernel_split});
  reg.add({.name = "Slice", .min_inputs = 1, .max_inputs = 5, .pattern = PatternKind::Injective,
           .infer = infer_slice, .kernel = kernel_slice});
  reg.add({.name = "Tile", .min_inputs = 2, .max_inputs = 2, .pattern = PatternKind::Injective,
           .infer = infer_tile, .kernel = kernel_tile});
  reg.add({.name = "CenterCropPad", .since_version = 18, .min_inputs = 2, .max_inputs = 2,
           .pattern = PatternKind::Injective, .infer = infer_center_crop_pad, .kernel = kernel_center_crop_pad});
  reg.add({.name = "Pad", .max_version = 19, .min_inputs = 1, .max_inputs = 4, .pattern = PatternKind::Injective,
           .infer = infer_pad, .kernel = kernel_pad});
  reg.add({.name = "DepthToSpace", .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::Injective,
           .infer = [](InferContext& ctx) { infer_depth_to_space(ctx, true); }, .kernel = kernel_depth_to_space});
  reg.add({.name = "SpaceToDepth", .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::Injective,
           .infer = [](InferContext& ctx) { infer_depth_to_space(ctx, false); }, .kernel = kernel_space_to_depth});
  reg.add({.name = "Trilu", .since_version = 14, .min_inputs = 1, .max_inputs = 2, .pattern = PatternKind::Injective,
           .infer = infer_same_as_input, .kernel = kernel_trilu});
  reg.add({.name = "ReverseSequence", .since_version = 10, .min_inputs = 2, .max_inputs = 2,
           .pattern = PatternKind::Injective, .infer = infer_same_as_input, .kernel = kernel_reverse_sequence});
  reg.add({.name = "EyeLike", .since_version = 9, .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::Opaque,
           .infer = [](InferContext& ctx) { infer_same_shape(ctx, eyelike_dtype(ctx.node(), ctx.input(0).dtype)); },
           .kernel = kernel_eyelike});
}

}  // namespace kiln::ops
