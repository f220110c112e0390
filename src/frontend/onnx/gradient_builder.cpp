#include "frontend/onnx/gradient_builder.h"

#include <kiln/error.h>

#include <optional>

#include "ir/dispatch.h"

namespace kiln::onnx_fe {

namespace {

// Axes ReduceSum, Squeeze and Unsqueeze take as an input from this opset on.
constexpr int64_t kAxesInputOpset = 13;

ir::Attribute ints_attr(std::vector<int64_t> v) { return ir::Attribute::of_ints(std::move(v)); }

kiln::Tensor filled(DType dtype, const std::vector<int64_t>& dims, double v) {
  kiln::Tensor t(dtype, dims);
  ir::dispatch_float(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(static_cast<ir::compute_t<T>>(v));
  });
  return t;
}

// The axes of g (type gt) that broadcasting added to or stretched in a tensor of type tt, from
// the types alone; nullopt when a dim of tt might be 1 or not (an unknown or other symbol
// against a g dim other than 1).
std::optional<std::vector<int64_t>> broadcast_axes(const ir::TensorType& gt, const ir::TensorType& tt) {
  const int lead = gt.rank() - tt.rank();
  std::vector<int64_t> axes;
  for (int i = 0; i < gt.rank(); ++i) {
    if (i < lead) {
      axes.push_back(i);
      continue;
    }
    const ir::Dim& t = tt.dims[i - lead];
    const ir::Dim& d = gt.dims[i];
    const bool d_is_one = d.is_static() && d.value == 1;
    if (t.is_static()) {
      if (t.value == 1 && !d_is_one) axes.push_back(i);
    } else if (!t.same_as(d) && !d_is_one) {
      return std::nullopt;
    }
  }
  return axes;
}

}  // namespace

GradientBuilder::GradientBuilder(ir::Graph& g, std::string gradient) : g_(g), gradient_(std::move(gradient)) {}

std::string GradientBuilder::prefix() const {
  return "Gradient '" + gradient_ + "': " + (node_ ? node_->describe() + ": " : "");
}

void GradientBuilder::fail(const std::string& msg) const { throw Error(prefix() + msg); }
void GradientBuilder::unsupported(const std::string& msg) const { throw UnsupportedError(prefix() + msg); }

ir::Value* GradientBuilder::op(const std::string& type, std::vector<ir::Value*> inputs, ir::Attributes attrs) {
  const std::string name = g_.unique_name(gradient_ + "/" + type);
  ir::Value* out = g_.add_value(name);
  g_.add_node(type, std::move(inputs), {out}, std::move(attrs), name);
  return out;
}

ir::Value* GradientBuilder::scalar(double v, DType dtype) {
  return g_.add_constant(g_.unique_name(gradient_ + "/const"), filled(dtype, {}, v));
}

ir::Value* GradientBuilder::ints(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return g_.add_constant(g_.unique_name(gradient_ + "/ints"), kiln::Tensor::from_vector<int64_t>({n}, v));
}

ir::Value* GradientBuilder::filled_like(ir::Value* v, double fill) {
  const ir::TensorType& t = v->type;
  if (!dtype_is_float(t.dtype))
    fail("'" + v->name() + "' is " + t.str() + ", not a floating-point tensor");
  if (t.rank_known && t.is_static())
    return g_.add_constant(g_.unique_name(gradient_ + "/fill"), filled(t.dtype, t.static_dims(), fill));
  if (opset() < 9) unsupported("'" + v->name() + "' has no static shape (" + t.str() + "), which needs opset 9 or later");
  return op("ConstantOfShape", {op("Shape", {v})}, {{"value", ir::Attribute::of_tensor(filled(t.dtype, {1}, fill))}});
}

ir::Value* GradientBuilder::cast(ir::Value* v, DType to) {
  return op("Cast", {v}, {{"to", ir::Attribute::of_int(static_cast<int64_t>(to))}});
}

ir::Value* GradientBuilder::reduce_sum(ir::Value* v, std::vector<int64_t> axes, bool keepdims) {
  ir::Attributes attrs{{"keepdims", ir::Attribute::of_int(keepdims ? 1 : 0)}};
  if (opset() >= kAxesInputOpset) return op("ReduceSum", {v, ints(std::move(axes))}, std::move(attrs));
  attrs["axes"] = ints_attr(std::move(axes));
  return op("ReduceSum", {v}, std::move(attrs));
}

ir::Value* GradientBuilder::unsqueeze(ir::Value* v, std::vector<int64_t> axes) {
  if (opset() >= kAxesInputOpset) return op("Unsqueeze", {v, ints(std::move(axes))});
  return op("Unsqueeze", {v}, {{"axes", ints_attr(std::move(axes))}});
}

ir::Value* GradientBuilder::squeeze(ir::Value* v, std::vector<int64_t> axes) {
  if (opset() >= kAxesInputOpset) return op("Squeeze", {v, ints(std::move(axes))});
  return op("Squeeze", {v}, {{"axes", ints_attr(std::move(axes))}});
}

ir::Value* GradientBuilder::reshape_like(ir::Value* v, ir::Value* like) {
  ir::Attributes attrs;
  // A 0 in the shape would otherwise copy v's extent instead of meaning an empty axis.
  if (opset() >= 14) attrs["allowzero"] = ir::Attribute::of_int(1);
  return op("Reshape", {v, op("Shape", {like})}, std::move(attrs));
}

ir::Value* GradientBuilder::sum_to(ir::Value* g, const ir::TensorType& g_type, ir::Value* to) {
  const ir::TensorType& t = to->type;
  if (g_type.rank_known && t.rank_known && t.rank() <= g_type.rank()) {
    if (std::optional<std::vector<int64_t>> axes = broadcast_axes(g_type, t)) {
      if (axes->empty()) return g;  // same rank, nothing stretched: g has to's shape already
      ir::Value* sum = reduce_sum(g, *axes, true);
      return g_type.rank() == t.rank() ? sum : reshape_like(sum, to);
    }
  }
  if (opset() < kAxesInputOpset)
    unsupported("the axes '" + to->name() + "' " + t.str() + " was broadcast along to " + g_type.str() +
                " are only known at run time; that needs opset 13 or later (ReduceSum's axes as an input)");
  return sum_to_at_run_time(g, to);
}

// to's shape, padded on the left with 1s to g's rank; the axes where it is 1 are summed (the
// ones g also has as 1 sum nothing away).
ir::Value* GradientBuilder::sum_to_at_run_time(ir::Value* g, ir::Value* to) {
  ir::Value* g_shape = op("Shape", {g});
  ir::Value* to_shape = op("Shape", {to});
  ir::Value* lead = op("Sub", {op("Size", {g_shape}), op("Size", {to_shape})});
  kiln::Tensor one = kiln::Tensor::from_vector<int64_t>({1}, {1});
  ir::Value* ones = op("ConstantOfShape", {op("Reshape", {lead, ints({1})})}, {{"value", ir::Attribute::of_tensor(one)}});
  ir::Value* padded = op("Concat", {ones, to_shape}, {{"axis", ir::Attribute::of_int(0)}});
  ir::Value* axes = op("Reshape", {op("NonZero", {op("Equal", {padded, ints({1})})}), ints({-1})});
  ir::Value* sum = op("ReduceSum", {g, axes},
                      {{"keepdims", ir::Attribute::of_int(1)}, {"noop_with_empty_axes", ir::Attribute::of_int(1)}});
  return reshape_like(sum, to);
}

}  // namespace kiln::onnx_fe
