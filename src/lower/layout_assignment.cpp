// Layout assignment, in two steps (as ORT's NHWC transformer and TF's layout optimizer do):
//
//  1. Each 4-D float Conv / FusedConv / ConvTranspose / pooling op becomes its channels-last form between two
//     layout changes:   y = Conv(x)   ->   y = T_nchw(FusedConv[channels_last](T_nhwc(x)))
//  2. Layout changes sink through layout-agnostic ops toward their consumers, and a T_nhwc
//     that meets a T_nchw cancels:
//
//       T_nchw(a) -> Relu            =>  Relu(a) -> T_nchw            (elementwise, any arity:
//       Add(T_nchw(a), T_nchw(b))    =>  T_nchw(Add(a, b))             constants are permuted)
//       Concat(T_nchw(a), ..., axis=1) => T_nchw(Concat(a, ..., axis=3))
//       Split(T_nchw(a), axis=1)     =>  T_nchw each of Split(a, axis=3)     (Slice likewise)
//       channel shuffle (Reshape, Transpose, Reshape) => the same shuffle of NHWC's last axis
//       Pad(T_nchw(a), p)            =>  T_nchw(Pad(a, p moved))
//       Resize(T_nchw(a), sizes)     =>  T_nchw(Resize(a, sizes moved))   (where it then cancels)
//       Transpose(Reshape(T_nchw(a), [N,C,HW]), [0,2,1]) => Reshape(a, [N,HW,C])
//       ArgMax(T_nchw(a), axis=1)    =>  ArgMax(a, axis=3)   (ArgMin likewise; a kept dim a view)
//       T_nhwc(T_nchw(a))            =>  a
//
//     What remains are the layout changes a model really needs: after its input, before its
//     outputs, and around ops that care about the channel axis (Reshape of a 4-D tensor, ...).
//     A T_nchw that only moves size-1 dims (after a global pool) is a Reshape, a free view.
#include "lower/layout_assignment.h"

#include <algorithm>
#include <cstring>

#include "ir/strided_copy.h"
#include "ops/core/resize_geometry.h"
#include "ops/core/registry.h"
#include "ir/graph_util.h"

namespace kiln::lower {

namespace {

const std::vector<int64_t> kToNhwc{0, 2, 3, 1};
const std::vector<int64_t> kToNchw{0, 3, 1, 2};

ir::TensorType permuted(const ir::TensorType& t, const std::vector<int64_t>& perm) {
  std::vector<ir::Dim> d;
  for (int64_t p : perm) d.push_back(t.dims[p]);
  return ir::TensorType(t.dtype, d);
}

bool is_transpose(const ir::Node* n, const std::vector<int64_t>& perm) {
  return n && n->domain().empty() && n->op_type() == "Transpose" && n->num_inputs() == 1 &&
         n->attr_ints("perm") == perm;
}

bool float4(const ir::Value* v) {
  return v && v->type.is_tensor() && v->type.rank_known && v->type.rank() == 4 && v->type.is_static() &&
         v->type.dtype == DType::Float;
}

// The source of a T_nchw layout change, or nullptr.
ir::Value* nhwc_source(const ir::Value* v) {
  if (!v || !is_transpose(v->producer(), kToNchw)) return nullptr;
  return v->producer()->input(0);
}

class Rewriter {
 public:
  explicit Rewriter(ir::Graph& g) : g_(g) {}

  // Reshape of x into `out` (static dims): the shape is an input from opset 5 on, an attribute
  // before.
  void reshape(ir::Value* x, ir::Value* out, const std::string& name) {
    const std::vector<int64_t> dims = out->type.static_dims();
    if (g_.opset() < 5) {
      g_.add_node("Reshape", {x}, {out}, {{"shape", ir::Attribute::of_ints(dims)}}, g_.unique_name(name));
      return;
    }
    ir::Value* shape = ir::add_const(
        g_, "layout_shape", Tensor::from_vector<int64_t>({static_cast<int64_t>(dims.size())}, dims));
    g_.add_node("Reshape", {x, shape}, {out}, {}, g_.unique_name(name));
  }

