// MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool and their channels-last kiln forms
// (kiln.Nhwc*) on oneDNN's pooling primitive: 2-D float32, strides, pads/auto_pad, dilations
// (max only), ceil_mode as extra right padding. Activations are used in place in their own
// layout (NCHW or NHWC); declined forms (indices output, 1-D/3-D, ceil_mode averages that count
// padding) run on the reference kernels.
#include <memory>

#include "backends/cpu/kernels.h"
#include "backends/cpu/onednn_common.h"
#include "ops/core/conv_geometry.h"

namespace kiln::backends::cpu {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

class PoolKernel : public Kernel {
 public:
  PoolKernel(dnnl::pooling_v2_forward::primitive_desc pd, memory::desc src, memory::desc dst)
      : pd_(pd), prim_(pd), src_(src), dst_(dst) {}

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    auto& eng = dnnl_util::engine();
    dnnl::stream s(eng);
    memory src(src_, eng, const_cast<void*>(inputs[0]->raw()));
    memory dst(dst_, eng, outputs[0]->raw());
    memory scratchpad(pd_.scratchpad_desc(), eng, dnnl_util::scratch(pd_.scratchpad_desc().get_size()));
    prim_.execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCRATCHPAD, scratchpad}});
    s.wait();
  }

 private:
  dnnl::pooling_v2_forward::primitive_desc pd_;
  dnnl::pooling_v2_forward prim_;
  memory::desc src_, dst_;
};

std::unique_ptr<Kernel> make_pool(const ir::Node& node, int) {
  std::string op = node.op_type();
  const bool nhwc = node.domain() == "kiln";
  if (nhwc) op = op.substr(4);  // "NhwcMaxPool" -> "MaxPool"
  if (node.num_inputs() != 1 || node.num_outputs() != 1) return nullptr;
  const ir::Value* x = node.input(0);
  const ir::Value* y = node.output(0);
  if (!dnnl_util::static_float(x) || !dnnl_util::static_float(y)) return nullptr;
  auto xd = x->type.static_dims(), yd = y->type.static_dims();
  if (xd.size() != 4 || yd.size() != 4) return nullptr;
  if (nhwc) {
    xd = {xd[0], xd[3], xd[1], xd[2]};
    yd = {yd[0], yd[3], yd[1], yd[2]};
  }
  const int64_t H = xd[2], W = xd[3];
  const bool global = op.rfind("Global", 0) == 0;
  const bool is_max = op == "MaxPool" || op == "GlobalMaxPool";
  std::vector<int64_t> k{H, W}, strides{1, 1}, dil{1, 1}, pads{0, 0, 0, 0};
  dnnl::algorithm alg = is_max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_exclude_padding;
  if (!global) {
    k = node.attr_ints("kernel_shape");
    strides = node.attr_ints("strides", {1, 1});
    dil = node.attr_ints("dilations", {1, 1});
    pads = node.attr_ints("pads", {0, 0, 0, 0});
    if (k.size() != 2 || strides.size() != 2 || dil.size() != 2 || pads.size() != 4) return nullptr;
    if (!is_max && (dil[0] != 1 || dil[1] != 1)) return nullptr;
    if (!is_max && node.attr_int("count_include_pad", 0)) alg = dnnl::algorithm::pooling_avg_include_padding;
    const std::optional<ops::AutoPad> auto_pad = ops::auto_pad_of(node);
    if (!auto_pad) return nullptr;
    const int64_t in[2] = {H, W};
    ops::resolve_pads(*auto_pad, in, k, strides, dil, pads);
    // ceil_mode (or SAME padding) may make the output longer than oneDNN's floor formula
    // gives: pad the right edge until it matches. Max pooling ignores padding; an average that
    // counts padding would count those cells, so decline it.
    for (int i = 0; i < 2; ++i) {
      if (strides[i] < 1 || dil[i] < 1 || k[i] < 1) return nullptr;
      const int64_t keff = (k[i] - 1) * dil[i] + 1;
      auto out_of = [&](int64_t pr) { return (in[i] + pads[i] + pr - keff) / strides[i] + 1; };
      if (out_of(pads[i + 2]) != yd[2 + i]) {
        const int64_t need = (yd[2 + i] - 1) * strides[i] + keff - in[i] - pads[i];
        if (need < pads[i + 2] || out_of(need) != yd[2 + i]) return nullptr;
        if (alg == dnnl::algorithm::pooling_avg_include_padding) return nullptr;
        pads[i + 2] = need;
      }
      // A window starting wholly inside the right padding would average nothing.
      if ((yd[2 + i] - 1) * strides[i] >= in[i] + pads[i]) return nullptr;
    }
  } else if (yd[2] != 1 || yd[3] != 1) {
    return nullptr;
  }
  try {
    const tag t = nhwc ? tag::nhwc : tag::nchw;
    memory::desc src({xd[0], xd[1], H, W}, dt::f32, t);
    memory::desc dst({yd[0], yd[1], yd[2], yd[3]}, dt::f32, t);
    dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, alg, src, dst, {strides[0], strides[1]},
                                     {k[0], k[1]}, {dil[0] - 1, dil[1] - 1}, {pads[0], pads[1]},
                                     {pads[2], pads[3]});
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
