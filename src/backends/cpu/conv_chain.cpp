// kiln.ConvChain (src/lower/fuse_conv_chain.cpp): the last conv's output is computed a band of
// rows at a time, and each intermediate tensor exists only as a window of the rows its consumer
// still needs (a line buffer). When a band moves on, only the rows it does not share with the
// band before are computed, so nothing is computed twice: between kiln's kernels a window is a
// ring (row r in slot r % rows, see row_slot), so the new rows overwrite the ones no longer
// needed; around a oneDNN primitive, which reads and writes contiguous rows, the shared rows
// move to the window's front instead (a cost the rings avoid). The windows stay in the L2 cache
// where the whole tensors (mobilenet_v2's 112x112x96: 4.8 MB) would go to L3 and back. 1x1
// layers run on kiln's pointwise kernel, 3x3 and 5x5 depthwise layers, pools and stems (few
// input channels) on kiln's depthwise, pooling and stem kernels, each reading the window in
// place (squeezenet1_1's stem -> max pool: the 3 MB stem output never goes to L3 and back). The
// other convs run as oneDNN primitives on a band (variants by rows and edge padding,
// built at creation), kiln's late activations applied to each band while it is in cache. The
// 1x1 layers run on kiln's kernel rather than oneDNN's: as fast on a band, and it needs no
// primitive per band shape. With more threads, each thread runs the whole chain on its own
// share of the output rows (recomputing the few rows where two shares meet), its windows in its
// own buffer and oneDNN's primitives running single-threaded inside the team. A pooled chain
// sums each band of its output into per-thread channel sums right after writing it, for the
// global average pool that joined the chain, so the pool reads no tensor from memory.
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "backends/cpu/activation_apply.h"
#include "backends/cpu/cache_size.h"
#include "backends/cpu/depthwise_conv.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/nhwc_global_pool.h"
#include "backends/cpu/nhwc_pool.h"
#include "backends/cpu/onednn_common.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/pointwise_conv.h"
#include "backends/cpu/simd.h"
#include "backends/cpu/stem_conv.h"
#include "kernels/chain_schedule.h"
#include "ops/core/conv_geometry.h"