  ir::Value* transpose(ir::Value* x, const std::vector<int64_t>& perm) {
    auto key = std::make_pair(x, perm == kToNhwc);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    // T_nhwc(T_nchw(a)) is a; T_nchw(T_nhwc(a)) likewise.
    ir::Node* p = x->producer();
    if (is_transpose(p, perm == kToNhwc ? kToNchw : kToNhwc)) return cache_[key] = p->input(0);
    ir::Value* y = g_.add_value(g_.unique_name(x->name() + (perm == kToNhwc ? "_nhwc" : "_nchw")), permuted(x->type, perm));
    g_.add_node("Transpose", {x}, {y}, {{"perm", ir::Attribute::of_ints(perm)}}, g_.unique_name("layout"));
    return cache_[key] = y;
  }

  // Replaces node n (output 0 = y, NCHW) by `op` on NHWC data (the inputs in layout_inputs
  // change layout; the others, weights, stay).
  void to_channels_last(ir::Node* n, const std::string& op, ir::Attributes attrs, std::vector<ir::Value*> ins,
                        const std::vector<size_t>& layout_inputs) {
    for (size_t i : layout_inputs)
      if (i < ins.size() && ins[i]) ins[i] = transpose(ins[i], kToNhwc);
    ir::Value* y = n->output(0);
    ir::Value* yn = g_.add_value(g_.unique_name(y->name() + "_nhwc"), permuted(y->type, kToNhwc));
    ir::use_kiln_domain(g_);
    g_.add_node(op, ins, {yn}, std::move(attrs), g_.unique_name(n->name()), "kiln");
    g_.replace_all_uses(y, transpose(yn, kToNchw));
  }

  // Step 1.
  int convert_anchors() {
    int converted = 0;
    for (ir::Node* n : g_.nodes()) {
      if (n->num_outputs() != 1 || !float4(n->output(0)) || !float4(n->input(0))) continue;
      const std::string& op = n->op_type();
      if ((n->domain().empty() && op == "Conv") ||
          (n->domain() == "kiln" && op == "FusedConv" && !n->attr_int("channels_last", 0))) {
        const ir::Value* w = n->input(1);
        if (!w || !w->is_constant() || !w->type.rank_known || w->type.rank() != 4) continue;
        if (n->has_input(3) && !float4(n->input(3))) continue;
        ir::Attributes a = n->attrs;
        a["channels_last"] = ir::Attribute::of_int(1);
        to_channels_last(n, "FusedConv", std::move(a), n->inputs(), {0, 3});
        ++converted;
      } else if (n->domain().empty() && (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" ||
                                         op == "GlobalMaxPool")) {
        if (op == "MaxPool" && n->attr_int("storage_order", 0)) continue;
        // Dilated average pooling (opset 19) stays an ai.onnx node, whose opset says what
        // its dilations mean; the kiln.Nhwc form has no opset of its own.
        if (op == "AveragePool" && n->attrs.count("dilations")) {
          const std::vector<int64_t> d = n->attr_ints("dilations");
          if (std::any_of(d.begin(), d.end(), [](int64_t x) { return x != 1; })) continue;
        }
        to_channels_last(n, "Nhwc" + op, n->attrs, n->inputs(), {0});
        ++converted;
      } else if (n->domain().empty() && (op == "DepthToSpace" || op == "SpaceToDepth")) {
        // Not an anchor: channels-last only where its input already is (after a conv), so the
        // layout changes around it cancel instead of being added.
        if (!nhwc_source(n->input(0))) continue;
        to_channels_last(n, "Nhwc" + op, n->attrs, n->inputs(), {0});
      } else if (n->domain().empty() && op == "ConvTranspose") {
        const ir::Value* w = n->input(1);
        if (!w || !w->is_constant() || !w->type.rank_known || w->type.rank() != 4) continue;
        to_channels_last(n, "NhwcConvTranspose", n->attrs, n->inputs(), {0});
        ++converted;
      }
    }
    return converted;
  }

  // A constant (rank <= 4, broadcasting against 4-D NCHW) permuted for NHWC.
  ir::Value* permute_constant(const ir::Value* c) {
    const Tensor& t = c->constant();
    if (t.kind() != ValueKind::Tensor || t.rank() > 4) return nullptr;
    std::vector<int64_t> d = t.dims();
    while (d.size() < 4) d.insert(d.begin(), 1);
    const int64_t N = d[0], C = d[1], H = d[2], W = d[3];
    Tensor out(t.dtype(), {N, H, W, C});
    if (t.dtype() == DType::String) return nullptr;
    // out[n, h, w, ch] = t[n, ch, h, w]
    if (!ir::strided_copy_bytes(t.raw(), out.raw(), {N, H, W, C}, {C * H * W, W, 1, H * W}, dtype_size(t.dtype())))
      return nullptr;
    return ir::add_const(g_, c->name() + "_nhwc", std::move(out));
  }

