// kiln.NhwcMaxPool / NhwcAveragePool, 2-D: [N, H, W, C] -> [N, OH, OW, C]. Each output pixel
// folds its window's channel vectors (clipped to the input; max ignores padding, the average
// divides by ONNX's count: valid taps, or with count_include_pad the taps inside the padded
// input). Threads split output rows in order, so each reads the rows its core produced (see
// kParallelMinElements). Faster than oneDNN 2.6's NHWC pooling, so first: squeezenet1_1's
// first MaxPool (64 x 111 x 111, 3x3 stride 2) 272-282 vs 376-406 us at 1 thread (make
// kernel-bench, MaxPool3x3s2_64x111).
#include <algorithm>
#include <limits>
#include <memory>

#include "backends/cpu/kernels.h"
#include "backends/cpu/onednn_common.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/simd.h"

namespace kiln::backends::cpu {

namespace {

struct Window {
  int64_t kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;  // kernel, strides, dilations, pads
  int64_t H, W, C, OH, OW;
  bool is_max, count_include_pad;
};

// One output row: y[ow, :] over every ow, from input image x ([H, W, C]).
KILN_SIMD void pool_row(const Window& g, const float* __restrict x, int64_t oh, float* __restrict y) {
  const int64_t C = g.C;
  const int64_t h0 = oh * g.sh - g.pt;
  int64_t khl = 0, khh = g.kh;  // the taps inside the input along H
  while (khl < khh && h0 + khl * g.dh < 0) ++khl;
  while (khh > khl && h0 + (khh - 1) * g.dh >= g.H) --khh;
  const int64_t padded_h = std::min(g.kh, (g.H + g.pb - h0 + g.dh - 1) / g.dh);
  for (int64_t ow = 0; ow < g.OW; ++ow) {
    float* o = y + ow * C;
    const int64_t w0 = ow * g.sw - g.pl;
    int64_t kwl = 0, kwh = g.kw;
    while (kwl < kwh && w0 + kwl * g.dw < 0) ++kwl;
    while (kwh > kwl && w0 + (kwh - 1) * g.dw >= g.W) --kwh;
    if (khl >= khh || kwl >= kwh) {  // a window wholly in the padding
      std::fill(o, o + C, g.is_max ? std::numeric_limits<float>::lowest() : 0.f);
      continue;
    }
    const float* first = x + ((h0 + khl * g.dh) * g.W + (w0 + kwl * g.dw)) * C;
    for (int64_t c = 0; c < C; ++c) o[c] = first[c];
    for (int64_t i = khl; i < khh; ++i)
      for (int64_t j = kwl; j < kwh; ++j) {
        if (i == khl && j == kwl) continue;
        const float* p = x + ((h0 + i * g.dh) * g.W + (w0 + j * g.dw)) * C;
        if (g.is_max) for (int64_t c = 0; c < C; ++c) o[c] = std::max(o[c], p[c]);
        else for (int64_t c = 0; c < C; ++c) o[c] += p[c];
      }
    if (!g.is_max) {
      const int64_t padded_w = std::min(g.kw, (g.W + g.pr - w0 + g.dw - 1) / g.dw);
      const float n = static_cast<float>(g.count_include_pad ? padded_h * padded_w : (khh - khl) * (kwh - kwl));
      const float inv = 1.f / n;
      for (int64_t c = 0; c < C; ++c) o[c] *= inv;
    }
  }
}

class NhwcPoolKernel : public Kernel {
 public:
  NhwcPoolKernel(Window g, int64_t n, int threads) : g_(g), n_(n), threads_(threads) {}

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const float* x = inputs[0]->data<float>();
    float* y = outputs[0]->data<float>();
    const int64_t rows = n_ * g_.OH;
    const int team = rows * g_.OW * g_.C >= kParallelMinElements ? threads_ : 1;
    parallel_for(rows, team, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const int64_t img = r / g_.OH, oh = r % g_.OH;
        pool_row(g_, x + img * g_.H * g_.W * g_.C, oh, y + r * g_.OW * g_.C);
      }
    });
  }

 private:
  Window g_;
  int64_t n_;
  int threads_;
};

std::unique_ptr<Kernel> make_nhwc_pool(const ir::Node& node, int threads) {
  if (node.num_inputs() != 1 || node.num_outputs() != 1) return nullptr;
  const ir::Value* x = node.input(0);
  const ir::Value* y = node.output(0);
  if (!dnnl_util::static_float(x) || !dnnl_util::static_float(y)) return nullptr;
  const auto xd = x->type.static_dims(), yd = y->type.static_dims();
  if (xd.size() != 4 || yd.size() != 4 || yd[0] != xd[0] || yd[3] != xd[3]) return nullptr;
  const bool is_max = node.op_type() == "NhwcMaxPool";
  const auto k = node.attr_ints("kernel_shape");
  const auto s = node.attr_ints("strides", {1, 1});
  const auto d = is_max ? node.attr_ints("dilations", {1, 1}) : std::vector<int64_t>{1, 1};
  auto pads = node.attr_ints("pads", {0, 0, 0, 0});
  if (k.size() != 2 || s.size() != 2 || d.size() != 2 || pads.size() != 4) return nullptr;
  for (int i = 0; i < 2; ++i)
    if (k[i] < 1 || s[i] < 1 || d[i] < 1) return nullptr;
  const std::string ap = node.attr_string("auto_pad", "NOTSET");
  const int64_t in[2] = {xd[1], xd[2]}, out[2] = {yd[1], yd[2]};
  if (ap == "VALID") {
    pads = {0, 0, 0, 0};
  } else if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {  // as the reference's pool_geom
    for (int i = 0; i < 2; ++i) {
      const int64_t total = std::max<int64_t>(0, (out[i] - 1) * s[i] + (k[i] - 1) * d[i] + 1 - in[i]);
      pads[i] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[i + 2] = total - pads[i];
    }
  } else if (ap != "NOTSET") {
    return nullptr;
  }
  Window g{k[0], k[1], s[0], s[1], d[0], d[1], pads[0], pads[1], pads[2], pads[3],
           xd[1], xd[2], xd[3], yd[1], yd[2], is_max, node.attr_int("count_include_pad", 0) != 0};
  return std::make_unique<NhwcPoolKernel>(g, xd[0], threads);
}

}  // namespace

void add_nhwc_pool_kernels(std::vector<KernelFactory>& table) {
  table.push_back({"kiln", "NhwcMaxPool", make_nhwc_pool, "kiln"});
  table.push_back({"kiln", "NhwcAveragePool", make_nhwc_pool, "kiln"});
}

}  // namespace kiln::backends::cpu