namespace kiln::backends::cpu {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

// Bytes of intermediate windows a band may hold, per thread, from the core's L2 size: a chain
// run by one thread takes three quarters of it (the windows are rings, so no rows move when a
// band moves on, and bigger bands pay), a team's threads half each, leaving room for the band's
// input and output rows and for the other thread's traffic. Fractions of the L2 rather than
// bytes because the right size followed the L2 on both machines measured (2 MiB and 1 MiB);
// smaller bands were no better, and at 2 threads three quarters gained nothing. Numbers:
// bench/results/history-code-comments.md.
int64_t band_bytes(int threads) {
  const int64_t l2 = l2_cache_bytes();
  return threads > 1 ? l2 / 2 : l2 / 4 * 3;
}

// One conv of the chain, NHWC: reads tensor l, writes tensor l + 1.
struct Layer {
  int64_t C = 0, H = 0, W = 0, OC = 0, OH = 0, OW = 0, KH = 0, KW = 0, SH = 1, SW = 1, PT = 0, PL = 0, PB = 0, PR = 0,
          G = 1;
  int z_input = -1;  // the node input holding its residual, if any
  ops::Activation late{ops::Activation::None};
  dnnl::primitive_attr attr;
  memory::desc w_plain;
  const ir::Value* weights = nullptr;
  memory bias;
  // A 3x3 or 5x5 depthwise layer runs on kiln's kernel (depthwise_conv.h) instead of a primitive.
  std::shared_ptr<const DepthwiseConv> dw;
  // A 1x1 layer runs on kiln's pointwise kernel (pointwise_conv.h) on the window's rows.
  std::shared_ptr<const PointwiseRows> pw;
  // A conv on few input channels (a stem) runs on kiln's stem kernel (stem_conv.h).
  std::shared_ptr<const StemConv> stem;
  // A max or average pool layer (nhwc_pool.h): KH, SH, PT and PB are its window's.
  std::optional<PoolWindow> pool;
  // The first layer's input is NCHW: the chain's body starts with the Transpose to NHWC that the
  // layout assignment put before it (the model's input image). A stem reads the planes as they
  // are; any other first layer gets each image transposed first.
  bool nchw_input = false;
  int64_t row_floats() const { return OW * OC; }  // of its output
};

struct Variant {
  dnnl::convolution_forward prim;
  memory::desc src, dst;
  memory weights;
  size_t scratchpad = 0;
};

class ConvChainKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  // Band height: the most output rows whose windows fit `budget` bytes, or `band_rows` > 0
  // (tests use it to get many bands on small images).
  ConvChainKernel(std::vector<Layer> layers, int threads, int64_t band_rows, int64_t budget)
      : layers_(std::move(layers)), schedule_(chain_layers(layers_), threads, band_rows, budget) {
    const int n = static_cast<int>(layers_.size());
    // The oneDNN layers' primitives, one per band shape (rows held, pads) the steps run.
    variants_of_.resize(schedule_.parts());
    for (int t = 0; t < schedule_.parts(); ++t)
      for (const kiln_kernels::ChainStep& st : schedule_.steps(t)) {
        const Layer* L = st.layer >= 0 ? &layers_[st.layer] : nullptr;
        const bool primitive = L && !L->dw && !L->pool && !L->pw && !L->stem;
        variants_of_[t].push_back(primitive ? variant(st.layer, st.in_rows, st.pad_top, st.pad_bottom, st.rows) : nullptr);
      }
    // Each thread's buffer: the windows (64-byte aligned), then the primitives' scratchpad.
    window_offset_.assign(n, 0);
    size_t off = 0, scratch = 0;
    for (int t = 1; t < n; ++t) {
      window_offset_[t] = off;
      off += (schedule_.capacity(t) * layers_[t - 1].row_floats() * 4 + 63) / 64 * 64;
    }
    for (const auto& [key, v] : variants_) scratch = std::max(scratch, v->scratchpad);
    scratch_offset_ = off;
    buffer_bytes_ = off + scratch;
  }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const Layer& first = layers_.front();
    const Layer& last = layers_.back();
    const int64_t images = inputs[0]->dims()[0];
    const int64_t in_image = first.H * first.W * first.C, out_image = last.OH * last.row_floats();
    const int parts = schedule_.parts();
    const bool pooled = outputs.size() > 1 && outputs[1];
    std::vector<float> sums(pooled ? static_cast<size_t>(parts * last.OC) : 0);
    std::vector<float> nhwc;  // the image transposed, where the first layer cannot read NCHW
    if (first.nchw_input && !first.stem) nhwc.resize(static_cast<size_t>(in_image));
    for (int64_t img = 0; img < images; ++img) {
      const float* x = static_cast<const float*>(inputs[0]->raw()) + img * in_image;
      if (!nhwc.empty()) {
        const int64_t pixels = first.H * first.W;
        for (int64_t c = 0; c < first.C; ++c)
          for (int64_t p = 0; p < pixels; ++p) nhwc[p * first.C + c] = x[c * pixels + p];
        x = nhwc.data();
      }
      float* y = static_cast<float*>(outputs[0]->raw()) + img * out_image;
      std::fill(sums.begin(), sums.end(), 0.f);
      parallel_for(parts, parts, [&](int64_t b, int64_t e) {
        for (int64_t t = b; t < e; ++t)
          run_schedule(static_cast<int>(t), inputs, img, x, y, pooled ? sums.data() + t * last.OC : nullptr);
      });
      if (pooled) {  // the mean over the image from each part's sums
        float* p = static_cast<float*>(outputs[1]->raw()) + img * last.OC;
        const float scale = 1.f / static_cast<float>(last.OH * last.OW);
        for (int64_t c = 0; c < last.OC; ++c) {
          float total = 0.f;
          for (int t = 0; t < parts; ++t) total += sums[t * last.OC + c];
          p[c] = total * scale;
        }
      }
    }
  }

 private:
  // The layers' rows as the schedule sees them: kiln's kernels read their input in place.
  static std::vector<kiln_kernels::ChainLayer> chain_layers(const std::vector<Layer>& layers) {
    std::vector<kiln_kernels::ChainLayer> out;
    for (const Layer& L : layers)
      out.push_back({L.H, L.OH, L.KH, L.SH, L.PT, L.row_floats(), L.pw || L.dw || L.stem || L.pool.has_value(),
                     L.pw != nullptr});
    return out;
  }

  const Variant* variant(int l, int64_t in_rows, int64_t pt, int64_t pb, int64_t out_rows) {
    auto key = std::make_tuple(l, in_rows, pt, pb);
    if (auto it = variants_.find(key); it != variants_.end()) return it->second.get();
    const Layer& L = layers_[l];
    auto& eng = dnnl_util::engine();
    auto v = std::make_unique<Variant>();
    v->src = memory::desc({1, L.C, in_rows, L.W}, dt::f32, tag::nhwc);
    v->dst = memory::desc({1, L.OC, out_rows, L.OW}, dt::f32, tag::nhwc);
    memory::desc w_any(L.w_plain.dims(), dt::f32, tag::any);
    memory::desc b_md({L.OC}, dt::f32, tag::x);
    const memory::dims st{L.SH, L.SW}, dl{0, 0}, pl{pt, L.PL}, pr{pb, L.PR};
    const auto prop = dnnl::prop_kind::forward_inference;
    const auto algo = dnnl::algorithm::convolution_direct;
    auto desc = L.bias ? dnnl::convolution_forward::desc(prop, algo, v->src, w_any, b_md, v->dst, st, dl, pl, pr)
                       : dnnl::convolution_forward::desc(prop, algo, v->src, w_any, v->dst, st, dl, pl, pr);
    dnnl::convolution_forward::primitive_desc pd(desc, L.attr, eng);
    v->prim = dnnl::convolution_forward(pd);
    v->scratchpad = pd.scratchpad_desc().get_size();
    // Variants of one layer share a prepacked weight layout where they agree on it.
    for (auto& [w_md, w_packed] : weights_[l])
      if (w_md == pd.weights_desc()) v->weights = w_packed.mem;
    if (!v->weights) {
      dnnl_util::PackedConstant packed = dnnl_util::pack_constant(L.weights->constant().raw(), L.w_plain,
                                                                  pd.weights_desc());
      v->weights = packed.mem;
      weights_[l].emplace_back(pd.weights_desc(), std::move(packed));
    }
    return (variants_[key] = std::move(v)).get();
  }

  // `pool`, when the chain is pooled: this schedule's per-channel sums of the output.
  void run_schedule(int part, const std::vector<const Tensor*>& inputs, int64_t img, const float* x, float* y,
                    float* pool) const {
    const int n = static_cast<int>(layers_.size());
    char* buf = static_cast<char*>(dnnl_util::scratch(buffer_bytes_));
    auto window = [&](int t) { return reinterpret_cast<float*>(buf + window_offset_[t]); };
    auto& eng = dnnl_util::engine();
    dnnl::stream s(eng);
    std::unordered_map<const Variant*, std::unordered_map<int, memory>> args;
    const std::vector<kiln_kernels::ChainStep>& steps = schedule_.steps(part);
    for (size_t i = 0; i < steps.size(); ++i) {
      const kiln_kernels::ChainStep& st = steps[i];
      if (st.layer < 0) {
        const int64_t row = layers_[st.window - 1].row_floats();
        float* w = window(st.window);
        std::memmove(w, w + st.shift * row, st.rows * row * sizeof(float));
        continue;
      }
      const Layer& L = layers_[st.layer];
      const float* src = (st.layer == 0 ? x : window(st.layer)) + st.src_offset * L.W * L.C;
      float* dst = (st.layer == n - 1 ? y : window(st.layer + 1)) + st.dst_offset * L.row_floats();
      const int64_t count = st.rows * L.row_floats();
      const float* z = L.z_input < 0 ? nullptr
                                     : static_cast<const float*>(inputs[L.z_input]->raw()) +
                                           (img * L.OH + st.row) * L.row_floats();
      if (L.pw) {
        L.pw->rows(src, 0, st.rows * L.OW, dst, z, nullptr);
        if (pool && st.layer == n - 1) sum_pixels(dst, st.rows * L.OW, L.OC, pool);
        continue;
      }
      if (z && z != dst) std::memcpy(dst, z, count * sizeof(float));  // oneDNN's sum post-op adds it
      const float* rows = st.layer == 0 ? x : window(st.layer);
      const int64_t ring = st.layer > 0 && schedule_.ring(st.layer) ? schedule_.capacity(st.layer) : 0;
      if (L.dw) {  // reads the window's rows where they are, zero padding outside the image
        L.dw->rows(rows, st.src_row0, dst, st.row, st.row + st.rows, ring);
      } else if (L.stem) {
        L.stem->rows(rows, st.src_row0, dst, st.row, st.row + st.rows, ring);
      } else if (L.pool) {
        pool_rows(*L.pool, rows, st.src_row0, dst, st.row, st.row + st.rows, ring);
      } else {
        run_primitive(*variants_of_[part][i], L, src, dst, count, buf, s, args);
      }
      // The band just written is in cache: pool it now rather than reading the tensor again.
      if (pool && st.layer == n - 1) sum_pixels(dst, st.rows * L.OW, L.OC, pool);
    }
    s.wait();
  }

  // One band on the layer's oneDNN primitive, with the argument map kept per variant: building
  // maps and memory objects per step would cost more than a short step's own bookkeeping.
  void run_primitive(const Variant& v, const Layer& L, const float* src, float* dst, int64_t count, char* buf,
                     dnnl::stream& s, std::unordered_map<const Variant*, std::unordered_map<int, memory>>& args) const {
    auto& eng = dnnl_util::engine();
    auto [it, fresh] = args.try_emplace(&v);
    std::unordered_map<int, memory>& a = it->second;
    if (fresh) {
      a = {{DNNL_ARG_SRC, memory(v.src, eng, const_cast<float*>(src))},
           {DNNL_ARG_WEIGHTS, v.weights},
           {DNNL_ARG_DST, memory(v.dst, eng, dst)}};
      if (L.bias) a[DNNL_ARG_BIAS] = L.bias;
      if (v.scratchpad)
        a[DNNL_ARG_SCRATCHPAD] =
            memory(memory::desc({static_cast<int64_t>(v.scratchpad)}, dt::u8, tag::x), eng, buf + scratch_offset_);
    } else {
      a[DNNL_ARG_SRC].set_data_handle(const_cast<float*>(src));
      a[DNNL_ARG_DST].set_data_handle(dst);
    }
    v.prim.execute(s, a);
    if (L.late.kind != ops::Activation::None) {
      s.wait();
      apply_activation(L.late, dst, count);
    }
  }

  std::vector<Layer> layers_;
  kiln_kernels::ChainSchedule schedule_;
  std::vector<std::vector<const Variant*>> variants_of_;  // per part and step: its primitive, if any
  std::vector<size_t> window_offset_;
  size_t scratch_offset_ = 0, buffer_bytes_ = 0;
  std::map<std::tuple<int, int64_t, int64_t, int64_t>, std::unique_ptr<Variant>> variants_;
  std::unordered_map<int, std::vector<std::pair<memory::desc, dnnl_util::PackedConstant>>> weights_;
};