  bool agnostic(const ir::Node& n) {
    const ops::OpDef* def = ops::Registry::instance().find(n.domain(), n.op_type());
    if (!def || (def->pattern != ops::PatternKind::ElemWise && def->pattern != ops::PatternKind::Broadcast))
      return false;
    if (n.num_outputs() != 1 || n.has_attr("axis") || n.has_attr("axes") || n.has_attr("broadcast")) return false;
    // Per-channel parameters indexed along axis 1, not numpy broadcasting.
    if (n.op_type() == "BatchNormalization") return false;
    for (const auto& [k, a] : n.attrs)
      if (a.g || !a.graphs.empty()) return false;
    return true;
  }

  // Step 2, one node; returns true when it moved a layout change past n.
  bool sink(ir::Node* n) {
    // Before the check for readers: a class map is often a graph output that nothing reads.
    if (n->domain().empty() && (n->op_type() == "ArgMax" || n->op_type() == "ArgMin")) return sink_channel_arg_reduce(n);
    if (n->num_outputs() < 1 || !n->output(0) || n->output(0)->uses().empty()) return false;
    if (n->domain().empty() && n->op_type() == "Reshape") return sink_channel_shuffle(n) || sink_flatten_spatial(n);
    if (n->domain().empty() && n->op_type() == "Pad") return sink_pad(n);
    if (n->domain().empty() && n->op_type() == "Resize") return sink_resize(n);
    if (n->domain().empty() && (n->op_type() == "ReduceMean" || n->op_type() == "ReduceMax")) return sink_spatial_reduce(n);
    const ir::Value* y0 = n->output(0);
    if (!y0->type.rank_known || y0->type.rank() != 4 || !y0->type.is_static()) return false;
    const std::string& op = n->op_type();
    if (is_transpose(n, kToNhwc)) {  // T_nhwc(T_nchw(a)) = a
      ir::Value* s = nhwc_source(n->input(0));
      if (!s) return false;
      g_.replace_all_uses(n->output(0), s);
      return true;
    }
    if (n->domain().empty() && op == "Concat") {
      std::vector<ir::Value*> ins;
      for (ir::Value* v : n->inputs()) {
        ir::Value* s = nhwc_source(v);
        if (!s) return false;
        ins.push_back(s);
      }
      int64_t axis = n->attr_int("axis", 0);
      if (axis < 0) axis += 4;
      ir::Attributes a = n->attrs;
      a["axis"] = ir::Attribute::of_int(nhwc_axis(axis));
      replace_with(n, op, ins, std::move(a));
      return true;
    }
    if (n->domain().empty() && (op == "InstanceNormalization" || op == "GroupNormalization")) {
      // Each image's statistics are over its pixels whatever their order: channels-last where
      // its input is.
      if (!nhwc_source(n->input(0)) || n->num_outputs() != 1) return false;
      to_channels_last(n, "Nhwc" + op, n->attrs, n->inputs(), {0});
      return true;
    }
    if (n->domain().empty() && op == "Slice" && n->num_inputs() >= 3) return sink_slice(n);
    if (n->domain().empty() && op == "Split") {
      ir::Value* s = nhwc_source(n->input(0));
      if (!s) return false;
      std::vector<ir::Value*> ins = n->inputs();
      ins[0] = s;
      int64_t axis = n->attr_int("axis", 0);
      if (axis < 0) axis += 4;
      ir::Attributes a = n->attrs;
      a["axis"] = ir::Attribute::of_int(nhwc_axis(axis));
      replace_with(n, op, ins, std::move(a));
      return true;
    }
    if (!agnostic(*n)) return false;
    std::vector<ir::Value*> ins;
    bool any = false;
    for (ir::Value* v : n->inputs()) {
      if (!v) { ins.push_back(nullptr); continue; }
      if (ir::Value* s = nhwc_source(v)) {
        ins.push_back(s);
        any = true;
      } else if (v->is_constant()) {
        ir::Value* c = permute_constant(v);
        if (!c) return false;
        ins.push_back(c);
      } else {
        return false;
      }
    }
    if (!any) return false;
    replace_with(n, op, ins, n->attrs);
    return true;
  }

