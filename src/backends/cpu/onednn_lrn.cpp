// LRN (across channels, float32, 1-3 spatial dims) on oneDNN's LRN primitive: y = x / (bias +
// alpha / size * the sum of squares over the channel window)^beta. Odd sizes only (AlexNet's and
// GoogLeNet's 5): for an even size ONNX's window reaches one channel further up than down, and
// oneDNN's the other way (those run on kiln's loops, lrn.cpp). Channels-first activations of 16 channels and up run in oneDNN's
// blocked layout, reordered in and out (onednn_reordered.h).
#include <memory>

#include "backends/cpu/kernels.h"
#include "backends/cpu/onednn_common.h"
#include "backends/cpu/onednn_reordered.h"

namespace kiln::backends::cpu {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

std::unique_ptr<Kernel> make_lrn(const ir::Node& node, int) {
  if (node.num_inputs() != 1 || node.num_outputs() != 1) return nullptr;
  const ir::Value* x = node.input(0);
  if (!dnnl_util::static_float(x) || !dnnl_util::static_float(node.output(0))) return nullptr;
  const std::vector<int64_t> d = x->type.static_dims();
  if (d.size() < 3 || d.size() > 5 || node.output(0)->type.static_dims() != d) return nullptr;
  const int64_t size = node.attr_int("size", 0);
  if (size < 1 || size % 2 == 0) return nullptr;
  const size_t nsp = d.size() - 2;
  try {
    const tag plain = nsp == 1 ? tag::ncw : nsp == 2 ? tag::nchw : tag::ncdhw;
    const memory::desc user(d, dt::f32, plain);
    const memory::desc data = d[1] >= 16 ? memory::desc(d, dt::f32, blocked16(nsp)) : user;
    dnnl::lrn_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::lrn_across_channels, data, size,
                                 node.attr_float("alpha", 1e-4f), node.attr_float("beta", 0.75f),
                                 node.attr_float("bias", 1.f));
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::lrn_forward::primitive_desc pd(desc, attr, dnnl_util::engine());
    return std::make_unique<ReorderedKernel<dnnl::lrn_forward>>(pd, user, user);
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

}  // namespace

void add_onednn_lrn_kernels(std::vector<KernelFactory>& table) { table.push_back({"", "LRN", make_lrn, "onednn"}); }

}  // namespace kiln::backends::cpu