// The body's convs as layers, or an empty vector when one is outside what the kernel runs (the
// lowering pass only forms chains it runs; this guards hand-made graphs).
std::vector<Layer> read_layers(const ir::Node& node, int threads) {
  auto it = node.attrs.find("body");
  if (it == node.attrs.end() || !it->second.g || node.num_outputs() < 1 || node.num_outputs() > 2) return {};
  const ir::Graph& body = *it->second.g;
  std::unordered_map<const ir::Value*, int> input_index;
  for (size_t i = 0; i < body.inputs().size(); ++i) input_index[body.inputs()[i]] = static_cast<int>(i);
  std::vector<Layer> layers;
  const ir::Value* prev = nullptr;
  const std::vector<ir::Node*> nodes = body.nodes();
  // A pooled chain ends in the global average pool of its last conv's output.
  const ir::Node* pool = nodes.empty() ? nullptr : nodes.back();
  if (pool && (pool->domain() != "kiln" || pool->op_type() != "NhwcGlobalAveragePool")) pool = nullptr;
  if ((pool != nullptr) != (node.num_outputs() == 2) || body.outputs().size() != static_cast<size_t>(node.num_outputs()))
    return {};
  bool nchw_input = false;
  for (const ir::Node* c : nodes) {
    if (c == pool) break;
    if (c->domain().empty() && c->op_type() == "Transpose") {  // NCHW -> NHWC, before the first conv
      if (prev || !input_index.count(c->input(0)) || !dnnl_util::static_float(c->input(0)) ||
          c->attr_ints("perm") != std::vector<int64_t>{0, 2, 3, 1})
        return {};
      nchw_input = true;
      prev = c->output(0);
      continue;
    }
    if (std::optional<PoolWindow> pw = nhwc_pool_window(*c)) {  // after a conv: its rows are the band's
      if (layers.empty() || c->input(0) != prev || pw->kh > kMaxKernelRows) return {};
      Layer L;
      L.H = pw->H, L.W = pw->W, L.C = pw->C, L.OH = pw->OH, L.OW = pw->OW, L.OC = pw->C;
      L.KH = (pw->kh - 1) * pw->dh + 1, L.KW = (pw->kw - 1) * pw->dw + 1;
      L.SH = pw->sh, L.SW = pw->sw, L.PT = pw->pt, L.PL = pw->pl, L.PB = pw->pb, L.PR = pw->pr;
      L.pool = pw;
      layers.push_back(std::move(L));
      prev = c->output(0);
      continue;
    }
    if (c->domain() != "kiln" || c->op_type() != "FusedConv" || !c->attr_int("channels_last", 0)) return {};
    if (c->num_inputs() < 2 || c->num_outputs() != 1 || (c->num_inputs() > 4 && c->input(4))) return {};
    const ir::Value *x = c->input(0), *w = c->input(1), *b = c->input(2), *z = c->input(3), *y = c->output(0);
    if (prev ? x != prev : !input_index.count(x)) return {};
    if (!dnnl_util::static_float(x) || !dnnl_util::static_float(w) || !dnnl_util::static_float(y)) return {};
    if (!w->is_constant() || (b && (!b->is_constant() || !dnnl_util::static_float(b)))) return {};
    if (c->attr_int("x_blocked", 0) || c->attr_int("y_blocked", 0) || c->attr_int("z_blocked", 0)) return {};
    if (ops::auto_pad_of(*c) != ops::AutoPad::NotSet) return {};
    if (c->attr_ints("dilations", {1, 1}) != std::vector<int64_t>{1, 1}) return {};
    const auto xd = x->type.static_dims(), yd = y->type.static_dims(), wd = w->type.static_dims();
    if (xd.size() != 4 || yd.size() != 4 || wd.size() != 4 || xd[0] != yd[0]) return {};
    Layer L;
    L.nchw_input = nchw_input && layers.empty();
    L.H = xd[1], L.W = xd[2], L.C = xd[3], L.OH = yd[1], L.OW = yd[2], L.OC = yd[3], L.KH = wd[2], L.KW = wd[3];
    L.G = c->attr_int("group", 1);
    const auto st = c->attr_ints("strides", {1, 1}), pads = c->attr_ints("pads", {0, 0, 0, 0});
    if (st.size() != 2 || pads.size() != 4 || L.G < 1 || L.C % L.G || L.OC % L.G || wd[0] != L.OC ||
        wd[1] != L.C / L.G)
      return {};
    L.SH = st[0], L.SW = st[1], L.PT = pads[0], L.PL = pads[1], L.PB = pads[2], L.PR = pads[3];
    if (L.SH < 1 || L.SW < 1 || (L.H + L.PT + L.PB - L.KH) / L.SH + 1 != L.OH ||
        (L.W + L.PL + L.PR - L.KW) / L.SW + 1 != L.OW)
      return {};
    if (z) {
      if (!input_index.count(z) || z->type.static_dims() != yd) return {};
      L.z_input = input_index.at(z);
    }
    L.w_plain = L.G == 1 ? memory::desc({L.OC, L.C, L.KH, L.KW}, dt::f32, tag::oihw)
                         : memory::desc({L.G, L.OC / L.G, L.C / L.G, L.KH, L.KW}, dt::f32, tag::goihw);
    L.weights = w;
    if (b) {
      if (b->type.static_dims() != std::vector<int64_t>{L.OC}) return {};
      L.bias = memory(memory::desc({L.OC}, dt::f32, tag::x), dnnl_util::engine());  // owned: no pointer into the graph
      std::memcpy(L.bias.get_data_handle(), b->constant().raw(), L.OC * sizeof(float));
    }
    dnnl::post_ops po;
    if (z) po.append_sum(1.f);
    if (std::unique_ptr<DepthwiseShape> ds = depthwise_shape(*c); ds && ds->KH * ds->KW <= 25) {
      L.dw = std::make_shared<DepthwiseConv>(*ds, w->constant().data<float>(), b ? b->constant().data<float>() : nullptr,
                                             ops::activation_of(*c));
    } else if (L.KH == 1 && L.KW == 1 && L.SH == 1 && L.SW == 1 && L.G == 1 && !(L.PT | L.PL | L.PB | L.PR) &&
               has_avx512() && kernel_enabled("kiln_pointwise")) {
      const std::optional<ops::Activation> act = epilogue_of(*c);
      if (!act) return {};
      L.pw = std::make_shared<PointwiseRows>(L.C, L.OC, w->constant().data<float>(),
                                             b ? b->constant().data<float>() : nullptr, *act, L.OC, threads);
    } else if (std::unique_ptr<StemShape> ss = stem_shape(*c); ss && kernel_enabled("kiln_stem_conv")) {
      const std::optional<ops::Activation> act = epilogue_of(*c);
      if (!act) return {};
      L.stem = std::make_shared<StemConv>(*ss, w->constant().data<float>(), b ? b->constant().data<float>() : nullptr,
                                          *act, L.nchw_input);
    } else if (dnnl_util::late_activation(*c)) {
      L.late = ops::activation_of(*c);
    } else if (!dnnl_util::append_activation(*c, po)) {
      return {};
    }
    L.attr.set_post_ops(po);
    L.attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    layers.push_back(std::move(L));
    prev = y;
  }
  if (layers.size() < (pool ? 1u : 2u) || body.outputs()[0] != prev) return {};
  if (pool && (pool->input(0) != prev || body.outputs()[1] != pool->output(0) ||
               pool->output(0)->type.static_dims() != std::vector<int64_t>{prev->type.static_dims()[0], 1, 1,
                                                                           layers.back().OC}))
    return {};
  return layers;
}

