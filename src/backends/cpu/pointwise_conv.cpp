// kiln's 1x1 convolution for few pixels and wide weights: the late layers of mobilenet_v2 and
// efficientnet_b0 (7x7 and 14x14 images, 0.1-1.6 MB of weights each). There the weights come
// from L3 on every run (a model's weights do not fit the L2), and oneDNN 2.6's 1x1 conv pays
// that read on top of its compute. The kernel is kiln_kernels::PointwiseLayout
// (src/kernels/pointwise_rows.h, which emitted C++ calls too): weights packed at creation in the
// order it reads them, pixel tiles accumulating in registers, input-channel ranges whose weights
// stay in L1 while the next range is prefetched into L2. The prefetch is what puts this kernel
// ahead of oneDNN's on these layers: without it, it is slower (`kiln bench --pair-disable
// kiln_pointwise` measures it; numbers in bench/results/history-code-comments.md). This file
// holds the rule that picks its parameters and the kernels that run it on whole tensors.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>

#include "backends/cpu/activation_apply.h"
#include "backends/cpu/aligned_floats.h"
#include "backends/cpu/avx512_activation.h"
#include "backends/cpu/cache_size.h"
#include "backends/cpu/depthwise_conv.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/onednn_common.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/pointwise_conv.h"
#include "backends/cpu/simd.h"
#include "backends/cpu/team_costs.h"
#include "ops/core/conv_geometry.h"

