#include "passes/weight_util.h"

#include <cmath>

#include "passes/graph_util.h"

namespace kiln::passes {

namespace {
bool is(const ir::Node& n, const char* op) { return n.domain().empty() && n.op_type() == op; }
}  // namespace

std::optional<int64_t> foldable_channels(const ir::Node& n) {
  const Tensor* w = const_of(n.input(1));
  if (!w || !dtype_is_float(w->dtype()) || !n.input(0) || n.num_outputs() != 1) return std::nullopt;
  if (n.input(0)->type.dtype != w->dtype()) return std::nullopt;
  if (is(n, "Conv")) return w->rank() >= 3 ? std::optional<int64_t>(w->dim(0)) : std::nullopt;
  if (is(n, "ConvTranspose")) {
    if (w->rank() < 3) return std::nullopt;
    return w->dim(1) * n.attr_int("group", 1);
  }
  if (is(n, "Gemm")) {
    if (w->rank() != 2 || n.owner()->opset() < 7) return std::nullopt;  // older Gemm: broadcast attr
    return n.attr_int("transB", 0) ? w->dim(0) : w->dim(1);
  }
  if (is(n, "MatMul")) {
    const ir::Value* a = n.input(0);
    if (w->rank() != 2 || !a->type.rank_known || a->type.rank() != 2) return std::nullopt;
    return w->dim(1);
  }
  return std::nullopt;
}

Tensor scale_weight(const ir::Node& n, const std::vector<float>& s) {
  const Tensor& w = n.input(1)->constant();
  std::vector<float> v = to_floats(w);
  const int64_t d0 = w.dim(0), d1 = w.dim(1), inner = d0 * d1 > 0 ? w.numel() / (d0 * d1) : 0;
  auto channel = [&](int64_t i, int64_t j) -> int64_t {
    if (is(n, "Conv")) return i;
    if (is(n, "ConvTranspose")) {
      int64_t group = n.attr_int("group", 1), in_per_group = d0 / group;
      return (i / in_per_group) * d1 + j;
    }
    if (is(n, "Gemm") && n.attr_int("transB", 0)) return i;
    return j;  // Gemm [K,N], MatMul [K,N]
  };
  for (int64_t i = 0; i < d0; ++i)
    for (int64_t j = 0; j < d1; ++j) {
      float f = s[channel(i, j)];
      float* p = v.data() + (i * d1 + j) * inner;
      for (int64_t k = 0; k < inner; ++k) p[k] *= f;
    }
  return floats_like(w, v, w.dims());
}

std::optional<std::vector<float>> per_channel(const Tensor& t, int64_t channels, int out_rank) {
  if (!dtype_is_float(t.dtype())) return std::nullopt;
  std::vector<float> v = to_floats(t);
  if (t.numel() == 1) return std::vector<float>(channels, v[0]);
  if (t.numel() != channels) return std::nullopt;
  // The one non-1 dim must line up with output dim 1 once right-aligned.
  int non1 = -1;
  for (int i = 0; i < t.rank(); ++i)
    if (t.dim(i) != 1) non1 = i;
  if (non1 < 0 || out_rank - t.rank() + non1 != 1) return std::nullopt;
  return v;
}

std::optional<std::vector<float>> channel_bias(const ir::Node& n, int64_t channels) {
  if (is(n, "MatMul")) return std::vector<float>(channels, 0.f);
  const int bi = 2;
  if (!n.input(bi)) return std::vector<float>(channels, 0.f);
  const Tensor* b = const_of(n.input(bi));
  if (!b || !dtype_is_float(b->dtype())) return std::nullopt;
  if (is(n, "Gemm")) {
    // C broadcasts to [M, N]: only forms that are the same for every row fold into a vector.
    if (b->rank() > 2 || (b->rank() == 2 && b->dim(0) != 1)) return std::nullopt;
    auto v = per_channel(*b, channels, 2);
    if (!v && b->numel() == channels) v = to_floats(*b);
    if (!v) return std::nullopt;
    float beta = n.attr_float("beta", 1.f);
    for (float& x : *v) x *= beta;
    return v;
  }
  if (b->numel() != channels) return std::nullopt;
  return to_floats(*b);
}

ir::Value* rebuild_with(ir::Graph& g, const ir::Node& n, Tensor weight, const std::vector<float>& bias,
                        const ir::Value* like) {
  const Tensor& w0 = n.input(1)->constant();
  ir::Value* w = add_const(g, n.input(1)->name(), std::move(weight));
  ir::Value* b = add_const(g, n.name() + "_bias", floats_like(w0, bias, {static_cast<int64_t>(bias.size())}));
  ir::Value* out = add_value_like(g, like, like->name());
  ir::Attributes attrs = n.attrs;
  if (is(n, "MatMul")) {
    ir::Value* mm = add_value_like(g, like, like->name() + "_mm");
    g.add_node("MatMul", {n.input(0), w}, {mm}, attrs, g.unique_name(n.name()));
    g.add_node("Add", {mm, b}, {out}, {}, g.unique_name(n.name() + "_bias"));
    return out;
  }
  if (is(n, "Gemm")) attrs["beta"] = ir::Attribute::of_float(1.f);
  std::vector<ir::Value*> ins = n.inputs();
  ins.resize(3, nullptr);
  ins[1] = w;
  ins[2] = b;
  g.add_node(n.op_type(), ins, {out}, std::move(attrs), g.unique_name(n.name()), n.domain());
  return out;
}

std::optional<ChannelAffine> inference_batchnorm(const ir::Graph& g, const ir::Node& bn, int64_t channels) {
  if (bn.op_type() != "BatchNormalization" || !bn.domain().empty() || bn.num_inputs() != 5) return std::nullopt;
  if (bn.attr_int("training_mode", 0) != 0 || bn.attr_int("spatial", 1) != 1) return std::nullopt;
  if (bn.owner()->opset() < 7 && bn.attr_int("is_test", 0) == 0 && bn.has_attr("is_test")) return std::nullopt;
  for (int i = 1; i < bn.num_outputs(); ++i)
    if (bn.output(i) && (!bn.output(i)->uses().empty() || is_graph_output(g, bn.output(i)))) return std::nullopt;
  std::vector<std::vector<float>> p;  // gamma, beta, mean, var
  for (int i = 1; i <= 4; ++i) {
    const Tensor* t = const_of(bn.input(i));
    if (!t || t->numel() != channels || !dtype_is_float(t->dtype())) return std::nullopt;
    p.push_back(to_floats(*t));
  }
  const float eps = bn.attr_float("epsilon", 1e-5f);
  ChannelAffine a{std::vector<float>(channels), std::vector<float>(channels)};
  for (int64_t c = 0; c < channels; ++c) {
    a.scale[c] = p[0][c] / std::sqrt(p[3][c] + eps);
    a.shift[c] = p[1][c] - p[2][c] * a.scale[c];
  }
  return a;
}

}  // namespace kiln::passes
