// Conv, kiln's FusedConv and ConvTranspose on oneDNN: 1-D, 2-D and 3-D float32, groups (depthwise too), strides,
// dilations, explicit or auto pads, optional bias, a residual Z as oneDNN's sum post-op (Z is
// copied into the destination first), activation epilogues as eltwise post-ops. Weights are
// reordered once, at creation, into the layout the primitive prefers. Channels-last FusedConv
// (the layout assignment's choice, src/lower/layout_assignment.cpp) runs on NHWC activations
// directly, which oneDNN's brgconv prefers anyway; NCHW tensors are reordered inside run() when
// the primitive wants another layout.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "backends/cpu/activation_apply.h"
#include "backends/cpu/background_builds.h"
#include "backends/packed_weights.h"
#include "backends/cpu/blocked_reorder.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/onednn_common.h"
#include "backends/cpu/onednn_conv.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/pointwise_conv.h"
#include "backends/cpu/simd.h"
#include "backends/cpu/winograd_conv.h"
#include "ops/core/conv_geometry.h"

namespace kiln::backends::cpu {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

bool is_nchw16c(const memory::desc& md) {
  return md.dims().size() == 4 && md == memory::desc(md.dims(), dt::f32, tag::nChw16c);
}

// The pixel stride in floats of an f32 NHWC descriptor (a channel slice of a wider tensor
// included), or 0 when `md` is something else.
int64_t nhwc_ld(const memory::desc& md) {
  const memory::dims d = md.dims();
  if (d.size() != 4 || md.data_type() != dt::f32 || md.data.format_kind != dnnl_blocked ||
      md.data.format_desc.blocking.inner_nblks != 0)
    return 0;
  const dnnl_dims_t& st = md.data.format_desc.blocking.strides;
  const int64_t ld = st[3];
  if (st[1] != 1 || ld < d[1] || st[2] != d[3] * ld || st[0] != d[2] * d[3] * ld) return 0;
  return ld;
}

// Weights a FusedConv with a channel scale S (input 4) computes in each run: the prepacked
// weights, each element times S at its input channel. `channel` maps each float of the packed
// layout to its input channel (found at creation by packing a tensor of channel numbers;
// padding holds zero weights, so any channel serves), so no reorder runs per run: per element,
// oneDNN's plain-to-packed reorder costs several times a Mul over the activation.
struct ScaledWeights {
  dnnl_util::PackedConstant packed;
  std::vector<int32_t> channel;
};

KILN_SIMD void scale_by_channel(const float* w, const int32_t* channel, const float* scale, float* out, int64_t n) {
  for (int64_t j = 0; j < n; ++j) out[j] = w[j] * scale[channel[j]];
}

// One oneDNN convolution or deconvolution (the same run(): user tensors in their plain layout,
// reordered to and from the primitive's where they differ).
template <typename Primitive>
class ConvKernel : public Kernel {
 public:
  // `post` is an activation applied by kiln after the primitive (see late_activation()).
  // `z_plain`: the residual's layout, when it has one of its own (else Y's).
  ConvKernel(typename Primitive::primitive_desc pd, memory::desc src_plain, memory::desc dst_plain,
             dnnl_util::PackedConstant weights, dnnl_util::PackedConstant bias, bool has_z,
             ops::Activation post = {ops::Activation::None}, int threads = 1, memory::desc z_plain = {},
             std::shared_ptr<const ScaledWeights> scaled = nullptr)
      : pd_(pd), prim_(pd), src_plain_(src_plain), dst_plain_(dst_plain),
        z_plain_(z_plain.is_zero() ? dst_plain : z_plain), weights_(weights), bias_(bias), has_z_(has_z), post_(post),
        threads_(threads), scaled_(std::move(scaled)) {
    auto& eng = dnnl_util::engine();
    if (pd.src_desc() != src_plain) src_reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(eng, src_plain, eng, pd.src_desc()));
    if (pd.dst_desc() != dst_plain)
      dst_reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(eng, pd.dst_desc(), eng, dst_plain));
    // Z goes where the primitive's destination is: its own buffer, or the user's output.
    const memory::desc& z_to = dst_reorder_ ? pd.dst_desc() : dst_plain;
    if (has_z && z_plain_ != z_to) z_reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(eng, z_plain_, eng, z_to));
    // With more than one thread, NHWC <-> nChw16c runs on kiln's split copy (blocked_reorder.h):
    // oneDNN's reorder would be a single-threaded step of every Winograd conv. At 1 thread
    // oneDNN's reorder is the faster.
    // So does a dense NHWC destination copied into a channel slice (ConvConcat).
    if (threads_ > 1) {
      if (src_reorder_ && is_nchw16c(pd.src_desc())) src_ld_ = nhwc_ld(src_plain_);
      if (dst_reorder_ && is_nchw16c(pd.dst_desc())) {
        dst_ld_ = nhwc_ld(dst_plain_);
        if (z_reorder_) z_ld_ = nhwc_ld(z_plain_);
      } else if (dst_reorder_ && nhwc_ld(pd.dst_desc()) > 0) {
        dst_slice_ld_ = nhwc_ld(dst_plain_);
      }
    }
    const dnnl_memory_desc_t &sd = pd.src_desc().data, &dd = pd.dst_desc().data;
    std::copy(sd.dims, sd.dims + std::min(sd.ndims, 4), src_dims_);
    std::copy(dd.dims, dd.dims + std::min(dd.ndims, 4), dst_dims_);
  }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    auto& eng = dnnl_util::engine();
    dnnl::stream s(eng);
    memory src_user(src_plain_, eng, const_cast<void*>(inputs[0]->raw()));
    memory dst_user(dst_plain_, eng, outputs[0]->raw());
    // Blocked activations live in one per-thread buffer with the scratchpad after them.
    const size_t src_b = src_reorder_ ? (pd_.src_desc().get_size() + 63) / 64 * 64 : 0;
    const size_t dst_b = dst_reorder_ ? (pd_.dst_desc().get_size() + 63) / 64 * 64 : 0;
    const size_t scr_b = (pd_.scratchpad_desc().get_size() + 63) / 64 * 64;
    const size_t w_b = scaled_ ? pd_.weights_desc().get_size() : 0;
    char* buf = static_cast<char*>(dnnl_util::scratch(src_b + dst_b + scr_b + w_b));
    memory weights = weights_.mem;
    if (scaled_) weights = scale_weights(*inputs[4], buf + src_b + dst_b + scr_b);
    memory src = src_user, dst = dst_user;
    const int64_t *sd = src_dims_, *dd = dst_dims_;
    if (src_reorder_) {
      src = memory(pd_.src_desc(), eng, buf);
      if (src_ld_) nhwc_to_blocked16(static_cast<const float*>(inputs[0]->raw()), reinterpret_cast<float*>(buf), sd[0],
                                     sd[1], sd[2], sd[3], src_ld_, threads_);
      else src_reorder_.execute(s, src_user, src);
    }
    if (dst_reorder_) dst = memory(pd_.dst_desc(), eng, buf + src_b);
    if (has_z_) {
      // The sum post-op adds the destination's prior contents: put Z there.
      const Tensor& z = *inputs[3];
      memory z_user(z_plain_, eng, const_cast<void*>(z.raw()));
      if (z_reorder_ && !dst_reorder_ && z.raw() == outputs[0]->raw()) {
        // Z shares the output's memory in another layout (kiln's planner never does this to a
        // conv today): reorder from a copy.
        std::vector<char> copy(z.nbytes());
        std::memcpy(copy.data(), z.raw(), z.nbytes());
        memory z_copy(z_plain_, eng, copy.data());
        z_reorder_.execute(s, z_copy, dst);
      } else if (z_ld_) {
        nhwc_to_blocked16(static_cast<const float*>(z.raw()), static_cast<float*>(dst.get_data_handle()), dd[0], dd[1],
                          dd[2], dd[3], z_ld_, threads_);
      } else if (z_reorder_) {
        z_reorder_.execute(s, z_user, dst);
      } else if (z.raw() != dst.get_data_handle()) {
        std::memcpy(dst.get_data_handle(), z.raw(), z.nbytes());
      }
    }
    memory scratchpad(pd_.scratchpad_desc(), eng, buf + src_b + dst_b);
    std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights},
                                            {DNNL_ARG_DST, dst}, {DNNL_ARG_SCRATCHPAD, scratchpad}};
    if (bias_) args[DNNL_ARG_BIAS] = bias_.mem;
    prim_.execute(s, args);
    if (dst_ld_) {
      s.wait();
      blocked16_to_nhwc(static_cast<const float*>(dst.get_data_handle()), static_cast<float*>(outputs[0]->raw()), dd[0],
                        dd[1], dd[2], dd[3], dst_ld_, threads_);
    } else if (dst_slice_ld_) {
      s.wait();
      nhwc_to_slice(static_cast<const float*>(dst.get_data_handle()), static_cast<float*>(outputs[0]->raw()),
                    dd[0] * dd[2] * dd[3], dd[1], dst_slice_ld_, threads_);
    } else if (dst_reorder_) {
      dst_reorder_.execute(s, dst, dst_user);
    }
    s.wait();
    apply_activation_parallel(post_, static_cast<float*>(outputs[0]->raw()), outputs[0]->numel(), threads_);
  }

 private:
  // The packed weights times the channel scale `sc`, written at `at`.
  memory scale_weights(const Tensor& sc, char* at) const {
    const ScaledWeights& sw = *scaled_;
    scale_by_channel(static_cast<const float*>(sw.packed.mem.get_data_handle()), sw.channel.data(), sc.data<float>(),
                     reinterpret_cast<float*>(at), static_cast<int64_t>(sw.channel.size()));
    return memory(pd_.weights_desc(), dnnl_util::engine(), at);
  }

  typename Primitive::primitive_desc pd_;
  Primitive prim_;
  memory::desc src_plain_, dst_plain_, z_plain_;
  dnnl_util::PackedConstant weights_, bias_;
  bool has_z_;
  ops::Activation post_;
  int threads_;
  dnnl::reorder src_reorder_, dst_reorder_, z_reorder_;
  // > 0: that end is NHWC with this pixel stride and kiln reorders it (blocked_reorder.h):
  // from/to nChw16c, or (dst_slice_ld_) a dense NHWC result into a channel slice.
  int64_t src_ld_ = 0, dst_ld_ = 0, z_ld_ = 0, dst_slice_ld_ = 0;
  int64_t src_dims_[4] = {}, dst_dims_[4] = {};  // the primitive's, NCHW order
  std::shared_ptr<const ScaledWeights> scaled_;
};