namespace kiln::backends::cpu {

namespace {

namespace pk = kiln_kernels::pointwise_detail;

}  // namespace

int64_t pointwise_split_rows(const ir::Node& node, int64_t N) {
  const ir::Value* y = node.num_outputs() > 0 ? node.output(0) : nullptr;
  if (!y || !y->type.is_static() || N < 1) return 0;
  // The readers whose own split follows this conv's (depthwise_split, global_pool_split).
  for (const ir::Use& u : y->uses()) {
    const ir::Node& r = *u.node;
    const bool global_pool =
        r.domain() == "kiln" && (r.op_type() == "NhwcGlobalAveragePool" || r.op_type() == "NhwcGlobalMaxPool");
    if (global_pool || depthwise_shape(r, /*dilated_ok=*/true)) return 0;
  }
  int64_t elements = 1;
  for (int64_t d : y->type.static_dims()) elements *= d;
  return elements / N;
}

bool outputs_split_pays(int64_t rows, int64_t K, int64_t N, int threads) {
  if (rows <= 0) return true;
  const double others = 1.0 - 1.0 / std::max(1, threads);
  // Split by outputs, a thread reads every row and finds the other cores' share of it, (1 - 1/T),
  // in their caches; split by pixels, it reads its 1/T of the rows, of which (1 - 1/T) at most
  // were written elsewhere (where the producer split its channels). What the outputs split
  // fetches from other cores beyond the pixel split's, against the weights each thread streams
  // all of in a pixel split, (1 - 1/T) beyond its share.
  const double remote = kRemoteByteCost * 4.0 * static_cast<double>(rows) * K * others * others;
  const double weights = kSharedWeightByteCost * 4.0 * static_cast<double>(K) * N * others;
  return weights >= remote;
}

PointwiseChoice pointwise_rule(int64_t K, int64_t N, int threads, int64_t split_min_bytes, int64_t rows) {
  PointwiseChoice c;
  c.depth = pk::range_depth(l1d_cache_bytes());
  c.pair = pk::pair_allowed(K, N);
  c.split_outputs = K * N * 4 >= split_min_bytes && pk::parts_of(N, c.pair) >= 2 * std::max(1, threads) &&
                    outputs_split_pays(rows, K, N, threads);
  return c;
}

std::map<std::string, plan::ParamValue> pointwise_params(const PointwiseChoice& c) {
  return {{"depth", c.depth}, {"pair", int64_t{c.pair}}, {"split", std::string(c.split_outputs ? "outputs" : "pixels")}};
}

plan::ParamChoices pointwise_choices(int64_t K, int64_t N, int threads) {
  plan::ParamChoices c;
  using Values = std::vector<plan::ParamValue>;
  c["depth"] = Values{int64_t{32}, int64_t{64}, int64_t{128}};
  c["pair"] = pk::pair_allowed(K, N) ? Values{int64_t{0}, int64_t{1}} : Values{int64_t{0}};
  c["split"] = pk::parts_of(N, false) >= 2 * std::max(1, threads) ? Values{std::string("pixels"), std::string("outputs")}
                                                               : Values{std::string("pixels")};
  return c;
}

std::function<std::map<std::string, plan::ParamValue>(const ir::Node&, int)> pointwise_chooser(PointwiseDimsOf dims_of,
                                                                                               int64_t split_min_bytes) {
  return [=](const ir::Node& n, int t) -> std::map<std::string, plan::ParamValue> {
    const auto kn = dims_of(n);
    return kn ? pointwise_params(
                    pointwise_rule(kn->first, kn->second, t, split_min_bytes, pointwise_split_rows(n, kn->second)))
              : std::map<std::string, plan::ParamValue>{};
  };
}

std::function<plan::ParamChoices(const ir::Node&, int)> pointwise_lister(PointwiseDimsOf dims_of) {
  return [=](const ir::Node& n, int t) {
    const auto kn = dims_of(n);
    return kn ? pointwise_choices(kn->first, kn->second, t) : plan::ParamChoices{};
  };
}

std::optional<PointwiseChoice> pointwise_choice_of(const plan::KernelSpec& s, int64_t K, int64_t N) {
  for (const char* p : {"depth", "pair", "split"})
    if (!s.params.count(p)) return std::nullopt;
  PointwiseChoice c;
  c.depth = s.get_int("depth");
  c.pair = s.get_int("pair") != 0;
  c.split_outputs = s.get_string("split") == "outputs";
  if (c.depth < 16 || c.depth > pk::kMaxRangeDepth || c.depth % 16 != 0) return std::nullopt;
  if (s.get_int("pair") != 0 && s.get_int("pair") != 1) return std::nullopt;
  if (c.pair && !pk::pair_allowed(K, N)) return std::nullopt;
  if (s.get_string("split") != "outputs" && s.get_string("split") != "pixels") return std::nullopt;
  if (c.split_outputs && pk::parts_of(N, c.pair) < 2 * std::max(1, s.threads)) return std::nullopt;
  return c;
}

PointwiseRows::PointwiseRows(int64_t K, int64_t N, RowWeights w, const float* bias, ops::Activation act,
                             int64_t ldy, int threads)
    : PointwiseRows(K, N, w, bias, act, ldy, pointwise_rule(K, N, threads, kSplitOutputsMinWeightBytes)) {}

PointwiseRows::PointwiseRows(int64_t K, int64_t N, RowWeights w, const float* bias, ops::Activation act,
                             int64_t ldy, const PointwiseChoice& c)
    : layout_(K, N, c.pair, c.depth, ldy), act_(act), bias_(static_cast<size_t>(round16(N)), 0.f) {
  if (bias) std::copy(bias, bias + N, bias_.begin());
  packed_ = packed_floats(static_cast<size_t>(layout_.packed_size()),
                          layout_.pair() ? "kiln_pointwise/pairs" : "kiln_pointwise/blocks",
                          [&](float* packed) { layout_.pack(w.data, w.k_major, packed); });
}

void PointwiseRows::rows(const float* x, int64_t m0, int64_t m1, float* y, const float* z, const float* s) const {
  rows(x, m0, m1, y, z, s, 0, parts());
}

int64_t PointwiseRows::parts() const { return layout_.parts(); }

void PointwiseRows::rows(const float* x, int64_t m0, int64_t m1, float* y, const float* z, const float* s,
                         int64_t part0, int64_t part1, const kiln_kernels::PixelStride& stride) const {
  if (part1 <= part0) return;
  layout_.rows(packed_.get(), bias_.data(), kernel_act(act_.kind), act_.a, act_.b, x, m0, m1, y, z, s, part0, part1,
               stride);
  if (!activation_in_registers(act_)) {
    const int64_t n0 = layout_.first(part0), n1 = layout_.first(part1);
    for (int64_t m = m0; m < m1; ++m) apply_activation(act_, y + m * layout_.ldy() + n0, n1 - n0);
  }
}

namespace {


class PointwiseConvKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  // The residual Z (rows N apart) is read tile by tile just before the tile's first store.
  bool writes_over(int input) const override { return input == 3 && ldy_ == N_; }
  // `ldy` >= N: floats between output pixels (a channel slice of a wider tensor). Threads split
  // the outputs from `split_min_bytes` of weights.
  // `stride`: output pixel m of an image reads its input pixel stride.input_pixel(m), of
  // `in_pixels` per image (0: as many as it has outputs).
  PointwiseConvKernel(int64_t images, int64_t pixels, int64_t K, int64_t N, RowWeights w, const float* bias,
                      ops::Activation act, int threads, int64_t ldy, const PointwiseChoice& c,
                      const kiln_kernels::PixelStride& stride = {}, int64_t in_pixels = 0)
      : images_(images), M_(pixels), IM_(in_pixels > 0 ? in_pixels : pixels), K_(K), N_(N), ldy_(ldy),
        threads_(std::max(1, threads)), gemm_(K, N, w, bias, act, ldy, c),
        split_outputs_(c.split_outputs && gemm_.parts() >= 2 * threads_), stride_(stride) {}