  // Slice (opset 10+, constant axes or none) on the NHWC data with its axes moved.
  bool sink_slice(ir::Node* n) {
    ir::Value* src = nhwc_source(n->input(0));
    if (!src || n->has_attr("axes")) return false;
    const Tensor* starts = ir::const_of(n->input(1));
    if (!starts) return false;
    std::vector<int64_t> axes;
    if (n->has_input(3)) {
      const Tensor* a = ir::const_of(n->input(3));
      if (!a || (a->dtype() != DType::Int64 && a->dtype() != DType::Int32)) return false;
      for (int64_t i = 0; i < a->numel(); ++i) axes.push_back(static_cast<int64_t>(a->as_double(i)));
    } else {
      for (int64_t i = 0; i < starts->numel(); ++i) axes.push_back(i);
    }
    Tensor moved(DType::Int64, {static_cast<int64_t>(axes.size())});
    for (size_t i = 0; i < axes.size(); ++i) {
      const int64_t a = axes[i] < 0 ? axes[i] + 4 : axes[i];
      if (a < 0 || a > 3) return false;
      moved.data<int64_t>()[i] = nhwc_axis(a);
    }
    std::vector<ir::Value*> ins = n->inputs();
    ins[0] = src;
    ins.resize(std::max<size_t>(ins.size(), 4), nullptr);
    ins[3] = ir::add_const(g_, "layout_axes", std::move(moved));
    replace_with(n, "Slice", ins, n->attrs);
    return true;
  }

  // ShuffleNet's channel shuffle, Reshape [N,C,H,W] -> [N,g,C/g,H,W], Transpose [0,2,1,3,4],
  // Reshape back, is the same shuffle of the last axis in NHWC:
  //   [N,H,W,C] -> [N,H,W,g,C/g] -> Transpose [0,1,2,4,3] -> [N,H,W,C]
  bool sink_channel_shuffle(ir::Node* n) {
    ir::Value* src = nhwc_source(n->input(0));
    ir::Value* split = n->output(0);
    if (!src || !split->type.is_static() || split->type.rank() != 5 || split->uses().size() != 1) return false;
    const auto d = n->input(0)->type.static_dims();  // N, C, H, W
    const auto s5 = split->type.static_dims();         // N, g, C/g, H, W
    if (s5 != std::vector<int64_t>{d[0], s5[1], d[1] / std::max<int64_t>(1, s5[1]), d[2], d[3]}) return false;
    ir::Node* t = split->uses()[0].node;
    if (!is_transpose(t, {0, 2, 1, 3, 4}) || t->output(0)->uses().size() != 1) return false;
    ir::Node* back = t->output(0)->uses()[0].node;
    if (!back->domain().empty() || back->op_type() != "Reshape" || back->input(0) != t->output(0)) return false;
    if (!back->output(0)->type.is_static() || back->output(0)->type.static_dims() != d) return false;
    auto value = [&](const std::string& hint, std::vector<int64_t> dims) {
      return g_.add_value(g_.unique_name(hint), ir::TensorType::from_dims(src->type.dtype, dims));
    };
    const int64_t N = d[0], C = d[1], H = d[2], W = d[3], G = s5[1];
    ir::Value* r1 = value("shuffle_split", {N, H, W, G, C / G});
    reshape(src, r1, n->name());
    ir::Value* t1 = value("shuffle_swap", {N, H, W, C / G, G});
    g_.add_node("Transpose", {r1}, {t1}, {{"perm", ir::Attribute::of_ints({0, 1, 2, 4, 3})}}, g_.unique_name(t->name()));
    ir::Value* r2 = value("shuffle_join", {N, H, W, C});
    reshape(t1, r2, back->name());
    g_.replace_all_uses(back->output(0), transpose(r2, kToNchw));
    return true;
  }

