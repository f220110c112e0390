// Shapes, views, slicing, joining, gathering and scattering.
#include <kiln/error.h>

#include <limits>

#include "frontend/tf/converter.h"

namespace kiln::tf_fe {

namespace {

using A = ir::Attribute;
using Outs = std::vector<ir::Value*>;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

int64_t one_int(Converter& c, int input, const std::string& what) {
  const auto v = c.known_ints(input, what);
  if (v.size() != 1) c.fail(what + " must be one value");
  return v[0];
}

ir::Value* concat(Converter& c, Outs values, int64_t axis) {
  if (values.size() == 1) return values[0];
  return c.op("Concat", std::move(values), {{"axis", A::of_int(axis)}});
}

// The positive axis of `axis` in a rank-r tensor.
int64_t norm_axis(Converter& c, int64_t axis, int r) {
  if (axis < -r || axis >= r) c.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  return axis < 0 ? axis + r : axis;
}

// TensorFlow StridedSlice with all five masks, as Slice + Squeeze + Unsqueeze. begin, end and
// strides must be known at import; the input's rank is needed only with an ellipsis.
ir::Value* strided_slice(Converter& c) {
  c.expect_inputs(4);
  const auto begin = c.known_ints(1, "begin"), end = c.known_ints(2, "end"), strides = c.known_ints(3, "strides");
  const size_t n = begin.size();
  if (end.size() != n || strides.size() != n) c.fail("begin, end and strides differ in length");
  const int64_t bm = c.attr_int_or("begin_mask", 0), em = c.attr_int_or("end_mask", 0),
                elm = c.attr_int_or("ellipsis_mask", 0), nam = c.attr_int_or("new_axis_mask", 0),
                sam = c.attr_int_or("shrink_axis_mask", 0);
  auto bit = [](int64_t m, size_t i) { return ((m >> i) & 1) != 0; };
  if (elm & (elm - 1)) c.fail("more than one ellipsis in ellipsis_mask");
  int real = 0;  // spec entries that consume an input dim
  for (size_t i = 0; i < n; ++i)
    if (!bit(elm, i) && !bit(nam, i)) ++real;
  const int covered = elm ? c.rank(c.in(0)) - real : 0;
  if (covered < 0) c.fail("the slice has more dims than its input");
  std::vector<int64_t> starts, ends, steps, axes, squeeze_axes, new_axes;
  int64_t dim = 0, out = 0;
  for (size_t i = 0; i < n; ++i) {
    if (bit(elm, i)) {
      dim += covered;
      out += covered;
      continue;
    }
    if (bit(nam, i)) {
      new_axes.push_back(out++);
      continue;
    }
    const int64_t axis = dim++;
    int64_t b = begin[i], e = end[i], s = strides[i];
    if (s == 0) c.fail("stride " + std::to_string(i) + " is 0");
    if (bit(sam, i)) {
      e = b == -1 ? kMax : b + 1;
      s = 1;
      squeeze_axes.push_back(axis);
    } else {
      if (bit(bm, i)) b = s > 0 ? 0 : kMax;
      if (bit(em, i)) e = s > 0 ? kMax : kMin;
      ++out;
    }
    if (b == 0 && e == kMax && s == 1) continue;  // the whole dim
    starts.push_back(b);
    ends.push_back(e);
    steps.push_back(s);
    axes.push_back(axis);
  }
  ir::Value* y = c.in(0);
  if (!axes.empty()) y = c.op("Slice", {y, c.ints(starts), c.ints(ends), c.ints(axes), c.ints(steps)});
  y = c.squeeze(y, squeeze_axes);
  return c.unsqueeze(y, new_axes);
}

ir::Value* pads_of(Converter& c, ir::Value* paddings) {
  // [rank, 2] (before, after) -> ONNX's [all befores, all afters]
  return c.op("Reshape", {c.transpose(c.as_int64(paddings), {1, 0}), c.ints({-1})});
}

}  // namespace

void add_array_converters(ConverterTable& t) {
  t["Reshape"] = [](Converter& c) -> Outs {
    c.expect_inputs(2);
    return {c.op("Reshape", {c.in(0), c.as_int64(c.in(1))}, {{"allowzero", A::of_int(1)}})};
  };
  t["Shape"] = [](Converter& c) -> Outs {
    c.expect_inputs(1);
    return {c.cast(c.op("Shape", {c.in(0)}), c.attr_type_or("out_type", DType::Int32))};
  };
  t["Size"] = [](Converter& c) -> Outs {
    c.expect_inputs(1);
    return {c.cast(c.op("Size", {c.in(0)}), c.attr_type_or("out_type", DType::Int32))};
  };
  t["Rank"] = [](Converter& c) -> Outs {
    c.expect_inputs(1);
    return {c.cast(c.op("Size", {c.op("Shape", {c.in(0)})}), DType::Int32)};
  };
  t["ExpandDims"] = [](Converter& c) -> Outs {
    c.expect_inputs(2);
    return {c.op("Unsqueeze", {c.in(0), c.op("Reshape", {c.as_int64(c.in(1)), c.ints({-1})})})};
  };
  t["Squeeze"] = [](Converter& c) -> Outs {
    c.expect_inputs(1);
    std::vector<int64_t> axes = c.attr_ints_or("squeeze_dims", c.attr_ints_or("axis", {}));
    if (axes.empty()) return {c.op("Squeeze", {c.in(0)})};
    return {c.squeeze(c.in(0), axes)};
  };
  t["Transpose"] = [](Converter& c) -> Outs {
    c.expect_inputs(2);
    return {c.transpose(c.in(0), c.known_ints(1, "perm"))};
  };
  t["ConcatV2"] = [](Converter& c) -> Outs {
    if (c.num_inputs() < 2) c.fail("needs values and an axis");
    Outs vals;
    for (int i = 0; i + 1 < c.num_inputs(); ++i) vals.push_back(c.in(i));
    return {concat(c, vals, one_int(c, c.num_inputs() - 1, "axis"))};
  };
  t["Concat"] = [](Converter& c) -> Outs {
    if (c.num_inputs() < 2) c.fail("needs an axis and values");
    Outs vals;
    for (int i = 1; i < c.num_inputs(); ++i) vals.push_back(c.in(i));
    return {concat(c, vals, one_int(c, 0, "axis"))};
  };
  t["Pack"] = [](Converter& c) -> Outs {
    if (c.num_inputs() < 1) c.fail("has no values");
    int64_t axis = c.attr_int_or("axis", 0);
    if (axis < 0) axis += c.rank(c.in(0)) + 1;
    Outs vals;
    for (int i = 0; i < c.num_inputs(); ++i) vals.push_back(c.unsqueeze(c.in(i), {axis}));
    return {concat(c, vals, axis)};
  };
  t["Unpack"] = [](Converter& c) -> Outs {
    c.expect_inputs(1);
    const int64_t num = c.attr_int("num");
    const int64_t axis = norm_axis(c, c.attr_int_or("axis", 0), c.rank(c.in(0)));
    Outs parts = num == 1 ? Outs{c.in(0)}
                          : c.op_n("Split", {c.in(0)}, static_cast<int>(num),
                                   {{"axis", A::of_int(axis)}, {"num_outputs", A::of_int(num)}});
    for (auto& p : parts) p = c.squeeze(p, {axis});
    return parts;
  };
  t["Split"] = [](Converter& c) -> Outs {
    c.expect_inputs(2);
    const int64_t num = c.attr_int("num_split");
    const int64_t axis = one_int(c, 0, "axis");
    if (num == 1) return {c.in(1)};
    return c.op_n("Split", {c.in(1)}, static_cast<int>(num), {{"axis", A::of_int(axis)}, {"num_outputs", A::of_int(num)}});
  };
  t["SplitV"] = [](Converter& c) -> Outs {
    c.expect_inputs(3);
    std::vector<int64_t> sizes = c.known_ints(1, "size_splits");
    const int64_t axis = norm_axis(c, one_int(c, 2, "axis"), c.rank(c.in(0)));
    int unknown = -1;
    int64_t sum = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] == -1) {
        if (unknown >= 0) c.fail("more than one size_splits entry is -1");
        unknown = static_cast<int>(i);
      } else {
        sum += sizes[i];
      }
    }
    if (unknown >= 0) {
      const ir::Dim& d = c.in(0)->type.dims[axis];
      if (!d.is_static()) c.unsupported("size_splits has -1 on a dim not known at import");
      sizes[unknown] = d.value - sum;
    }
    if (sizes.size() == 1) return {c.in(0)};
    return c.op_n("Split", {c.in(0), c.ints(sizes)}, static_cast<int>(sizes.size()), {{"axis", A::of_int(axis)}});
  };
  t["Slice"] = [](Converter& c) -> Outs {
    c.expect_inputs(3);
    // size -1: to the end of the dim (kMax, written as an int64: a double cannot hold it).
    const auto b = c.maybe_ints(c.in(1)), k = c.maybe_ints(c.in(2));
    if (b && k && b->size() == k->size()) {
      std::vector<int64_t> ends;
      for (size_t i = 0; i < k->size(); ++i) ends.push_back((*k)[i] == -1 ? kMax : (*b)[i] + (*k)[i]);
      return {c.op("Slice", {c.in(0), c.ints(*b), c.ints(ends)})};
    }
    ir::Value* begin = c.as_int64(c.in(1));
    ir::Value* size = c.as_int64(c.in(2));
    ir::Value* to_end = c.op("Equal", {size, c.scalar(-1, DType::Int64)});
    ir::Value* end = c.op("Where", {to_end, c.constant(kiln::Tensor::scalar<int64_t>(kMax)), c.op("Add", {begin, size})});
    return {c.op("Slice", {c.in(0), begin, end})};
  };
  t["StridedSlice"] = [](Converter& c) -> Outs { return {strided_slice(c)}; };
  t["ReverseV2"] = [](Converter& c) -> Outs {
    c.expect_inputs(2);
    const auto axes = c.known_ints(1, "axis");
    if (axes.empty()) return {c.in(0)};
    return {c.op("Slice", {c.in(0), c.ints(std::vector<int64_t>(axes.size(), -1)),
                           c.ints(std::vector<int64_t>(axes.size(), kMin)), c.ints(axes),
                           c.ints(std::vector<int64_t>(axes.size(), -1))})};
  };
  t["Fill"] = [](Converter& c) -> Outs {
    c.expect_inputs(2);
    return {c.op("Expand", {c.in(1), c.as_int64(c.in(0))})};
  };
  t["BroadcastTo"] = [](Converter& c) -> Outs {
    c.expect_inputs(2);
    return {c.op("Expand", {c.in(0), c.as_int64(c.in(1))})};
  };
  for (auto [op, v] : {std::pair{"ZerosLike", 0.0}, std::pair{"OnesLike", 1.0}}) {
    const double fill = v;
    t[op] = [fill](Converter& c) -> Outs {
      c.expect_inputs(1);
      return {c.op("Expand", {c.scalar(fill, c.in(0)->type.dtype), c.op("Shape", {c.in(0)})})};
    };
  }
  t["Tile"] = [](Converter& c) -> Outs {
    c.expect_inputs(2);
    return {c.op("Tile", {c.in(0), c.as_int64(c.in(1))})};
  };
  t["Pad"] = [](Converter& c) -> Outs {
    c.expect_inputs(2);
    return {c.op("Pad", {c.in(0), pads_of(c, c.in(1))}, {{"mode", A::of_string("constant")}})};
  };
  t["PadV2"] = [](Converter& c) -> Outs {
    c.expect_inputs(3);
    return {c.op("Pad", {c.in(0), pads_of(c, c.in(1)), c.in(2)}, {{"mode", A::of_string("constant")}})};
  };
  t["MirrorPad"] = [](Converter& c) -> Outs {
    c.expect_inputs(2);
    const std::string mode = c.attr_string_or("mode", "REFLECT");
    if (mode != "REFLECT") c.unsupported("MirrorPad mode '" + mode + "' is not supported (REFLECT is)");
    return {c.op("Pad", {c.in(0), pads_of(c, c.in(1))}, {{"mode", A::of_string("reflect")}})};
  };
  t["GatherV2"] = [](Converter& c) -> Outs {
    c.expect_inputs(3);
    if (c.attr_int_or("batch_dims", 0) != 0) c.unsupported("batch_dims other than 0 is not supported");
    return {c.op("Gather", {c.in(0), c.in(1)}, {{"axis", A::of_int(one_int(c, 2, "axis"))}})};
  };
  t["Gather"] = [](Converter& c) -> Outs {
    c.expect_inputs(2);
    return {c.op("Gather", {c.in(0), c.in(1)}, {{"axis", A::of_int(0)}})};
  };
  t["GatherNd"] = [](Converter& c) -> Outs {
    c.expect_inputs(2);
    return {c.op("GatherND", {c.in(0), c.as_int64(c.in(1))})};
  };
  t["ScatterNd"] = [](Converter& c) -> Outs {
    c.expect_inputs(3);
    ir::Value* zeros = c.op("Expand", {c.scalar(0, c.in(1)->type.dtype), c.as_int64(c.in(2))});
    // Duplicate indices add up in TensorFlow.
    return {c.op("ScatterND", {zeros, c.as_int64(c.in(0)), c.in(1)}, {{"reduction", A::of_string("add")}})};
  };
  t["SparseToDense"] = [](Converter& c) -> Outs {
    c.expect_inputs(4);
    ir::Value* idx = c.as_int64(c.in(0));
    const int r = c.rank(idx);
    if (r == 0) idx = c.reshape(idx, {1, 1});
    else if (r == 1) idx = c.unsqueeze(idx, {1});
    ir::Value* base = c.op("Expand", {c.in(3), c.as_int64(c.in(1))});
    ir::Value* rows = c.op("Slice", {c.op("Shape", {idx}), c.ints({0}), c.ints({1})});
    ir::Value* vals = c.op("Expand", {c.in(2), rows});
    return {c.op("ScatterND", {base, idx, vals})};
  };
  t["OneHot"] = [](Converter& c) -> Outs {
    c.expect_inputs(4);
    ir::Value* values = c.op("Concat", {c.reshape(c.in(3), {1}), c.reshape(c.in(2), {1})}, {{"axis", A::of_int(0)}});
    return {c.op("OneHot", {c.in(0), c.in(1), values}, {{"axis", A::of_int(c.attr_int_or("axis", -1))}})};
  };
  t["Where"] = [](Converter& c) -> Outs {
    c.expect_inputs(1);
    return {c.transpose(c.op("NonZero", {c.in(0)}), {1, 0})};
  };
  t["TopKV2"] = [](Converter& c) -> Outs {
    c.expect_inputs(2);
    ir::Value* k = c.reshape(c.as_int64(c.in(1)), {1});
    Outs o = c.op_n("TopK", {c.in(0), k}, 2,
                    {{"axis", A::of_int(-1)}, {"largest", A::of_int(1)}, {"sorted", A::of_int(1)}});
    return {o[0], c.cast(o[1], c.attr_type_or("index_type", DType::Int32))};
  };
}

}  // namespace kiln::tf_fe
