// MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool and their channels-last kiln forms
// (kiln.Nhwc*) on oneDNN's pooling primitive: 1-D, 2-D and 3-D float32, strides, pads/auto_pad,
// dilations (max only), ceil_mode as extra right padding. Activations are used in place in their
// own layout (NCL, NCHW, NHWC or NCDHW); declined forms (indices output, ceil_mode averages that
// count padding) run on the reference kernels.
#include <algorithm>
#include <memory>

#include "backends/cpu/kernels.h"
#include "backends/cpu/onednn_common.h"
#include "backends/cpu/onednn_reordered.h"
#include "ops/core/conv_geometry.h"

namespace kiln::backends::cpu {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

using PoolKernel = ReorderedKernel<dnnl::pooling_v2_forward>;

std::unique_ptr<Kernel> make_pool(const ir::Node& node, int) {
  std::string op = node.op_type();
  const bool nhwc = node.domain() == "kiln";
  if (nhwc) op = op.substr(4);  // "NhwcMaxPool" -> "MaxPool"
  if (node.num_inputs() != 1 || node.num_outputs() != 1) return nullptr;
  const ir::Value* x = node.input(0);
  const ir::Value* y = node.output(0);
  if (!dnnl_util::static_float(x) || !dnnl_util::static_float(y)) return nullptr;
  auto xd = x->type.static_dims(), yd = y->type.static_dims();
  // 1-D, 2-D or 3-D: NCL, NCHW or NCDHW (channels-last is 2-D only).
  if (xd.size() < 3 || xd.size() > 5 || yd.size() != xd.size() || (nhwc && xd.size() != 4)) return nullptr;
  const size_t nsp = xd.size() - 2;
  if (nhwc) {
    xd = {xd[0], xd[3], xd[1], xd[2]};
    yd = {yd[0], yd[3], yd[1], yd[2]};
  }
  const std::vector<int64_t> in(xd.begin() + 2, xd.end());
  const bool global = op.rfind("Global", 0) == 0;
  const bool is_max = op == "MaxPool" || op == "GlobalMaxPool";
  std::vector<int64_t> k = in, strides(nsp, 1), dil(nsp, 1), pads(2 * nsp, 0);
  dnnl::algorithm alg = is_max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_exclude_padding;
  if (!global) {
    k = node.attr_ints("kernel_shape");
    strides = node.attr_ints("strides", strides);
    dil = node.attr_ints("dilations", dil);
    pads = node.attr_ints("pads", pads);
    if (k.size() != nsp || strides.size() != nsp || dil.size() != nsp || pads.size() != 2 * nsp) return nullptr;
    if (!is_max && std::any_of(dil.begin(), dil.end(), [](int64_t d) { return d != 1; })) return nullptr;
    if (!is_max && node.attr_int("count_include_pad", 0)) alg = dnnl::algorithm::pooling_avg_include_padding;
    const std::optional<ops::AutoPad> auto_pad = ops::auto_pad_of(node);
    if (!auto_pad) return nullptr;
    ops::resolve_pads(*auto_pad, in, k, strides, dil, pads);
    // ceil_mode (or SAME padding) may make the output longer than oneDNN's floor formula
    // gives: pad the right edge until it matches. Max pooling ignores padding; an average that
    // counts padding would count those cells, so decline it.
    for (size_t i = 0; i < nsp; ++i) {
      if (strides[i] < 1 || dil[i] < 1 || k[i] < 1) return nullptr;
      const int64_t keff = (k[i] - 1) * dil[i] + 1;
      auto out_of = [&](int64_t pr) { return (in[i] + pads[i] + pr - keff) / strides[i] + 1; };
      if (out_of(pads[i + nsp]) != yd[2 + i]) {
        const int64_t need = (yd[2 + i] - 1) * strides[i] + keff - in[i] - pads[i];
        if (need < pads[i + nsp] || out_of(need) != yd[2 + i]) return nullptr;
        if (alg == dnnl::algorithm::pooling_avg_include_padding) return nullptr;
        pads[i + nsp] = need;
      }
      // A window starting wholly inside the right padding would average nothing.
      if ((yd[2 + i] - 1) * strides[i] >= in[i] + pads[i]) return nullptr;
    }
  } else if (std::any_of(yd.begin() + 2, yd.end(), [](int64_t d) { return d != 1; })) {
    return nullptr;
  }
  try {
    const tag t = nhwc ? tag::nhwc : nsp == 1 ? tag::ncw : nsp == 2 ? tag::nchw : tag::ncdhw;
    memory::desc src(xd, dt::f32, t);
    memory::desc dst(yd, dt::f32, t);
    // Channels-first with at least a block of channels: pooled in the blocked layout.
    const tag blocked = blocked16(nsp);
    const bool reorder = !nhwc && xd[1] >= 16;
    memory::desc pool_src = reorder ? memory::desc(xd, dt::f32, blocked) : src;
    memory::desc pool_dst = reorder ? memory::desc(yd, dt::f32, blocked) : dst;
    memory::dims dl;
    for (int64_t d : dil) dl.push_back(d - 1);
    dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, alg, pool_src, pool_dst, strides, k, dl,
                                     memory::dims(pads.begin(), pads.begin() + nsp), memory::dims(pads.begin() + nsp, pads.end()));
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::pooling_v2_forward::primitive_desc pd(d, attr, dnnl_util::engine());
    return std::make_unique<PoolKernel>(pd, src, dst);
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

}  // namespace

void add_onednn_pool_kernels(std::vector<KernelFactory>& table) {
  for (const char* op : {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"}) {
    table.push_back({"", op, make_pool, "onednn"});
    table.push_back({"kiln", std::string("Nhwc") + op, make_pool, "onednn"});
  }
}

}  // namespace kiln::backends::cpu