  // Threads split the pixels, or with at least kSplitOutputsMinWeightBytes of weights the
  // output blocks: each core then streams its share of the weights from L3 instead of all of
  // them (and reads the whole input, half of it written by the other core).
  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const float* x = inputs[0]->data<float>();
    const float* z = inputs.size() > 3 && inputs[3] ? inputs[3]->data<float>() : nullptr;
    const Tensor* scale = inputs.size() > 4 ? inputs[4] : nullptr;
    float* y = outputs[0]->data<float>();
    const int64_t rows = images_ * M_;
    const int team = product_team(rows * N_, rows * N_ * K_, threads_);
    auto scale_of = [&](int64_t img) -> const float* {
      return scale ? scale->data<float>() + (scale->dims()[0] == 1 ? 0 : img * K_) : nullptr;
    };
    // Rows [r0, r1) of all images, taken image by image, for the outputs of parts [p0, p1).
    auto run_rows = [&](int64_t r0, int64_t r1, int64_t p0, int64_t p1) {
      for (int64_t r = r0; r < r1;) {
        const int64_t img = r / M_, m0 = r % M_, m1 = std::min(M_, m0 + (r1 - r));
        gemm_.rows(x + img * IM_ * K_, m0, m1, y + img * M_ * ldy_, z ? z + img * M_ * N_ : nullptr, scale_of(img), p0,
                   p1, stride_);
        r += m1 - m0;
      }
    };
    if (split_outputs_ && team > 1) {
      // Each thread a run of (part, row) pairs, part-major: whole parts, and at either end the
      // rows of a part shared with the neighbouring thread, so the shares are equal whatever the
      // part count (7 blocks of 64 outputs: 3.5 each, not 4 and 3).
      const int64_t parts = gemm_.parts(), units = parts * rows;
      parallel_for(team, team, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t)
          for (int64_t u = units * t / team, u1 = units * (t + 1) / team; u < u1;) {
            const int64_t p = u / rows, r0 = u % rows;
            if (r0 == 0 && u1 - u >= rows) {  // whole parts, in one call
              const int64_t whole = (u1 - u) / rows;
              run_rows(0, rows, p, p + whole);
              u += whole * rows;
            } else {
              const int64_t r1 = std::min(rows, r0 + (u1 - u));
              run_rows(r0, r1, p, p + 1);
              u += r1 - r0;
            }
          }
      });
      return;
    }
    parallel_for(team, team, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) run_rows(rows * t / team, rows * (t + 1) / team, 0, gemm_.parts());
    });
  }

 private:
  int64_t images_, M_, IM_, K_, N_, ldy_;
  int threads_;
  PointwiseRows gemm_;
  bool split_outputs_;
  kiln_kernels::PixelStride stride_;
};

}  // namespace