// A constant input in `want`'s layout, reordered once from the plain `have` layout.
dnnl_util::PackedConstant prepack(const Tensor& t, const memory::desc& have, const memory::desc& want) {
  return dnnl_util::pack_constant(t.raw(), have, want);
}

// Runs `first` until a background thread has built the better kernel, then that one. oneDNN
// 2.6 transforms Winograd weights slowly (tens of milliseconds per conv from 256x256x3x3 up, on
// one thread, where the direct conv's weights reorder in a few), so building them eagerly would
// multiply the session creation time of a model like resnet18. The build runs
// on the process's background build thread (background_builds.h) and holds its own handles on
// what it needs (the weights' buffer, descriptors), never a reference into the graph.
class TieredKernel : public Kernel {
 public:
  TieredKernel(std::unique_ptr<Kernel> first, std::function<std::unique_ptr<Kernel>()> build)
      : current_(std::move(first)) {
    upgrade_ = run_in_background([this, build = std::move(build)] {
      try {
        if (std::shared_ptr<const Kernel> better = build()) {
          std::lock_guard<std::mutex> lock(mu_);
          current_ = std::move(better);
        }
      } catch (...) {  // keep the first kernel
      }
    });
  }
  ~TieredKernel() override { wait_ready(); }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    // A copy of the pointer keeps a replaced kernel alive until its run returns. A mutex, not
    // std::atomic<std::shared_ptr>: libstdc++ 12's lock bit is invisible to ThreadSanitizer,
    // and one uncontended lock per conv costs nothing measurable.
    std::shared_ptr<const Kernel> k;
    {
      std::lock_guard<std::mutex> lock(mu_);
      k = current_;
    }
    k->run(inputs, outputs);
  }

  void wait_ready() const override {
    if (upgrade_.valid()) upgrade_.wait();
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const Kernel> current_;
  std::future<void> upgrade_;
};