  // A detection head's or a patch embedding's Reshape [N,C,H,W] -> [N,C,H*W] read only by
  // Transposes [0,2,1] is, on the NHWC data, one Reshape to [N,H*W,C] (the same element order).
  bool sink_flatten_spatial(ir::Node* n) {
    ir::Value* src = nhwc_source(n->input(0));
    ir::Value* flat = n->output(0);
    if (!src || !flat->type.is_static() || flat->type.rank() != 3 || ir::is_graph_output(g_, flat)) return false;
    const auto d = n->input(0)->type.static_dims();  // N, C, H, W
    if (flat->type.static_dims() != std::vector<int64_t>{d[0], d[1], d[2] * d[3]}) return false;
    for (const ir::Use& u : flat->uses())
      if (!is_transpose(u.node, {0, 2, 1})) return false;
    ir::Value* r = g_.add_value(g_.unique_name(flat->name() + "_nlc"),
                                ir::TensorType::from_dims(src->type.dtype, {d[0], d[2] * d[3], d[1]}));
    reshape(src, r, n->name());
    const std::vector<ir::Use> uses = flat->uses();
    for (const ir::Use& u : uses) g_.replace_all_uses(u.node->output(0), r);
    return true;
  }

  // ReduceMean or ReduceMax over H and W of NHWC data is its global pool (kiln.NhwcGlobal*Pool,
  // [N, 1, 1, C]), whose bytes are the NCHW result's with or without the kept dims: a Reshape
  // (a view) instead of a Transpose of the whole tensor back to NCHW first.
  bool sink_spatial_reduce(ir::Node* n) {
    ir::Value* src = nhwc_source(n->input(0));
    ir::Value* y = n->output(0);
    if (!src || !src->type.is_static() || !y || !y->type.is_static() || ir::is_graph_output(g_, y)) return false;
    std::vector<int64_t> axes;
    if (n->has_attr("axes")) axes = n->attr_ints("axes");
    else if (n->num_inputs() > 1 && n->input(1) && n->input(1)->is_constant())  // opset 18: axes an input
      axes = n->input(1)->constant().to_int64_vector();
    for (int64_t& a : axes) a = a < 0 ? a + 4 : a;
    std::sort(axes.begin(), axes.end());
    if (axes != std::vector<int64_t>{2, 3}) return false;
    const auto d = n->input(0)->type.static_dims();  // N, C, H, W
    const std::vector<int64_t> kept{d[0], d[1], 1, 1}, dropped{d[0], d[1]};
    if (y->type.static_dims() != (n->attr_int("keepdims", 1) ? kept : dropped)) return false;
    ir::Value* pooled = g_.add_value(g_.unique_name(y->name() + "_nhwc"),
                                     ir::TensorType::from_dims(src->type.dtype, {d[0], 1, 1, d[1]}));
    ir::use_kiln_domain(g_);
    g_.add_node(n->op_type() == "ReduceMean" ? "NhwcGlobalAveragePool" : "NhwcGlobalMaxPool", {src}, {pooled}, {},
                g_.unique_name(n->name()), "kiln");
    ir::Value* r = g_.add_value(g_.unique_name(y->name()), y->type);
    reshape(pooled, r, n->name());
    g_.replace_all_uses(y, r);
    return true;
  }

  // ArgMax or ArgMin over the channels of NHWC data (a segmentation head's class map) is the same
  // op over its last axis: [N, H, W] as the NCHW result without the kept dim (the node itself
  // then reads the NHWC data, so a graph output keeps its value), [N, H, W, 1] with it, whose
  // bytes are the NCHW [N, 1, H, W]'s (a Reshape, a view).
  bool sink_channel_arg_reduce(ir::Node* n) {
    ir::Value* src = nhwc_source(n->input(0));
    ir::Value* y = n->output(0);
    if (!src || !src->type.is_static() || !y || !y->type.is_static() || n->num_outputs() != 1) return false;
    int64_t axis = n->attr_int("axis", 0);
    if (axis < 0) axis += 4;
    if (axis != 1) return false;
    const bool keep = n->attr_int("keepdims", 1) != 0;
    const auto d = n->input(0)->type.static_dims();  // N, C, H, W
    if (!keep) {
      n->set_input(0, src);
      n->attrs["axis"] = ir::Attribute::of_int(3);
      return true;
    }
    if (ir::is_graph_output(g_, y)) return false;
    ir::Attributes a = n->attrs;
    a["axis"] = ir::Attribute::of_int(3);
    ir::Value* reduced = g_.add_value(g_.unique_name(y->name() + "_nhwc"),
                                      ir::TensorType::from_dims(y->type.dtype, {d[0], d[2], d[3], 1}));
    g_.add_node(n->op_type(), {src}, {reduced}, std::move(a), g_.unique_name(n->name()));
    ir::Value* r = g_.add_value(g_.unique_name(y->name()), y->type);
    reshape(reduced, r, n->name());
    g_.replace_all_uses(y, r);
    return true;
  }