// The spec's "band_bytes" (the windows' budget per thread, from the L2 size: band_bytes()) and
// "band_rows" (0: as many as fit; the node's band_rows attribute, for tests).
std::unique_ptr<Kernel> make_conv_chain(const ir::Node& node, const plan::KernelSpec& spec) {
  if (!spec.params.count("band_bytes") || !spec.params.count("band_rows")) return nullptr;
  const int64_t budget = spec.get_int("band_bytes"), band_rows = spec.get_int("band_rows");
  if (budget < 1 || band_rows < 0) return nullptr;
  const int threads = spec.threads;
  std::vector<Layer> layers = read_layers(node, threads);
  if (layers.empty()) return nullptr;
  try {
    return std::make_unique<ConvChainKernel>(std::move(layers), threads, band_rows, budget);
  } catch (const dnnl::error&) {
    return nullptr;  // a band shape oneDNN has no implementation for
  }
}

}  // namespace

void add_conv_chain_kernels(std::vector<KernelFactory>& table) {
  table.push_back({.domain = "kiln",
                   .op = "ConvChain",
                   .make = nullptr,
                   .name = "onednn_bands",
                   .choose = [](const ir::Node& n, int threads) -> std::map<std::string, plan::ParamValue> {
                     return {{"band_bytes", band_bytes(threads)}, {"band_rows", n.attr_int("band_rows", 0)}};
                   },
                   .make_spec = make_conv_chain,
                   .choices = [](const ir::Node&, int threads) -> plan::ParamChoices {
                     const int64_t b = band_bytes(threads);
                     return {{"band_bytes", {b / 4, b / 2, b, 2 * b}}, {"band_rows", {int64_t{0}, int64_t{2}, int64_t{5}}}};
                   },
                   .thread_params = {"band_bytes"}});
}

}  // namespace kiln::backends::cpu