// `alt` picks the other activation layout: NCHW convs then use plain NCHW (no reorders), NHWC
// convs let oneDNN choose (reordering inside run()); kernel selection times both under --tune.
// `winograd` asks for oneDNN's Winograd algorithm (3x3, stride 1, groups 1: about 2.25x fewer
// multiplies, blocked activations reordered inside run()). `dst_row_channels` > 0 makes the
// output a channel slice of a wider NHWC tensor with that many channels per pixel (ConvConcat):
// the primitive writes its own layout and run() reorders into the slice, since oneDNN 2.6's
// direct convs given a strided destination are its reference implementation.
std::unique_ptr<Kernel> make_conv(const ir::Node& node, bool alt, bool winograd = false, int threads = 1,
                                  int64_t dst_row_channels = 0) {
  if (node.num_inputs() < 2 || node.num_outputs() < 1) return nullptr;
  const ir::Value* x = node.input(0);
  const ir::Value* w = node.input(1);
  const ir::Value* b = node.input(2);
  const ir::Value* y = node.output(0);
  if (!dnnl_util::static_float(x) || !dnnl_util::static_float(w) || !dnnl_util::static_float(y)) return nullptr;
  if (!w->is_constant() || (b && (!b->is_constant() || !dnnl_util::static_float(b)))) return nullptr;
  const bool nhwc = node.attr_int("channels_last", 0) != 0;
  const ir::Value* z = node.input(3);
  if (z && (!dnnl_util::static_float(z) || z->type.static_dims() != y->type.static_dims())) return nullptr;
  // A channel scale S: the weights are scaled in each run (the Winograd transform would be
  // too slow for that), one scale for the whole batch.
  const ir::Value* scale = node.input(4);
  if (scale && (!nhwc || winograd || node.attr_int("group", 1) != 1 || !dnnl_util::static_float(scale) || x->type.rank() != 4 ||
                scale->type.static_dims() != std::vector<int64_t>{1, 1, 1, x->type.static_dims()[3]}))
    return nullptr;
  auto xd = x->type.static_dims(), yd = y->type.static_dims();
  const auto wd = w->type.static_dims();
  // 1-D, 2-D or 3-D: NCL, NCHW or NCDHW (channels-last and what builds on it are 2-D only).
  if (xd.size() < 3 || xd.size() > 5 || wd.size() != xd.size() || yd.size() != xd.size()) return nullptr;
  const size_t nsp = xd.size() - 2;
  if (nsp != 2 && (nhwc || scale || winograd || dst_row_channels > 0)) return nullptr;
  if (nhwc) {  // the rest of this function reads NCHW dims
    xd = {xd[0], xd[3], xd[1], xd[2]};
    yd = {yd[0], yd[3], yd[1], yd[2]};
  }
  const int64_t G = node.attr_int("group", 1);
  const int64_t N = xd[0], C = xd[1], OC = wd[0];
  const int64_t KH = nsp == 2 ? wd[2] : 0, KW = nsp == 2 ? wd[3] : 0;  // the 2-D forms' kernel
  if (G < 1 || C % G || OC % G || wd[1] != C / G || yd[0] != N || yd[1] != OC) return nullptr;
  if (b && (b->type.static_dims() != std::vector<int64_t>{OC})) return nullptr;
  const std::vector<int64_t> in(xd.begin() + 2, xd.end()), k(wd.begin() + 2, wd.end());
  const auto ks = node.attr_ints("kernel_shape");
  if (!ks.empty() && ks != k) return nullptr;
  auto strides = node.attr_ints("strides", std::vector<int64_t>(nsp, 1));
  auto dil = node.attr_ints("dilations", std::vector<int64_t>(nsp, 1));
  auto pads = node.attr_ints("pads", std::vector<int64_t>(2 * nsp, 0));
  if (strides.size() != nsp || dil.size() != nsp || pads.size() != 2 * nsp) return nullptr;
  const std::optional<ops::AutoPad> auto_pad = ops::auto_pad_of(node);
  if (!auto_pad) return nullptr;
  ops::resolve_pads(*auto_pad, in, k, strides, dil, pads);
  for (size_t i = 0; i < nsp; ++i) {
    if (strides[i] < 1 || dil[i] < 1) return nullptr;
    const int64_t out = (in[i] + pads[i] + pads[i + nsp] - ((k[i] - 1) * dil[i] + 1)) / strides[i] + 1;
    if (out != yd[2 + i]) return nullptr;
  }

  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  ops::Activation post{ops::Activation::None};
  if (node.domain() == "kiln") {
    dnnl::post_ops po;
    if (z) po.append_sum(1.f);
    if (dnnl_util::late_activation(node)) post = ops::activation_of(node);
    else if (!dnnl_util::append_activation(node, po)) return nullptr;
    attr.set_post_ops(po);
  }
  try {
    // The user's activations: NCHW, NHWC, or nChw16c under an NHWC type where the blocked
    // layout pass (src/lower/blocked_layout.cpp) says so; Z is in Y's layout.
    const tag act_tag = nhwc ? tag::nhwc : nsp == 1 ? tag::ncw : nsp == 2 ? tag::nchw : tag::ncdhw;
    const bool x_blocked = nhwc && node.attr_int("x_blocked", 0), y_blocked = nhwc && node.attr_int("y_blocked", 0);
    if ((x_blocked && C % 16) || (y_blocked && OC % 16)) return nullptr;  // inference rejects these too
    memory::desc src_plain(xd, dt::f32, x_blocked ? tag::nChw16c : act_tag);
    memory::desc dst_plain(yd, dt::f32, y_blocked ? tag::nChw16c : act_tag);
    const memory::desc dst_dense = dst_plain;
    if (dst_row_channels > 0) {
      // Late activations run over the output as one dense block; a residual would be read
      // from the slice: neither is a slice writer (fuse_conv_concat.cpp keeps them out).
      if (!nhwc || y_blocked || z || dnnl_util::late_activation(node) || dst_row_channels < OC) return nullptr;
      const int64_t OH = yd[2], OW = yd[3];
      dst_plain = memory::desc({N, OC, OH, OW}, dt::f32, memory::dims{OH * OW * dst_row_channels, 1, OW * dst_row_channels,
                                                                    dst_row_channels});
    }
    const bool z_blocked = nhwc && node.attr_int("z_blocked", 0);
    if (z_blocked && OC % 16) return nullptr;
    memory::desc z_plain(yd, dt::f32, z_blocked ? tag::nChw16c : act_tag);
    memory::dims wdims = G == 1 ? memory::dims{OC, C} : memory::dims{G, OC / G, C / G};
    wdims.insert(wdims.end(), k.begin(), k.end());
    static constexpr tag kWeightTags[2][3] = {{tag::oiw, tag::oihw, tag::oidhw}, {tag::goiw, tag::goihw, tag::goidhw}};
    memory::desc w_plain(wdims, dt::f32, kWeightTags[G == 1 ? 0 : 1][nsp - 1]);
    memory::desc w_any(wdims, dt::f32, tag::any);
    memory::desc b_md({OC}, dt::f32, tag::x);
    memory::desc src_any(xd, dt::f32, tag::any);
    memory::desc dst_any(yd, dt::f32, tag::any);
    // A direct conv given a blocked end lets oneDNN choose both (its NHWC kernels with one
    // blocked end would be the reference implementation).
    const bool plain = winograd || x_blocked != y_blocked ? false : nhwc ? !alt : alt;
    if (winograd && (G != 1 || KH != 3 || KW != 3 || strides[0] != 1 || strides[1] != 1 || dil[0] != 1 || dil[1] != 1))
      return nullptr;
    if (winograd && (C < kOnednnWinogradMinChannels || !winograd_pays(node))) return nullptr;
    const auto algo = winograd ? dnnl::algorithm::convolution_winograd : dnnl::algorithm::convolution_direct;
    memory::dims st(strides.begin(), strides.end()), dl, pl(pads.begin(), pads.begin() + nsp), pr(pads.begin() + nsp, pads.end());
    for (int64_t d : dil) dl.push_back(d - 1);
    auto desc = b ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                    algo, plain ? src_plain : src_any,
                                                    w_any, b_md, plain ? dst_dense : dst_any, st, dl, pl, pr)
                  : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                                    algo, plain ? src_plain : src_any,
                                                    w_any, plain ? dst_dense : dst_any, st, dl, pl, pr);
    dnnl::convolution_forward::primitive_desc pd(desc, attr, dnnl_util::engine());
    dnnl_util::PackedConstant bias;
    if (b) bias = prepack(b->constant(), b_md, pd.bias_desc());
    // Winograd weights of 256x256x3x3 and up are transformed in the background (TieredKernel)
    // while the direct conv runs; smaller ones take a few ms.
    // Eager inside a packing scope (backends/packed_weights.h), where the weights are recorded
    // or stored ones replayed.
    if (winograd && OC * C * 9 > (int64_t{1} << 19) && !packing_in_scope()) {
      if (auto direct = make_conv(node, false, false, threads, dst_row_channels)) {
        const Tensor w_copy = w->constant();  // a handle on the constant's buffer, not a copy
        const bool has_z = z != nullptr;
        return std::make_unique<TieredKernel>(std::move(direct), [=]() -> std::unique_ptr<Kernel> {
          dnnl_util::PackedConstant weights = prepack(w_copy, w_plain, pd.weights_desc());
          return std::make_unique<ConvKernel<dnnl::convolution_forward>>(pd, src_plain, dst_plain, weights, bias,
                                                                          has_z, post, threads, z_plain);
        });
      }
    }
    if (scale) {
      auto sw = std::make_shared<ScaledWeights>();
      sw->packed = prepack(w->constant(), w_plain, pd.weights_desc());
      Tensor channels(DType::Float, w->type.static_dims());
      for (int64_t i = 0; i < channels.numel(); ++i) channels.data<float>()[i] = static_cast<float>(i / (KH * KW) % C);
      const dnnl_util::PackedConstant packed_channels = prepack(channels, w_plain, pd.weights_desc());
      const float* pc = static_cast<const float*>(packed_channels.mem.get_data_handle());
      sw->channel.resize(pd.weights_desc().get_size() / sizeof(float));
      for (size_t j = 0; j < sw->channel.size(); ++j) sw->channel[j] = static_cast<int32_t>(pc[j]);
      return std::make_unique<ConvKernel<dnnl::convolution_forward>>(pd, src_plain, dst_plain, dnnl_util::PackedConstant{}, bias,
                                                                      z != nullptr, post, threads, z_plain, sw);
    }
    dnnl_util::PackedConstant weights = prepack(w->constant(), w_plain, pd.weights_desc());
    return std::make_unique<ConvKernel<dnnl::convolution_forward>>(pd, src_plain, dst_plain, weights, bias, z != nullptr,
                                                                    post, threads, z_plain);
  } catch (const dnnl::error&) {
    return nullptr;  // no oneDNN implementation for this form
  }
}