std::unique_ptr<Kernel> make_pointwise_rows_kernel(int64_t rows, int64_t K, int64_t N, RowWeights w,
                                                   const float* bias, ops::Activation act, int threads,
                                                   const PointwiseChoice& c) {
  if (!has_avx512() || rows < 1 || K < 1 || N < 1) return nullptr;
  return std::make_unique<PointwiseConvKernel>(1, rows, K, N, w, bias, act, threads, N, c);
}

std::optional<std::pair<int64_t, int64_t>> pointwise_dims(const ir::Node& node) {
  const ir::Value* w = node.num_inputs() > 1 ? node.input(1) : nullptr;
  if (!w || !w->type.is_static() || w->type.rank() != 4) return std::nullopt;
  const auto wd = w->type.static_dims();
  if (wd[2] != 1 || wd[3] != 1 || wd[0] < 1 || wd[1] < 1) return std::nullopt;
  return std::make_pair(wd[1], wd[0]);
}

std::optional<PointwiseConvShape> pointwise_conv_shape(const ir::Node& node, bool strided) {
  if (!has_avx512() || node.domain() != "kiln" || node.op_type() != "FusedConv") return std::nullopt;
  if (!node.attr_int("channels_last", 0) || node.attr_int("x_blocked", 0) || node.attr_int("y_blocked", 0) ||
      node.attr_int("z_blocked", 0))
    return std::nullopt;
  if (node.num_inputs() < 2 || node.num_outputs() != 1 || node.attr_int("group", 1) != 1) return std::nullopt;
  const ir::Value *x = node.input(0), *w = node.input(1), *y = node.output(0);
  const ir::Value* b = node.num_inputs() > 2 ? node.input(2) : nullptr;
  const ir::Value* z = node.num_inputs() > 3 ? node.input(3) : nullptr;
  if (!dnnl_util::static_float(x) || !dnnl_util::static_float(w) || !dnnl_util::static_float(y)) return std::nullopt;
  if (!w->is_constant() || (b && (!b->is_constant() || !dnnl_util::static_float(b)))) return std::nullopt;
  if (z && (!dnnl_util::static_float(z) || z->type.static_dims() != y->type.static_dims())) return std::nullopt;
  if (const ir::Value* sc = node.num_inputs() > 4 ? node.input(4) : nullptr) {  // a channel scale S
    const auto sd = sc->type.static_dims(), xd = x->type.static_dims();
    if (!dnnl_util::static_float(sc) || sd.size() != 4 || (sd[0] != 1 && sd[0] != xd[0]) || sd[1] != 1 || sd[2] != 1 ||
        sd[3] != xd[3])
      return std::nullopt;
  }
  for (int64_t v : node.attr_ints("dilations", {1, 1}))
    if (v != 1) return std::nullopt;
  const std::vector<int64_t> st = node.attr_ints("strides", {1, 1});
  if (st.size() != 2 || st[0] < 1 || st[1] < 1 || (!strided && (st[0] != 1 || st[1] != 1))) return std::nullopt;
  for (int64_t p : node.attr_ints("pads", {0, 0, 0, 0}))
    if (p != 0) return std::nullopt;
  const std::optional<ops::AutoPad> ap = ops::auto_pad_of(node);
  if (!ap || ops::is_same_pad(*ap)) return std::nullopt;
  const auto xd = x->type.static_dims(), wd = w->type.static_dims(), yd = y->type.static_dims();
  if (xd.size() != 4 || wd.size() != 4 || yd.size() != 4 || wd[2] != 1 || wd[3] != 1) return std::nullopt;
  // Unpadded 1x1: output row oh reads input row oh * stride.
  const int64_t K = xd[3], N = wd[0], OH = (xd[1] - 1) / st[0] + 1, OW = (xd[2] - 1) / st[1] + 1, pixels = OH * OW;
  if (wd[1] != K || yd != std::vector<int64_t>{xd[0], OH, OW, N}) return std::nullopt;
  if (K < 1 || N < 1 || pixels < 1) return std::nullopt;
  if (b && b->type.static_dims() != std::vector<int64_t>{N}) return std::nullopt;
  const std::optional<ops::Activation> act = epilogue_of(node);
  if (!act) return std::nullopt;
  return PointwiseConvShape{xd[0], pixels, K, N, *act, kiln_kernels::PixelStride{st[0], st[1], xd[2], OW},
                            xd[1] * xd[2]};
}

