#include "backends/cpu/row_conv.h"

#include "backends/cpu/onednn_common.h"
#include "backends/cpu/pointwise_conv.h"
#include "backends/cpu/simd.h"
#include "ops/core/conv_geometry.h"

namespace kiln::backends::cpu {

std::optional<RowConvGeometry> row_conv_geometry(const ir::Node& node, bool dilated_ok) {
  if (node.domain() != "kiln" || node.op_type() != "FusedConv" || !node.attr_int("channels_last", 0)) return {};
  if (node.num_inputs() < 2 || node.num_outputs() != 1) return {};
  for (int i = 3; i < node.num_inputs(); ++i)  // a residual Z or channel scale S
    if (node.input(i)) return {};
  if (node.attr_int("x_blocked", 0) || node.attr_int("y_blocked", 0)) return {};
  const ir::Value *x = node.input(0), *w = node.input(1), *b = node.input(2), *y = node.output(0);
  if (!dnnl_util::static_float(x) || !dnnl_util::static_float(w) || !dnnl_util::static_float(y)) return {};
  if (!w->is_constant() || (b && (!b->is_constant() || !dnnl_util::static_float(b)))) return {};
  if (ops::auto_pad_of(node) != ops::AutoPad::NotSet) return {};
  const std::vector<int64_t> dil = node.attr_ints("dilations", {1, 1});
  if (dil.size() != 2 || dil[0] < 1 || dil[1] < 1 || (!dilated_ok && dil != std::vector<int64_t>{1, 1})) return {};
  const auto xd = x->type.static_dims(), wd = w->type.static_dims(), yd = y->type.static_dims();
  if (xd.size() != 4 || wd.size() != 4 || yd.size() != 4 || xd[0] != yd[0]) return {};
  RowConvGeometry g;
  g.H = xd[1], g.W = xd[2], g.C = xd[3], g.OH = yd[1], g.OW = yd[2], g.OC = yd[3], g.KH = wd[2], g.KW = wd[3];
  g.G = node.attr_int("group", 1);
  if (wd[0] != g.OC || (b && b->type.static_dims() != std::vector<int64_t>{g.OC})) return {};
  const auto st = node.attr_ints("strides", {1, 1}), pads = node.attr_ints("pads", {0, 0, 0, 0});
  if (st.size() != 2 || pads.size() != 4 || st[0] < 1 || st[1] < 1) return {};
  for (int64_t p : pads)
    if (p < 0) return {};
  g.SH = st[0], g.SW = st[1], g.PT = pads[0], g.PL = pads[1], g.DH = dil[0], g.DW = dil[1];
  const int64_t span_h = (g.KH - 1) * g.DH + 1, span_w = (g.KW - 1) * g.DW + 1;  // input rows, columns a tap set spans
  if (g.KH < 1 || g.KW < 1 || g.H + pads[0] + pads[2] < span_h || g.W + pads[1] + pads[3] < span_w ||
      (g.H + pads[0] + pads[2] - span_h) / g.SH + 1 != g.OH || (g.W + pads[1] + pads[3] - span_w) / g.SW + 1 != g.OW)
    return {};
  return g;
}

std::string row_conv_split(const ir::Node& node, int threads, bool act_in_registers) {
  if (threads < 2 || !has_avx512() || !act_in_registers) return "rows";
  // The producer's split as kiln_pointwise's rule makes it (a plan tuned otherwise may differ;
  // then only the cores' traffic is what a row split would have had).
  const ir::Node* p = node.input(0) ? node.input(0)->producer() : nullptr;
  const std::optional<PointwiseConvShape> ps = p ? pointwise_conv_shape(*p) : std::nullopt;
  if (!ps || (p->num_inputs() > 4 && p->input(4))) return "rows";
  return pointwise_rule(ps->K, ps->N, threads, kSplitOutputsMinWeightBytes, pointwise_split_rows(*p, ps->N)).split_outputs
             ? "channels"
             : "rows";
}

}  // namespace kiln::backends::cpu
