// Channels-last depthwise convolution: the AVX-512 rows are kiln_kernels::depthwise_rows
// (src/kernels/depthwise_rows.h, which emitted C++ calls too); a loop a channel at a time serves
// CPUs without AVX-512. The 5x5 form runs efficientnet_b0's depthwise convs faster than oneDNN
// 2.6's, alone and in the model (bench/results/history-code-comments.md).
#include "backends/cpu/depthwise_conv.h"

#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <utility>

#include "backends/cpu/activation_apply.h"
#include "backends/cpu/avx512_activation.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/row_conv.h"
#include "backends/cpu/simd.h"

namespace kiln::backends::cpu {

namespace {

// The same for CPUs without AVX-512, a channel at a time.
KILN_SIMD void row_plain(const DepthwiseShape& s, const float* w, const float* bias, const float* const* in, float* y) {
  const int64_t C = s.C, KK = s.KH * s.KW;
  for (int64_t ox = 0; ox < s.OW; ++ox) {
    float* out = y + ox * C;
    for (int64_t c = 0; c < C; ++c) out[c] = bias[c];
    for (int64_t ky = 0; ky < s.KH; ++ky) {
      if (!in[ky]) continue;
      for (int64_t kx = 0; kx < s.KW; ++kx) {
        const int64_t ix = ox * s.SW - s.PL + kx * s.DW;
        if (ix < 0 || ix >= s.W) continue;
        const float* px = in[ky] + ix * C;
        const int64_t tap = ky * s.KW + kx;
        for (int64_t c = 0; c < C; ++c) out[c] += px[c] * w[(c / 16 * KK + tap) * 16 + c % 16];
      }
    }
  }
}

}  // namespace

std::string depthwise_split(const ir::Node& node, int threads) {
  const std::optional<ops::Activation> act = epilogue_of(node);
  return act ? row_conv_split(node, threads, activation_in_registers(*act)) : "rows";
}

namespace {
// Up to 5x5 (efficientnet_b0's), which row_kxk keeps in registers: taller kernels would take
// the generic row loop, which is slower than oneDNN's; so would dilated ones other than
// row_kxk's (3x3 and 5x5 at stride 1 and dilation 2: a segmentation backbone's last stage).
bool kiln_depthwise_takes(const DepthwiseShape* s) {
  if (!s || s->KH * s->KW > 25) return false;
  return s->DW == 1 || (s->DW == 2 && s->SW == 1 && s->KH == s->KW && (s->KW == 3 || s->KW == 5));
}
}  // namespace

std::optional<int> depthwise_channel_team(const ir::Node& node, int threads) {
  if (!kiln_depthwise_takes(depthwise_shape(node, true).get()) || !epilogue_of(node) || !has_avx512() ||
      depthwise_split(node, threads) != "channels")
    return std::nullopt;
  return channel_split_team(*row_conv_geometry(node, true), threads);
}

std::unique_ptr<Kernel> make_kiln_depthwise(const ir::Node& node, int threads, const std::string& split) {
  std::unique_ptr<DepthwiseShape> s = depthwise_shape(node, true);
  if (!kiln_depthwise_takes(s.get())) return nullptr;
  const ir::Value* b = node.input(2);
  const std::optional<ops::Activation> act = epilogue_of(node);
  if (!act) return nullptr;
  DepthwiseConv conv(*s, node.input(1)->constant().data<float>(), b ? b->constant().data<float>() : nullptr, *act);
  const int64_t images = node.input(0)->type.static_dims()[0];
  // The channel split runs on the AVX-512 rows; elsewhere the team splits the rows.
  if (split == "channels" && has_avx512())
    return std::make_unique<ChannelSplitKernel<DepthwiseConv>>(std::move(conv), *row_conv_geometry(node, true), *act,
                                                               activation_in_registers(*act), images, threads);
  return std::make_unique<RowConvKernel<DepthwiseConv>>(std::move(conv), *row_conv_geometry(node, true), images, threads);
}

DepthwiseConv::DepthwiseConv(const DepthwiseShape& s, const float* weights, const float* bias, ops::Activation act)
    : s_(s), act_(act) {
  if (s.KH < 1 || s.KH > kMaxKernelRows) throw Error("depthwise conv: kernel height out of range");
  const int64_t C16 = (s.C + 15) / 16 * 16;
  w_.resize(static_cast<size_t>(C16 * s.KH * s.KW));
  bias_.resize(static_cast<size_t>(C16));
  kiln_kernels::pack_depthwise(s, weights, bias, w_.data(), bias_.data());
}

void DepthwiseConv::channels(const float* x, float* y, int64_t c0, int64_t c1) const {
  kiln_kernels::depthwise_rows(s_, w_.data(), bias_.data(), kernel_act(act_.kind), act_.a, act_.b, x, 0, y, 0, s_.OH, 0,
                               c0, c1);
}

void DepthwiseConv::rows(const float* x, int64_t x_row0, float* y, int64_t oy0, int64_t oy1, int64_t ring) const {
  const int64_t out_row = s_.OW * s_.C;
  if (has_avx512()) {
    kiln_kernels::depthwise_rows(s_, w_.data(), bias_.data(), kernel_act(act_.kind), act_.a, act_.b, x, x_row0, y, oy0,
                                 oy1, ring);
  } else {
    std::array<const float*, kMaxKernelRows> in{};
    for (int64_t oy = oy0; oy < oy1; ++oy) {
      for (int64_t k = 0; k < s_.KH; ++k) {
        const int64_t iy = oy * s_.SH - s_.PT + k * s_.DH;
        in[k] = iy >= 0 && iy < s_.H ? x + row_slot(iy, x_row0, ring) * s_.W * s_.C : nullptr;
      }
      row_plain(s_, w_.data(), bias_.data(), in.data(), y + (oy - oy0) * out_row);
    }
  }
  // The AVX-512 rows applied the activations they hold in registers; row_plain applies none.
  if (!has_avx512() || !activation_in_registers(act_)) apply_activation(act_, y, (oy1 - oy0) * out_row);
}
std::unique_ptr<DepthwiseShape> depthwise_shape(const ir::Node& node, bool dilated_ok) {
  const std::optional<RowConvGeometry> g = row_conv_geometry(node, dilated_ok);
  if (!g || g->G != g->C || g->OC != g->C || node.input(1)->type.static_dims()[1] != 1 || g->KH > kMaxKernelRows)
    return nullptr;
  auto s = std::make_unique<DepthwiseShape>();
  s->H = g->H, s->W = g->W, s->C = g->C, s->OH = g->OH, s->OW = g->OW, s->KH = g->KH, s->KW = g->KW;
  s->SH = g->SH, s->SW = g->SW, s->PT = g->PT, s->PL = g->PL, s->DH = g->DH, s->DW = g->DW;
  return s;
}

void add_depthwise_kernels(std::vector<KernelFactory>& table) {
  table.push_back({.domain = "kiln",
                   .op = "FusedConv",
                   .make = [](const ir::Node& n, int t) { return make_kiln_depthwise(n, t, depthwise_split(n, t)); },
                   .name = "kiln_depthwise",
                   .choose = [](const ir::Node& n, int threads) -> std::map<std::string, plan::ParamValue> {
                     return {{"split", depthwise_split(n, threads)}};
                   },
                   .make_spec =
                       [](const ir::Node& n, const plan::KernelSpec& s) -> std::unique_ptr<Kernel> {
                     // Plans written before the split was a parameter split the rows.
                     const std::string split = s.params.count("split") ? s.get_string("split") : "rows";
                     if (split != "rows" && split != "channels") return nullptr;
                     return make_kiln_depthwise(n, s.threads, split);
                   },
                   .choices = [](const ir::Node&, int threads) -> plan::ParamChoices {
                     if (threads < 2) return {};
                     return {{"split", {std::string("rows"), std::string("channels")}}};
                   },
                   .thread_params = {"split"}});
}

}  // namespace kiln::backends::cpu
