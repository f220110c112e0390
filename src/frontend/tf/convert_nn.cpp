// Convolutions, pooling, matrix products, normalization, resizing and the TF.js fused ops.
// TensorFlow's NHWC tensors meet kiln's channels-first conv and pool ops through Transposes,
// which layout assignment turns around (docs/tensorflow.md).
#include <kiln/error.h>

#include "frontend/tf/converter.h"

namespace kiln::tf_fe {

namespace {

using A = ir::Attribute;
using Outs = std::vector<ir::Value*>;

// The spatial entries of an N?C-ordered list (strides, dilations, ksize): 1 each when absent.
std::vector<int64_t> spatial(Converter& c, const std::string& attr, int r, bool last) {
  std::vector<int64_t> v = c.attr_ints_or(attr, {});
  if (v.empty()) return std::vector<int64_t>(r - 2, 1);
  if (static_cast<int>(v.size()) != r) c.fail("'" + attr + "' has " + std::to_string(v.size()) + " entries, expected " + std::to_string(r));
  std::vector<int64_t> s;
  if (last) s.assign(v.begin() + 1, v.end() - 1);
  else s.assign(v.begin() + 2, v.end());
  if ((last ? v[0] * v[r - 1] : v[0] * v[1]) != 1) c.unsupported("'" + attr + "' other than 1 along batch or channels");
  return s;
}

// Padding attributes of a conv or pool: SAME as SAME_UPPER (TensorFlow puts the odd pixel at
// the end), EXPLICIT from explicit_paddings.
void add_padding(Converter& c, ir::Attributes& attrs, int r, bool last) {
  const std::string p = c.attr_string_or("padding", "VALID");
  if (p == "SAME") {
    attrs["auto_pad"] = A::of_string("SAME_UPPER");
  } else if (p == "VALID") {
    attrs["pads"] = A::of_ints(std::vector<int64_t>(2 * (r - 2), 0));
  } else if (p == "EXPLICIT") {
    const auto e = c.attr_ints_or("explicit_paddings", {});
    if (static_cast<int>(e.size()) != 2 * r) c.fail("explicit_paddings needs " + std::to_string(2 * r) + " values");
    std::vector<int64_t> pads(2 * (r - 2));
    for (int i = 0; i < r - 2; ++i) {
      const int d = last ? i + 1 : i + 2;
      pads[i] = e[2 * d];
      pads[i + r - 2] = e[2 * d + 1];
    }
    attrs["pads"] = A::of_ints(pads);
  } else {
    c.unsupported("padding '" + p + "' is not supported");
  }
}

ir::Value* to_first(Converter& c, ir::Value* x, bool last) {
  return last ? c.transpose(x, Converter::to_channels_first(c.rank(x))) : x;
}
ir::Value* to_last(Converter& c, ir::Value* x, bool last) {
  return last ? c.transpose(x, Converter::to_channels_last(c.rank(x))) : x;
}

// x * scale / sqrt(var + eps) + (offset - mean * scale / sqrt(var + eps)) along the channel
// axis, as elementwise ops that fold into per-channel constants.
ir::Value* batch_norm(Converter& c, ir::Value* x, ir::Value* scale, ir::Value* offset, ir::Value* mean,
                      ir::Value* var, float eps, bool last) {
  ir::Value* a = c.op("Mul", {scale, c.op("Reciprocal", {c.op("Sqrt", {c.op("Add", {var, c.scalar(eps, var->type.dtype)})})})});
  ir::Value* b = c.op("Sub", {offset, c.op("Mul", {mean, a})});
  if (!last) {
    std::vector<int64_t> axes;
    for (int i = 1; i < c.rank(x) - 1; ++i) axes.push_back(i);
    a = c.unsqueeze(a, axes);
    b = c.unsqueeze(b, axes);
  }
  return c.op("Add", {c.op("Mul", {x, a}), b});
}

// An activation named in a fused op's fused_ops list, applied in TensorFlow's layout.
ir::Value* activation(Converter& c, const std::string& act, ir::Value* y, ir::Value* alpha) {
  if (act == "Relu") return c.op("Relu", {y});
  if (act == "Relu6") return c.op("Clip", {y, c.scalar(0, y->type.dtype), c.scalar(6, y->type.dtype)});
  if (act == "Elu") return c.op("Elu", {y});
  if (act == "Selu") return c.op("Selu", {y});
  if (act == "Sigmoid") return c.op("Sigmoid", {y});
  if (act == "Tanh") return c.op("Tanh", {y});
  if (act == "LeakyRelu") return c.op("LeakyRelu", {y}, {{"alpha", A::of_float(c.attr_float_or("leakyrelu_alpha", 0.2f))}});
  if (act == "Prelu") {
    if (!alpha) c.fail("fused Prelu has no alpha input");
    return c.op("PRelu", {y, alpha});
  }
  c.unsupported("fused op '" + act + "' is not supported");
}

// Conv2D/Conv3D, DepthwiseConv2dNative and the TF.js fused forms (_FusedConv2D,
// FusedDepthwiseConv2dNative): inputs x, filter, then the fused ops' arguments.
Outs conv(Converter& c, bool depthwise, bool fused) {
  if (c.num_inputs() < 2) c.fail("needs an input and a filter");
  const bool last = c.channels_last();
  ir::Value* x = c.in(0);
  ir::Value* w = c.in(1);
  const int r = c.rank(x);
  if (c.rank(w) != r) c.fail("the filter's rank differs from the input's");
  ir::Attributes attrs{{"strides", A::of_ints(spatial(c, "strides", r, last))},
                       {"dilations", A::of_ints(spatial(c, "dilations", r, last))}};
  add_padding(c, attrs, r, last);
  // Filter [spatial..., in, out] (depthwise: [spatial..., in, multiplier]) -> [out, in/group, spatial...].
  std::vector<int64_t> perm{r - 1, r - 2};
  for (int i = 0; i < r - 2; ++i) perm.push_back(i);
  ir::Value* wt;
  const ir::TensorType& wtype = w->type;
  if (depthwise) {
    if (!wtype.dims[r - 2].is_static() || !wtype.dims[r - 1].is_static()) c.unsupported("a depthwise filter of unknown shape");
    const int64_t in = wtype.dims[r - 2].value, mult = wtype.dims[r - 1].value;
    std::vector<int64_t> p{r - 2, r - 1};
    for (int i = 0; i < r - 2; ++i) p.push_back(i);
    std::vector<int64_t> shape{in * mult, 1};
    for (int i = 0; i < r - 2; ++i) shape.push_back(0);
    wt = c.op("Reshape", {c.transpose(w, p), c.ints(shape)});
    attrs["group"] = A::of_int(in);
  } else {
    wt = c.transpose(w, perm);
    const ir::Dim& cin = x->type.dims[last ? r - 1 : 1];
    const ir::Dim& fin = wtype.dims[r - 2];
    if (cin.is_static() && fin.is_static() && fin.value > 0 && cin.value != fin.value) {
      if (cin.value % fin.value) c.fail("input channels are not a multiple of the filter's");
      attrs["group"] = A::of_int(cin.value / fin.value);
    }
  }
  Outs ins{to_first(c, x, last), wt};
  std::vector<std::string> fused_ops = fused ? c.attr_strings_or("fused_ops") : std::vector<std::string>{};
  size_t k = 0;
  int arg = 2;
  if (k < fused_ops.size() && fused_ops[k] == "BiasAdd") {
    ins.push_back(c.in(arg++));
    ++k;
  }
  ir::Value* y = to_last(c, c.op("Conv", ins, attrs), last);
  if (k < fused_ops.size() && (fused_ops[k] == "FusedBatchNorm" || fused_ops[k] == "FusedBatchNormV3")) {
    if (c.num_inputs() < arg + 4) c.fail("fused batch norm needs scale, offset, mean and variance");
    y = batch_norm(c, y, c.in(arg), c.in(arg + 1), c.in(arg + 2), c.in(arg + 3), c.attr_float_or("epsilon", 1e-4f), last);
    arg += 4;
    ++k;
  }
  for (; k < fused_ops.size(); ++k) {
    ir::Value* alpha = arg < c.num_inputs() ? c.in(arg) : nullptr;
    if (fused_ops[k] == "Prelu") ++arg;
    y = activation(c, fused_ops[k], y, alpha);
  }
  return {y};
}

Outs pool(Converter& c, const std::string& onnx, bool ksize_inputs) {
  c.expect_inputs(ksize_inputs ? 3 : 1);
  const bool last = c.channels_last();
  ir::Value* x = c.in(0);
  const int r = c.rank(x);
  std::vector<int64_t> ksize, strides;
  if (ksize_inputs) {
    auto k = c.known_ints(1, "ksize"), s = c.known_ints(2, "strides");
    if (static_cast<int>(k.size()) != r || static_cast<int>(s.size()) != r) c.fail("ksize and strides need one entry per dim");
    for (int i = 0; i < r - 2; ++i) {
      ksize.push_back(k[last ? i + 1 : i + 2]);
      strides.push_back(s[last ? i + 1 : i + 2]);
    }
  } else {
    ksize = spatial(c, "ksize", r, last);
    strides = spatial(c, "strides", r, last);
  }
  ir::Attributes attrs{{"kernel_shape", A::of_ints(ksize)}, {"strides", A::of_ints(strides)}};
  add_padding(c, attrs, r, last);
  return {to_last(c, c.op(onnx, {to_first(c, x, last)}, attrs), last)};
}

// MatMul's operands with TensorFlow's transpose/adjoint flags, swapping the last two axes.
ir::Value* swap_last(Converter& c, ir::Value* v) {
  const int r = c.rank(v);
  std::vector<int64_t> p;
  for (int i = 0; i < r; ++i) p.push_back(i);
  std::swap(p[r - 1], p[r - 2]);
  return c.transpose(v, p);
}

Outs matmul(Converter& c, bool fused) {
  if (c.num_inputs() < 2) c.fail("needs two operands");
  const bool ta = c.attr_bool_or("transpose_a", false), tb = c.attr_bool_or("transpose_b", false);
  std::vector<std::string> fused_ops = fused ? c.attr_strings_or("fused_ops") : std::vector<std::string>{};
  size_t k = 0;
  Outs ins{c.in(0), c.in(1)};
  if (k < fused_ops.size() && fused_ops[k] == "BiasAdd") {
    if (c.num_inputs() < 3) c.fail("fused BiasAdd has no bias input");
    ins.push_back(c.in(2));
    ++k;
  }
  ir::Value* y = c.op("Gemm", ins, {{"transA", A::of_int(ta)}, {"transB", A::of_int(tb)}});
  for (; k < fused_ops.size(); ++k) y = activation(c, fused_ops[k], y, c.num_inputs() > 3 ? c.in(3) : nullptr);
  return {y};
}

Outs resize(Converter& c, bool linear) {
  c.expect_inputs(2);
  const bool align = c.attr_bool_or("align_corners", false), half = c.attr_bool_or("half_pixel_centers", false);
  if (align && half) c.fail("align_corners and half_pixel_centers are both set");
  ir::Attributes attrs{{"mode", A::of_string(linear ? "linear" : "nearest")},
                       {"coordinate_transformation_mode",
                        A::of_string(align ? "align_corners" : half ? "half_pixel" : "asymmetric")}};
  // Nearest: TensorFlow takes floor(x * scale) (asymmetric), floor((x + 0.5) * scale) (half
  // pixel), round(x * scale) (align corners): the last two round half up. The resize runs on
  // axes 1 and 2 of the NHWC tensor.
  if (!linear) attrs["nearest_mode"] = A::of_string(align || half ? "round_prefer_ceil" : "floor");
  // sizes of all four NHWC dims (N and C kept): the form every ONNX consumer reads (rather
  // than the `axes` attribute); roi and scales absent.
  ir::Value* shape = c.op("Shape", {c.in(0)});
  ir::Value* sizes = c.op("Concat", {c.op("Slice", {shape, c.ints({0}), c.ints({1})}), c.as_int64(c.in(1)),
                                     c.op("Slice", {shape, c.ints({3}), c.ints({4})})},
                          {{"axis", A::of_int(0)}});
  return {c.op("Resize", {c.in(0), nullptr, nullptr, sizes}, attrs)};
}

// NonMaxSuppressionV2..V5: boxes [N, 4] (corners, either order), scores [N] -> the selected
// indices [M] (int32), best first; as ONNX's per-batch-and-class form with one of each.
Outs non_max_suppression(Converter& c, int version) {
  const int need = version == 2 ? 4 : version == 5 ? 6 : 5;
  c.expect_inputs(need);
  if (version == 5) {
    const kiln::Tensor* sigma = c.known(c.in(5));
    if (!sigma || sigma->numel() != 1 || sigma->as_double(0) != 0) c.unsupported("soft NMS (soft_nms_sigma other than 0)");
  }
  ir::Value* boxes = c.unsqueeze(c.in(0), {0});
  ir::Value* scores = c.unsqueeze(c.in(1), {0, 1});
  ir::Value* max_out = c.reshape(c.as_int64(c.in(2)), {1});
  Outs ins{boxes, scores, max_out, c.reshape(c.cast(c.in(3), DType::Float), {1})};
  if (version >= 3) ins.push_back(c.reshape(c.cast(c.in(4), DType::Float), {1}));
  ir::Value* sel = c.op("NonMaxSuppression", ins, {{"center_point_box", A::of_int(0)}});
  ir::Value* idx = c.op("Gather", {sel, c.scalar(2, DType::Int64)}, {{"axis", A::of_int(1)}});
  ir::Value* count = c.op("Shape", {idx});  // [1]
  ir::Value* valid = c.cast(c.reshape(count, {}), DType::Int32);
  if (version >= 4 && c.attr_bool_or("pad_to_max_output_size", false)) {
    ir::Value* pads = c.op("Concat", {c.ints({0}), c.op("Sub", {max_out, count})}, {{"axis", A::of_int(0)}});
    idx = c.op("Pad", {idx, pads});
  }
  idx = c.cast(idx, DType::Int32);
  if (version <= 3) return {idx};
  if (version == 4) return {idx, valid};
  ir::Value* sel_scores = c.op("Gather", {c.in(1), idx}, {{"axis", A::of_int(0)}});
  if (c.attr_bool_or("pad_to_max_output_size", false)) {
    // Padded entries (index 0) score 0, as TensorFlow's.
    ir::Value* keep = c.op("Less", {c.op("Range", {c.scalar(0, DType::Int32), c.cast(c.reshape(max_out, {}), DType::Int32),
                                                   c.scalar(1, DType::Int32)}),
                                    valid});
    sel_scores = c.op("Where", {keep, sel_scores, c.scalar(0, c.in(1)->type.dtype)});
  }
  return {idx, sel_scores, valid};
}

// SpaceToBatchND / BatchToSpaceND on [batch, spatial (M dims)..., rest...], block_shape and
// paddings/crops known: Pad, Reshape, Transpose, Reshape (and the inverse with a crop).
Outs space_batch(Converter& c, bool to_batch) {
  c.expect_inputs(3);
  ir::Value* x = c.in(0);
  const std::vector<int64_t> block = c.known_ints(1, "block_shape");
  const std::vector<int64_t> pc = c.known_ints(2, to_batch ? "paddings" : "crops");
  const int m = static_cast<int>(block.size());
  const int r = c.rank(x);
  if (static_cast<int>(pc.size()) != 2 * m || r < m + 1) c.fail("block_shape and paddings do not fit the input");
  std::vector<int64_t> dims;
  for (int i = 1; i < r; ++i) {
    if (!x->type.dims[i].is_static()) c.unsupported("a non-batch dim not known at import");
    dims.push_back(x->type.dims[i].value);
  }
  int64_t prod = 1;
  for (int64_t b : block) prod *= b;
  if (to_batch) {
    std::vector<int64_t> pads(2 * r, 0);
    for (int i = 0; i < m; ++i) {
      pads[1 + i] = pc[2 * i];
      pads[r + 1 + i] = pc[2 * i + 1];
      dims[i] += pc[2 * i] + pc[2 * i + 1];
      if (dims[i] % block[i]) c.fail("a padded spatial dim is not a multiple of its block");
    }
    ir::Value* padded = c.op("Pad", {x, c.ints(pads)});
    std::vector<int64_t> shape{-1};  // [B, d0/b0, b0, d1/b1, b1, ..., rest]
    for (int i = 0; i < m; ++i) {
      shape.push_back(dims[i] / block[i]);
      shape.push_back(block[i]);
    }
    for (int i = m; i < r - 1; ++i) shape.push_back(dims[i]);
    std::vector<int64_t> perm;  // [b0, b1, ..., B, d0/b0, d1/b1, ..., rest]
    for (int i = 0; i < m; ++i) perm.push_back(2 + 2 * i);
    perm.push_back(0);
    for (int i = 0; i < m; ++i) perm.push_back(1 + 2 * i);
    for (int i = m; i < r - 1; ++i) perm.push_back(m + 1 + i);
    std::vector<int64_t> out{-1};
    for (int i = 0; i < m; ++i) out.push_back(dims[i] / block[i]);
    for (int i = m; i < r - 1; ++i) out.push_back(dims[i]);
    return {c.reshape(c.transpose(c.reshape(padded, shape), perm), out)};
  }
  std::vector<int64_t> shape(block.begin(), block.end());  // [b0, b1, ..., B/prod, d0, d1, ..., rest]
  shape.push_back(-1);
  for (int64_t d : dims) shape.push_back(d);
  std::vector<int64_t> perm{m};  // [B/prod, d0, b0, d1, b1, ..., rest]
  for (int i = 0; i < m; ++i) {
    perm.push_back(m + 1 + i);
    perm.push_back(i);
  }
  for (int i = m; i < r - 1; ++i) perm.push_back(m + 1 + i);
  std::vector<int64_t> out{-1};
  for (int i = 0; i < m; ++i) out.push_back(dims[i] * block[i]);
  for (int i = m; i < r - 1; ++i) out.push_back(dims[i]);
  ir::Value* y = c.reshape(c.transpose(c.reshape(x, shape), perm), out);
  std::vector<int64_t> starts, ends, axes;
  for (int i = 0; i < m; ++i) {
    if (pc[2 * i] == 0 && pc[2 * i + 1] == 0) continue;
    starts.push_back(pc[2 * i]);
    ends.push_back(out[1 + i] - pc[2 * i + 1]);
    axes.push_back(1 + i);
  }
  if (!axes.empty()) y = c.op("Slice", {y, c.ints(starts), c.ints(ends), c.ints(axes)});
  return {y};
}

}  // namespace

void add_nn_converters(ConverterTable& t) {
  t["Conv2D"] = t["Conv3D"] = [](Converter& c) { return conv(c, false, false); };
  t["DepthwiseConv2dNative"] = [](Converter& c) { return conv(c, true, false); };
  t["_FusedConv2D"] = t["_FusedConv3D"] = [](Converter& c) { return conv(c, false, true); };
  t["FusedDepthwiseConv2dNative"] = t["_FusedDepthwiseConv2dNative"] = [](Converter& c) { return conv(c, true, true); };

  t["Conv2DBackpropInput"] = [](Converter& c) -> Outs {
    c.expect_inputs(3);
    const bool last = c.channels_last();
    ir::Value* w = c.in(1);
    ir::Value* x = c.in(2);
    const int r = c.rank(x);
    std::vector<int64_t> sizes = c.known_ints(0, "input_sizes");
    if (static_cast<int>(sizes.size()) != r) c.fail("input_sizes needs one entry per dim");
    std::vector<int64_t> out_spatial;
    for (int i = 0; i < r - 2; ++i) out_spatial.push_back(sizes[last ? i + 1 : i + 2]);
    const auto strides = spatial(c, "strides", r, last), dil = spatial(c, "dilations", r, last);
    ir::Attributes attrs{{"strides", A::of_ints(strides)}, {"dilations", A::of_ints(dil)}};
    // The forward conv's padding, and the extra rows at the end, from the known shapes.
    const std::string p = c.attr_string_or("padding", "VALID");
    if (p != "SAME" && p != "VALID") c.unsupported("padding '" + p + "' is not supported");
    std::vector<int64_t> pads(2 * (r - 2), 0), out_pad(r - 2, 0);
    for (int i = 0; i < r - 2; ++i) {
      const ir::Dim& in = x->type.dims[last ? i + 1 : i + 2];
      const ir::Dim& kd = w->type.dims[i];
      if (!in.is_static() || !kd.is_static()) c.unsupported("a transposed conv whose shapes are not known at import");
      const int64_t keff = (kd.value - 1) * dil[i] + 1;
      const int64_t full = (in.value - 1) * strides[i] + keff;
      const int64_t before = p == "SAME" ? std::max<int64_t>((in.value - 1) * strides[i] + keff - out_spatial[i], 0) / 2 : 0;
      const int64_t after = full - before - out_spatial[i];
      pads[i] = before;
      if (after >= 0) pads[i + r - 2] = after;
      else out_pad[i] = -after;
    }
    attrs["pads"] = A::of_ints(pads);
    attrs["output_padding"] = A::of_ints(out_pad);
    std::vector<int64_t> perm{r - 1, r - 2};
    for (int i = 0; i < r - 2; ++i) perm.push_back(i);
    ir::Value* y = c.op("ConvTranspose", {to_first(c, x, last), c.transpose(w, perm)}, attrs);
    return {to_last(c, y, last)};
  };

  t["MaxPool"] = t["MaxPool3D"] = [](Converter& c) { return pool(c, "MaxPool", false); };
  t["AvgPool"] = t["AvgPool3D"] = [](Converter& c) { return pool(c, "AveragePool", false); };
  t["MaxPoolV2"] = [](Converter& c) { return pool(c, "MaxPool", true); };

  t["BiasAdd"] = t["BiasAddV1"] = [](Converter& c) -> Outs {
    c.expect_inputs(2);
    ir::Value* b = c.in(1);
    if (!c.channels_last()) {
      std::vector<int64_t> axes;
      for (int i = 1; i < c.rank(c.in(0)) - 1; ++i) axes.push_back(i);
      b = c.unsqueeze(b, axes);
    }
    return {c.op("Add", {c.in(0), b})};
  };
  for (const char* op : {"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"}) {
    t[op] = [](Converter& c) -> Outs {
      c.expect_inputs(5);
      if (c.attr_bool_or("is_training", true) && c.node().attr().count("is_training"))
        c.unsupported("training-mode batch normalization (is_training = true): freeze the graph for inference");
      ir::Value* y = batch_norm(c, c.in(0), c.in(1), c.in(2), c.in(3), c.in(4), c.attr_float_or("epsilon", 1e-4f),
                                c.channels_last());
      Outs o{y, c.in(3), c.in(4), c.in(3), c.in(4)};
      if (c.node().op() == "FusedBatchNormV3") o.push_back(c.in(3));
      return o;
    };
  }

  t["MatMul"] = [](Converter& c) { return matmul(c, false); };
  t["_FusedMatMul"] = [](Converter& c) { return matmul(c, true); };
  for (const char* op : {"BatchMatMul", "BatchMatMulV2", "BatchMatMulV3"}) {
    t[op] = [](Converter& c) -> Outs {
      c.expect_inputs(2);
      ir::Value* a = c.attr_bool_or("adj_x", false) ? swap_last(c, c.in(0)) : c.in(0);
      ir::Value* b = c.attr_bool_or("adj_y", false) ? swap_last(c, c.in(1)) : c.in(1);
      ir::Value* y = c.op("MatMul", {a, b});
      if (c.has_attr("Tout")) y = c.cast(y, c.attr_type("Tout"));
      return {y};
    };
  }

  t["NonMaxSuppressionV2"] = [](Converter& c) { return non_max_suppression(c, 2); };
  t["NonMaxSuppressionV3"] = [](Converter& c) { return non_max_suppression(c, 3); };
  t["NonMaxSuppressionV4"] = [](Converter& c) { return non_max_suppression(c, 4); };
  t["NonMaxSuppressionV5"] = [](Converter& c) { return non_max_suppression(c, 5); };
  t["SpaceToBatchND"] = [](Converter& c) { return space_batch(c, true); };
  t["BatchToSpaceND"] = [](Converter& c) { return space_batch(c, false); };
  t["ResizeBilinear"] = [](Converter& c) { return resize(c, true); };
  t["ResizeNearestNeighbor"] = [](Converter& c) { return resize(c, false); };

  t["DepthToSpace"] = t["SpaceToDepth"] = [](Converter& c) -> Outs {
    c.expect_inputs(1);
    const bool last = c.channels_last();
    ir::Attributes attrs{{"blocksize", A::of_int(c.attr_int("block_size"))}};
    const bool d2s = c.node().op() == "DepthToSpace";
    if (d2s) attrs["mode"] = A::of_string("DCR");
    ir::Value* y = c.op(d2s ? "DepthToSpace" : "SpaceToDepth", {to_first(c, c.in(0), last)}, attrs);
    return {to_last(c, y, last)};
  };

  t["LRN"] = [](Converter& c) -> Outs {
    c.expect_inputs(1);
    const int64_t radius = c.attr_int_or("depth_radius", 5);
    const int64_t size = 2 * radius + 1;
    ir::Value* y = c.op("LRN", {to_first(c, c.in(0), true)},
                        {{"size", A::of_int(size)},
                         {"alpha", A::of_float(c.attr_float_or("alpha", 1.0f) * static_cast<float>(size))},
                         {"beta", A::of_float(c.attr_float_or("beta", 0.5f))},
                         {"bias", A::of_float(c.attr_float_or("bias", 1.0f))}});
    return {to_last(c, y, true)};
  };
}

}  // namespace kiln::tf_fe