std::unique_ptr<Kernel> make_kiln_pointwise(const ir::Node& node, int threads, int64_t out_channels_total,
                                            const PointwiseChoice* choice) {
  const std::optional<PointwiseConvShape> s = pointwise_conv_shape(node, /*strided=*/true);
  if (!s || (out_channels_total > 0 && out_channels_total < s->N)) return nullptr;
  const ir::Value* b = node.num_inputs() > 2 ? node.input(2) : nullptr;
  return std::make_unique<PointwiseConvKernel>(
      s->images, s->pixels, s->K, s->N, node.input(1)->constant().data<float>(), b ? b->constant().data<float>() : nullptr,
      s->act, threads, out_channels_total > 0 ? out_channels_total : s->N,
      choice ? *choice
             : pointwise_rule(s->K, s->N, threads, kSplitOutputsMinWeightBytes, pointwise_split_rows(node, s->N)),
      s->stride, s->in_pixels);
}

std::optional<int> pointwise_output_team(const ir::Node& node, int threads) {
  const std::optional<PointwiseConvShape> s = pointwise_conv_shape(node, /*strided=*/true);
  if (threads < 2 || !s) return std::nullopt;
  if (!pointwise_rule(s->K, s->N, threads, kSplitOutputsMinWeightBytes, pointwise_split_rows(node, s->N)).split_outputs)
    return std::nullopt;
  const int64_t outputs = s->images * s->pixels * s->N;
  const int team = product_team(outputs, outputs * s->K, threads);
  return team > 1 ? std::optional<int>(team) : std::nullopt;
}

void add_pointwise_conv_kernels(std::vector<KernelFactory>& table) {
  // Two names, so that `--pair-disable` can measure the scaled form (efficientnet's
  // squeeze-excitation folded into its project convs, src/lower/fold_channel_scale.cpp) apart.
  auto scaled = [](const ir::Node& n) { return n.num_inputs() > 4 && n.input(4); };
  const auto choose = pointwise_chooser(pointwise_dims, kSplitOutputsMinWeightBytes);
  const auto choices = pointwise_lister(pointwise_dims);
  for (const bool with_scale : {false, true}) {
    table.push_back({.domain = "kiln",
                     .op = "FusedConv",
                     .make = nullptr,
                     .name = with_scale ? "kiln_pointwise_scaled" : "kiln_pointwise",
                     .choose = choose,
                     .make_spec = [=](const ir::Node& n, const plan::KernelSpec& s) -> std::unique_ptr<Kernel> {
                       const auto kn = pointwise_dims(n);
                       if (scaled(n) != with_scale || !kn) return nullptr;
                       const auto c = pointwise_choice_of(s, kn->first, kn->second);
                       return c ? make_kiln_pointwise(n, s.threads, 0, &*c) : nullptr;
                     },
                     .choices = choices,
                     .thread_params = {"depth", "split"}});
  }
}

}  // namespace kiln::backends::cpu