  // A Pad with constant amounts (and no axes input) pads the NHWC data with its amounts moved.
  bool sink_pad(ir::Node* n) {
    ir::Value* src = nhwc_source(n->input(0));
    if (!src || g_.opset() < 11 || n->num_inputs() < 2 || n->has_input(3)) return false;
    const Tensor* p = ir::const_of(n->input(1));
    if (!p || p->numel() != 8 || !dtype_is_integer(p->dtype())) return false;
    const std::vector<int64_t> v = p->to_int64_vector();
    std::vector<int64_t> moved(8);
    for (int i = 0; i < 4; ++i) {
      moved[nhwc_axis(i)] = v[i];
      moved[nhwc_axis(i) + 4] = v[i + 4];
    }
    std::vector<ir::Value*> ins = n->inputs();
    ins[0] = src;
    ins[1] = ir::add_const(g_, "layout_pads", Tensor::from_vector<int64_t>({8}, moved));
    replace_with(n, "Pad", ins, n->attrs);
    return true;
  }

  // Resize(T_nchw(a)) with constant scales, sizes and roi, their entries moved with the axes, is
  // T_nchw(Resize(a)): the interpolation is separable, each axis on its own. Sunk where the
  // layout change after it goes away (each reader takes NHWC data: a T_nhwc, or a Concat or
  // elementwise op whose other inputs are NHWC too, which then sinks it further) or is no
  // bigger than the one before it: a T_nchw left after an upsampling moves more bytes.
  bool sink_resize(ir::Node* n) {
    ir::Value* src = nhwc_source(n->input(0));
    ir::Value* y = n->output(0);
    if (!src || !y || n->num_outputs() != 1 || g_.opset() < 11 || !y->type.is_static() || !y->type.rank_known ||
        y->type.rank() != 4)
      return false;
    const ops::ResizeInputSlots slots = ops::resize_slots(*n, g_.opset());
    if (*y->type.static_numel() > *src->type.static_numel() && !readers_take_nhwc(y)) return false;
    const bool listed_axes = n->has_attr("axes");  // entries per listed axis: the axes move instead
    std::vector<ir::Value*> ins = n->inputs();
    ins[0] = src;
    for (int slot : {slots.roi, slots.scales, slots.sizes}) {
      if (slot < 0 || !n->has_input(slot)) continue;
      const Tensor* t = ir::const_of(n->input(slot));
      if (!t) return false;
      if (t->numel() == 0 || listed_axes) continue;
      const int64_t sets = t->numel() / 4;  // roi: starts, then ends
      if (t->rank() != 1 || t->numel() % 4 != 0 || sets > 2) return false;
      Tensor moved(t->dtype(), t->dims());
      const size_t bytes = dtype_size(t->dtype());
      for (int64_t k = 0; k < sets; ++k)
        for (int64_t i = 0; i < 4; ++i)
          std::memcpy(static_cast<char*>(moved.raw()) + (k * 4 + i) * bytes,
                      static_cast<const char*>(t->raw()) + (k * 4 + kToNhwc[i]) * bytes, bytes);
      ins[slot] = ir::add_const(g_, "layout_resize", std::move(moved));
    }
    ir::Attributes a = n->attrs;
    if (listed_axes) {
      std::vector<int64_t> axes = n->attr_ints("axes");
      for (int64_t& ax : axes) {
        if (ax < 0) ax += 4;
        if (ax < 0 || ax > 3) return false;
        ax = nhwc_axis(ax);
      }
      a["axes"] = ir::Attribute::of_ints(axes);
    }
    replace_with(n, "Resize", ins, std::move(a));
    return true;
  }

