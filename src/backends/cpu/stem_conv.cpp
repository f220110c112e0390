// The stem conv (stem_conv.h): the kernel is kiln_kernels::StemLayout (src/kernels/stem_rows.h,
// which emitted C++ calls too); this file picks the convs it runs and runs it on whole images.
#include "backends/cpu/stem_conv.h"

#include <algorithm>
#include <utility>

#include "backends/cpu/activation_apply.h"
#include "backends/cpu/avx512_activation.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/row_conv.h"
#include "backends/cpu/simd.h"

namespace kiln::backends::cpu {

namespace {

std::unique_ptr<Kernel> make_stem_conv(const ir::Node& node, int threads) {
  std::unique_ptr<StemShape> s = stem_shape(node);
  const std::optional<ops::Activation> act = s ? epilogue_of(node) : std::nullopt;
  if (!act) return nullptr;
  const ir::Value* b = node.input(2);
  StemConv conv(*s, node.input(1)->constant().data<float>(), b ? b->constant().data<float>() : nullptr, *act);
  return std::make_unique<RowConvKernel<StemConv>>(std::move(conv), *row_conv_geometry(node),
                                                    node.input(0)->type.static_dims()[0], threads);
}

}  // namespace

StemConv::StemConv(const StemShape& s, const float* weights, const float* bias, ops::Activation act, bool planar)
    : layout_(s, planar), act_(act) {
  if (s.KH < 1 || s.KH > kiln_kernels::kStemMaxKernelRows) throw Error("stem conv: kernel height out of range");
  if (s.C < 1 || s.C > kiln_kernels::kStemMaxChannels) throw Error("stem conv: input channels out of range");
  bias_.assign(static_cast<size_t>(layout_.bias_size()), 0.f);
  if (bias) std::copy(bias, bias + s.OC, bias_.begin());
  w_ = packed_floats(static_cast<size_t>(layout_.packed_size()), planar ? "kiln_stem/planar" : "kiln_stem/taps",
                     [&](float* w) { layout_.pack(weights, w); });
}

void StemConv::rows(const float* x, int64_t x_row0, float* y, int64_t oy0, int64_t oy1, int64_t ring) const {
  layout_.rows(w_.get(), bias_.data(), kernel_act(act_.kind), act_.a, act_.b, x, x_row0, y, oy0, oy1, ring);
  if (!activation_in_registers(act_)) apply_activation(act_, y, (oy1 - oy0) * shape().OW * shape().OC);
}

std::unique_ptr<StemShape> stem_shape(const ir::Node& node) {
  if (!has_avx512()) return nullptr;
  const std::optional<RowConvGeometry> g = row_conv_geometry(node);
  if (!g || g->G != 1 || node.input(1)->type.static_dims()[1] != g->C) return nullptr;
  auto s = std::make_unique<StemShape>();
  s->H = g->H, s->W = g->W, s->C = g->C, s->OH = g->OH, s->OW = g->OW, s->OC = g->OC, s->KH = g->KH, s->KW = g->KW;
  s->SH = g->SH, s->SW = g->SW, s->PT = g->PT, s->PL = g->PL;
  // 1x1 convs are kiln_pointwise's (stem_fits declines them).
  return kiln_kernels::stem_fits(*s) ? std::move(s) : nullptr;
}

void add_stem_conv_kernels(std::vector<KernelFactory>& table) {
  table.push_back({"kiln", "FusedConv", make_stem_conv, "kiln_stem_conv"});
}

}  // namespace kiln::backends::cpu
