// TensorList (TF2) and TensorArray (TF1) ops as ONNX sequences.
//
// Both are lists of tensors a loop fills item by item and then stacks. TensorFlow threads them
// through the graph as values: a TensorList's variant handle, a TensorArray's float "flow"
// (its resource handle only names it). Here that value is an ONNX sequence, so a loop carries
// it like any other variable: SetItem is SequenceErase + SequenceInsert at the index, Stack is
// ConcatFromSequence with a new axis. A list reserved with n items (TensorListReserve,
// TensorArrayV3) starts as n placeholder items: zeros of the element shape, with 0 for each
// dim not known, so that they carry the element rank.
#include <kiln/error.h>

#include <limits>
#include <optional>

#include "frontend/tf/control_flow.h"

namespace kiln::tf_fe {

namespace {

using A = ir::Attribute;
using Outs = std::vector<ir::Value*>;

// The dims of placeholder items: element_shape's, each unknown dim 0; nullopt when not even
// the rank is known (scalar placeholders then).
std::optional<std::vector<int64_t>> placeholder_dims(const std::optional<std::vector<int64_t>>& shape, bool unknown_rank) {
  if (!shape || unknown_rank) return std::nullopt;
  std::vector<int64_t> d = *shape;
  for (int64_t& x : d)
    if (x < 0) x = 0;
  return d;
}

// A sequence of n placeholder items of dtype dt.
ir::Value* reserved(Converter& c, ir::Value* n, DType dt, const std::optional<std::vector<int64_t>>& dims) {
  ir::Value* shape = c.reshape(c.as_int64(n), {1});
  if (dims && !dims->empty()) shape = c.op("Concat", {shape, c.ints(*dims)}, {{"axis", A::of_int(0)}});
  ir::Value* zeros = c.op("Expand", {c.scalar(0, dt), shape});
  return c.op("SplitToSequence", {zeros}, {{"axis", A::of_int(0)}, {"keepdims", A::of_int(0)}});
}

// element_shape given as an int tensor input: -1 (a scalar) for an unknown rank.
std::optional<std::vector<int64_t>> shape_input(Converter& c, int i) {
  auto v = c.maybe_ints(c.in(i));
  if (!v) return std::nullopt;
  if (c.in(i)->type.rank_known && c.in(i)->type.rank() == 0) return std::nullopt;  // -1: unknown rank
  return v;
}

ir::Value* set_item(Converter& c, ir::Value* list, ir::Value* index, ir::Value* item) {
  ir::Value* i = c.as_int64(index);
  return c.op("SequenceInsert", {c.op("SequenceErase", {list, i}), item, i});
}

ir::Value* stack(Converter& c, ir::Value* list) {
  return c.op("ConcatFromSequence", {list}, {{"axis", A::of_int(0)}, {"new_axis", A::of_int(1)}});
}

ir::Value* length(Converter& c, ir::Value* list) { return c.cast(c.op("SequenceLength", {list}), DType::Int32); }

// A TensorArray's handle is a constant standing for the array: 1 when its size is dynamic, so
// that a write, which gets the handle (through Enters when in a loop), knows it may append.
bool dynamic_array(Converter& c, ir::Value* handle) {
  const kiln::Tensor* h = c.known(handle);
  return h && h->numel() == 1 && h->as_double(0) != 0;
}

// A write to a TensorArray of dynamic size: at an index below the length, a replacement; at the
// length, an append (an If on index < length).
ir::Value* write_growing(Converter& c, ir::Value* list, ir::Value* index, ir::Value* item) {
  ImportContext& ctx = c.context();
  ir::Value* i = c.as_int64(index);
  ir::Value* inside = c.op("Less", {i, c.op("SequenceLength", {list})});
  const std::string base = c.prefix() + c.name();
  auto branch = [&](bool replace) {
    auto g = std::make_shared<ir::Graph>();
    g->name = base + (replace ? "/replace" : "/append");
    g->parent = &c.graph();
    ir::Value* out = replace ? add_op(ctx, *g, "SequenceInsert", {add_op(ctx, *g, "SequenceErase", {list, i}, g->name + "/erase"), item, i},
                                      g->name + ":0")
                             : add_op(ctx, *g, "SequenceInsert", {list, item}, g->name + ":0");
    g->add_output(out);
    return g;
  };
  return c.op("If", {inside}, {{"then_branch", A::of_graph(branch(true))}, {"else_branch", A::of_graph(branch(false))}});
}

}  // namespace

void add_tensor_list_converters(ConverterTable& t) {
  // ---------------------------------------------------------------- TensorList
  t["TensorListReserve"] = [](Converter& c) -> Outs {
    c.expect_inputs(2);
    const DType dt = c.attr_type("element_dtype");
    return {reserved(c, c.in(1), dt, placeholder_dims(shape_input(c, 0), false))};
  };
  t["EmptyTensorList"] = [](Converter& c) -> Outs {
    c.expect_inputs(2);
    const DType dt = c.attr_type("element_dtype");
    return {c.op("SequenceEmpty", {}, {{"dtype", A::of_int(static_cast<int64_t>(dt))}})};
  };
  t["TensorListFromTensor"] = [](Converter& c) -> Outs {
    c.expect_inputs(2);
    return {c.op("SplitToSequence", {c.in(0)}, {{"axis", A::of_int(0)}, {"keepdims", A::of_int(0)}})};
  };
  t["TensorListSetItem"] = [](Converter& c) -> Outs {
    c.expect_inputs(3);
    if (c.attr_bool_or("resize_if_index_out_of_bounds", false))
      c.unsupported("resize_if_index_out_of_bounds is not supported");
    return {set_item(c, c.in(0), c.in(1), c.in(2))};
  };
  t["TensorListGetItem"] = [](Converter& c) -> Outs {
    c.expect_inputs(3);
    return {c.op("SequenceAt", {c.in(0), c.as_int64(c.in(1))})};
  };
  t["TensorListPushBack"] = [](Converter& c) -> Outs {
    c.expect_inputs(2);
    return {c.op("SequenceInsert", {c.in(0), c.in(1)})};
  };
  t["TensorListPopBack"] = [](Converter& c) -> Outs {
    c.expect_inputs(2);
    ir::Value* last = c.scalar(-1, DType::Int64);
    return {c.op("SequenceErase", {c.in(0), last}), c.op("SequenceAt", {c.in(0), last})};
  };
  t["TensorListLength"] = [](Converter& c) -> Outs {
    c.expect_inputs(1);
    return {length(c, c.in(0))};
  };
  t["TensorListStack"] = [](Converter& c) -> Outs {
    c.expect_inputs(2);
    return {stack(c, c.in(0))};
  };
  t["TensorListGather"] = [](Converter& c) -> Outs {
    c.expect_inputs(3);
    return {c.op("Gather", {stack(c, c.in(0)), c.in(1)}, {{"axis", A::of_int(0)}})};
  };

  // ---------------------------------------------------------------- TensorArray
  // Every op that reads the array takes its flow; the handle (output 0) only says whether the
  // array may grow (dynamic_array).
  t["TensorArrayV3"] = [](Converter& c) -> Outs {
    c.expect_inputs(1);
    const bool dynamic = c.attr_bool_or("dynamic_size", false);
    const DType dt = c.attr_type("dtype");
    std::optional<std::vector<int64_t>> dims;
    bool unknown_rank = true;
    if (c.has_attr("element_shape")) {
      const tfpb::TensorShapeProto& s = c.attr("element_shape").shape();
      unknown_rank = s.unknown_rank();
      dims.emplace();
      for (const auto& d : s.dim()) dims->push_back(d.size());
    }
    return {c.scalar(dynamic ? 1 : 0, DType::Float), reserved(c, c.in(0), dt, placeholder_dims(dims, unknown_rank))};
  };
  t["TensorArrayWriteV3"] = [](Converter& c) -> Outs {
    c.expect_inputs(4);
    if (dynamic_array(c, c.in(0))) return {write_growing(c, c.in(3), c.in(1), c.in(2))};
    return {set_item(c, c.in(3), c.in(1), c.in(2))};
  };
  t["TensorArrayReadV3"] = [](Converter& c) -> Outs {
    c.expect_inputs(3);
    return {c.op("SequenceAt", {c.in(2), c.as_int64(c.in(1))})};
  };
  t["TensorArrayGatherV3"] = [](Converter& c) -> Outs {
    c.expect_inputs(3);
    return {c.op("Gather", {stack(c, c.in(2)), c.in(1)}, {{"axis", A::of_int(0)}})};
  };
  // Items written before a scatter are not kept: TensorFlow's pattern is unstacking a tensor
  // into a fresh array (TensorArray.unstack), and a TensorArray item is written once.
  t["TensorArrayScatterV3"] = [](Converter& c) -> Outs {
    c.expect_inputs(4);
    ir::Value* value = c.in(2);
    ir::Value* size = c.reshape(c.op("SequenceLength", {c.in(3)}), {1});
    ir::Value* elem = c.op("Slice", {c.op("Shape", {value}), c.ints({1}), c.ints({std::numeric_limits<int64_t>::max()})});
    ir::Value* zeros = c.op("Expand", {c.scalar(0, value->type.dtype),
                                       c.op("Concat", {size, elem}, {{"axis", A::of_int(0)}})});
    ir::Value* dense = c.op("ScatterND", {zeros, c.unsqueeze(c.as_int64(c.in(1)), {1}), value});
    return {c.op("SplitToSequence", {dense}, {{"axis", A::of_int(0)}, {"keepdims", A::of_int(0)}})};
  };
  t["TensorArraySizeV3"] = [](Converter& c) -> Outs {
    c.expect_inputs(2);
    return {length(c, c.in(1))};
  };
  t["TensorArrayCloseV3"] = [](Converter&) -> Outs { return {}; };
}

}  // namespace kiln::tf_fe