  // Whether every reader of v (NCHW) would take it as NHWC: a T_nhwc (which cancels), or a
  // Concat or layout-agnostic op whose every other input is an NHWC source or a constant.
  bool readers_take_nhwc(const ir::Value* v) {
    if (v->uses().empty() || ir::is_graph_output(g_, v)) return false;
    for (const ir::Use& u : v->uses()) {
      const ir::Node* r = u.node;
      if (is_transpose(r, kToNhwc)) continue;
      const bool concat = r->domain().empty() && r->op_type() == "Concat";
      if (!concat && !agnostic(*r)) return false;
      for (const ir::Value* in : r->inputs())
        if (in && in != v && !nhwc_source(in) && (concat || !in->is_constant())) return false;
    }
    return true;
  }

  static int64_t nhwc_axis(int64_t nchw_axis) { return nchw_axis == 0 ? 0 : nchw_axis == 1 ? 3 : nchw_axis - 1; }

  // n's NHWC twin on `ins`, each of its outputs followed by a T_nchw that takes over the uses.
  void replace_with(ir::Node* n, const std::string& op, std::vector<ir::Value*> ins, ir::Attributes attrs) {
    std::vector<ir::Value*> outs;
    for (ir::Value* o : n->outputs())
      outs.push_back(o ? g_.add_value(g_.unique_name(o->name() + "_nhwc"), permuted(o->type, kToNhwc)) : nullptr);
    g_.add_node(op, ins, outs, std::move(attrs), g_.unique_name(n->name()), n->domain());
    for (size_t k = 0; k < outs.size(); ++k)
      if (outs[k]) g_.replace_all_uses(n->output(static_cast<int>(k)), transpose(outs[k], kToNchw));
  }

  // A T_nchw of [N, 1, 1, C] only moves size-1 dims: the same bytes, so a Reshape (a view).
  int transposes_to_views() {
    int n_views = 0;
    for (ir::Node* n : g_.nodes()) {
      if (!is_transpose(n, kToNchw) && !is_transpose(n, kToNhwc)) continue;
      const ir::Value* x = n->input(0);
      if (!x->type.rank_known || x->type.rank() != 4 || !x->type.is_static()) continue;
      const auto d = x->type.static_dims();
      const bool to_nchw = is_transpose(n, kToNchw);
      // The moving axis (C going in or out of last place) and the ones it crosses: all but one
      // of them size 1 keeps the element order.
      const bool trivial = to_nchw ? (d[1] == 1 && d[2] == 1) || d[3] == 1 : (d[2] == 1 && d[3] == 1) || d[1] == 1;
      if (!trivial) continue;
      ir::Value* y = n->output(0);
      ir::Value* r = g_.add_value(g_.unique_name(y->name() + "_view"), y->type);
      reshape(n->input(0), r, "layout_view");
      g_.replace_all_uses(y, r);
      ++n_views;
    }
    return n_views;
  }

 private:
  ir::Graph& g_;
  std::map<std::pair<ir::Value*, bool>, ir::Value*> cache_;
};

}  // namespace

int count_transposes(const ir::Graph& g) {
  int n = 0;
  for (const ir::Node* node : g.nodes()) n += node->domain().empty() && node->op_type() == "Transpose";
  return n;
}

LayoutStats assign_channels_last(ir::Graph& g) {
  LayoutStats st;
  std::vector<std::string> names;
  for (const ir::Value* v : g.outputs()) names.push_back(v->name());
  Rewriter rw(g);
  st.channels_last_ops = rw.convert_anchors();
  if (st.channels_last_ops == 0) return st;
  ir::remove_dead_nodes(g);  // the replaced ops: a sink asks who reads a value
  g.topological_sort();
  for (bool changed = true; changed;) {
    changed = false;
    for (ir::Node* n : g.nodes())
      if (rw.sink(n)) changed = true;
    ir::remove_dead_nodes(g);
    g.topological_sort();
  }
  rw.transposes_to_views();
  ir::remove_dead_nodes(g);
  g.topological_sort();
  ir::restore_output_names(g, names);
  st.transposes = count_transposes(g);
  return st;
}

std::unique_ptr<passes::Pass> make_channels_last_pass(LayoutStats* stats) {
  return std::make_unique<passes::FunctionPass>("channels_last", [stats](ir::Graph& g) {
    const LayoutStats st = assign_channels_last(g);
    stats->channels_last_ops = st.channels_last_ops;
    stats->transposes = st.transposes;
    return st.channels_last_ops > 0;
  });
}

}  // namespace kiln::lower