// ConvTranspose, 1-D (as a height-1 2-D), 2-D or 3-D, on oneDNN's deconvolution: groups, strides,
// dilations, pads, auto_pad, output_padding and output_shape (the inferred output extent fixes
// the right padding, which absorbs output_padding), optional bias. NCHW tensors; the primitive
// picks its own layouts and run() reorders. kiln.NhwcConvTranspose is the same on NHWC tensors.
// Forms that need negative padding decline.
std::unique_ptr<Kernel> make_deconv(const ir::Node& node) {
  if (node.num_inputs() < 2 || node.num_outputs() != 1) return nullptr;
  const bool nhwc = node.domain() == "kiln";  // kiln.NhwcConvTranspose: x and y channels-last
  const ir::Value* x = node.input(0);
  const ir::Value* w = node.input(1);
  const ir::Value* b = node.input(2);
  const ir::Value* y = node.output(0);
  if (!dnnl_util::static_float(x) || !dnnl_util::static_float(w) || !dnnl_util::static_float(y)) return nullptr;
  if (!w->is_constant() || (b && (!b->is_constant() || !dnnl_util::static_float(b)))) return nullptr;
  auto xd = x->type.static_dims(), yd = y->type.static_dims(), wd = w->type.static_dims();
  if (nhwc) {
    if (xd.size() != 4 || yd.size() != 4) return nullptr;
    xd = {xd[0], xd[3], xd[1], xd[2]};
    yd = {yd[0], yd[3], yd[1], yd[2]};
  }
  if (xd.size() != wd.size() || xd.size() != yd.size() || xd.size() < 3 || xd.size() > 5) return nullptr;
  const size_t nsp = xd.size() - 2;
  if (nsp == 1) {  // [N, C, L] as [N, C, 1, L]
    xd.insert(xd.begin() + 2, 1);
    yd.insert(yd.begin() + 2, 1);
    wd.insert(wd.begin() + 2, 1);
  }
  const size_t S = xd.size() - 2;  // the primitive's spatial dims: 2 or 3
  const int64_t G = node.attr_int("group", 1);
  const int64_t N = xd[0], C = xd[1], OC = wd[1] * G;
  if (G < 1 || C % G || wd[0] != C || yd[0] != N || yd[1] != OC) return nullptr;
  if (b && b->type.static_dims() != std::vector<int64_t>{OC}) return nullptr;
  auto widen = [&](std::vector<int64_t> v, int64_t fill) {  // a 1-D attribute for the 2-D form
    if (nsp == 1 && v.size() == 1) v.insert(v.begin(), fill);
    return v;
  };
  const std::vector<int64_t> k(wd.begin() + 2, wd.end());
  const auto ks = node.attr_ints("kernel_shape");
  if (!ks.empty() && widen(ks, 1) != k) return nullptr;
  const auto strides = widen(node.attr_ints("strides", std::vector<int64_t>(nsp, 1)), 1);
  const auto dil = widen(node.attr_ints("dilations", std::vector<int64_t>(nsp, 1)), 1);
  const auto opad = widen(node.attr_ints("output_padding", std::vector<int64_t>(nsp, 0)), 0);
  auto pads = node.attr_ints("pads", std::vector<int64_t>(2 * nsp, 0));
  if (nsp == 1 && pads.size() == 2) pads = {0, pads[0], 0, pads[1]};
  if (strides.size() != S || dil.size() != S || opad.size() != S || pads.size() != 2 * S) return nullptr;
  const std::optional<ops::AutoPad> ap = ops::auto_pad_of(node);
  if (!ap) return nullptr;
  const bool derived = ops::is_same_pad(*ap) || node.has_attr("output_shape");
  memory::dims pl(S), pr(S);
  for (size_t i = 0; i < S; ++i) {
    const int64_t in = xd[2 + i], out = yd[2 + i], s = strides[i], d = dil[i];
    if (s < 1 || d < 1) return nullptr;
    const int64_t ek = (k[i] - 1) * d + 1;
    int64_t begin = *ap == ops::AutoPad::Valid ? 0 : pads[i];
    if (derived && !(nsp == 1 && i == 0)) begin = ops::conv_transpose_pads(*ap, in, out, k[i], s, d, opad[i]).begin;
    pl[i] = begin;
    pr[i] = s * (in - 1) + ek - begin - out;
    if (pl[i] < 0 || pr[i] < 0) return nullptr;
  }
  try {
    const tag act = nhwc ? tag::nhwc : S == 2 ? tag::nchw : tag::ncdhw;
    memory::desc src_plain(xd, dt::f32, act);
    memory::desc dst_plain(yd, dt::f32, act);
    // ONNX weights are [C, OC/G, k...]: oneDNN's (OC, IC) dims with input channels outermost.
    memory::dims wdims = G == 1 ? memory::dims{OC, C} : memory::dims{G, OC / G, C / G};
    wdims.insert(wdims.end(), k.begin(), k.end());
    const tag wtag = G == 1 ? (S == 2 ? tag::iohw : tag::iodhw) : (S == 2 ? tag::giohw : tag::giodhw);
    memory::desc w_plain(wdims, dt::f32, wtag);
    memory::desc w_any(wdims, dt::f32, tag::any);
    memory::desc b_md({OC}, dt::f32, tag::x);
    memory::desc src_any(xd, dt::f32, tag::any);
    memory::desc dst_any(yd, dt::f32, tag::any);
    memory::dims st(strides.begin(), strides.end()), dl;
    for (int64_t d : dil) dl.push_back(d - 1);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const auto prop = dnnl::prop_kind::forward_inference;
    const auto algo = dnnl::algorithm::deconvolution_direct;
    auto desc = b ? dnnl::deconvolution_forward::desc(prop, algo, src_any, w_any, b_md, dst_any, st, dl, pl, pr)
                  : dnnl::deconvolution_forward::desc(prop, algo, src_any, w_any, dst_any, st, dl, pl, pr);
    dnnl::deconvolution_forward::primitive_desc pd(desc, attr, dnnl_util::engine());
    dnnl_util::PackedConstant weights = prepack(w->constant(), w_plain, pd.weights_desc());
    dnnl_util::PackedConstant bias;
    if (b) bias = prepack(b->constant(), b_md, pd.bias_desc());
    return std::make_unique<ConvKernel<dnnl::deconvolution_forward>>(pd, src_plain, dst_plain, weights, bias, false);
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

}  // namespace

std::unique_ptr<Kernel> make_onednn_conv(const ir::Node& node, bool winograd, int threads, int64_t dst_row_channels) {
  return make_conv(node, false, winograd, threads, dst_row_channels);
}

// Activations kiln applies itself after the primitive, on the output in cache-sized pieces split
// across the threads, instead of as a oneDNN post-op. oneDNN 2.6's swish post-op costs
// more than that second pass (make kernel-bench, Expand1x1_16to96_112_SiLU and
// Depthwise3x3_32x112_SiLU time both).
bool dnnl_util::late_activation(const ir::Node& node) {
  return node.attr_string("activation", "") == ops::activation_name(ops::Activation::SiLU);
}

void add_onednn_conv_kernels(std::vector<KernelFactory>& table) {
  for (const char* op : {"Conv", "FusedConv"}) {
    const std::string domain = std::string(op) == "Conv" ? "" : "kiln";
    // First = the default. Winograd where it applies (3x3, stride 1, groups 1): faster than
    // brgconv on every such shape of resnet18 and squeezenet1_1 even with its NHWC<->blocked
    // reorders (make kernel-bench, Conv3x3_* and Expand3x3_*).
    // Then activations in the layout the graph gives (NHWC after layout assignment), oneDNN's
    // choice for NCHW; then the other layout.
    table.push_back({domain, op, [](const ir::Node& n, int t) { return make_conv(n, false, true, t); }, "onednn_winograd"});
    table.push_back({domain, op, [](const ir::Node& n, int t) { return make_conv(n, false, false, t); }, "onednn"});
    table.push_back({domain, op, [](const ir::Node& n, int t) { return make_conv(n, true, false, t); }, "onednn_alt_layout"});
  }
  table.push_back({"", "ConvTranspose", [](const ir::Node& n, int) { return make_deconv(n); }, "onednn"});
  table.push_back({"kiln", "NhwcConvTranspose", [](const ir::Node& n, int) { return make_deconv(n); }, "onednn"});
}

}  // namespace kiln::backends::cpu
