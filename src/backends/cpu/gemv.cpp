// Matrix-vector products with constant weights, bound by reading the weights once:
//  - Gemm or kiln.FusedGemm with a single row (M == 1): the classifier of every CNN here
//    (1280 -> 1000), an MLP's layers at batch 1;
//  - a 1x1 Conv / kiln.FusedConv on a 1x1 image: efficientnet's squeeze-excitation convs, where
//    a oneDNN convolution spends more time on its set-up than on its ~20k multiply-adds.
// The weights are repacked at creation into column blocks (alpha folded in, packed_gemv.h);
// bias and activation follow per block; threads split the blocks.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "backends/cpu/kernels.h"
#include "backends/cpu/activation_apply.h"
#include "backends/cpu/gemv_form.h"
#include "backends/cpu/node_args.h"
#include "backends/cpu/packed_gemv.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/simd.h"
#include "ops/core/activation.h"

namespace kiln::backends::cpu {

namespace {

// The epilogue on a block's outputs: bias, then the activation.
KILN_SIMD void finish(const ops::Activation& act, const float* acc, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = acc[i] + (b ? b[i] : 0.f);
  apply_activation(act, y, n);
}

class GemvKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  // Output n = alpha * dot(W[n], x), W [N, K] row-major at `w`, or with `k_major` [K, N]
  // (a Gemm's B not transposed). Packed straight from the model's tensor: an [N, K] copy in
  // between would double the fresh memory session creation touches for it.
  GemvKernel(const float* w, bool k_major, float alpha, std::vector<float> bias, int64_t n, int64_t k, int threads,
             ops::Activation act = {ops::Activation::None})
      : w_(w, k_major, alpha, n, k, "kiln_gemv/blocks"), bias_(std::move(bias)), threads_(threads),
        act_(act) {}
  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const float* x = inputs[0]->data<float>();
    float* y = outputs[0]->data<float>();
    const float* b = bias_.empty() ? nullptr : bias_.data();
    const int threads = kiln_kernels::gemv_threads(w_.layout(), threads_);
    kiln_kernels::gemv(
        w_.layout(), x, threads,
        [&](int64_t blk, const float* xv, int64_t k0, int64_t k1, float* acc) { w_.block(blk, xv, k0, k1, acc); },
        [&](int64_t parts, auto&& f) { parallel_for(parts, threads, f); },
        [&](const float* acc, int64_t n0, int64_t valid) { finish(act_, acc, b ? b + n0 : nullptr, y + n0, valid); });
  }

 private:
  PackedGemv w_;
  std::vector<float> bias_;
  int threads_;
  ops::Activation act_;
};

const Tensor* float_constant(const ir::Value* v) {
  if (!v || !v->is_constant() || v->type.dtype != DType::Float || !v->type.is_static()) return nullptr;
  return &v->constant();
}

std::unique_ptr<Kernel> make_gemv(const ir::Node& node, int threads) {
  std::optional<GemvForm> f = gemv_form(node);
  if (!f) return nullptr;
  return std::make_unique<GemvKernel>(f->w, f->k_major, f->alpha, std::move(f->bias), f->n, f->k, threads, f->act);
}

// A 1x1 convolution of a 1x1 image (NCHW or channels-last, the same bytes): W [O, C, 1, 1] is
// already [O, C] rows.
std::unique_ptr<Kernel> make_gemv_conv(const ir::Node& node, int threads) {
  if (node.num_inputs() < 2 || node.num_outputs() != 1) return nullptr;
  for (int i = 3; i < node.num_inputs(); ++i)  // a residual Z or channel scale S
    if (node.input(i)) return nullptr;
  const ir::Value* x = node.input(0);
  const Tensor* w = float_constant(node.input(1));
  const ir::Value* b = node.num_inputs() >= 3 ? node.input(2) : nullptr;
  if (!w || !plain_elem_size(x) || x->type.dtype != DType::Float || !plain_elem_size(node.output(0))) return nullptr;
  if (node.attr_int("group", 1) != 1) return nullptr;
  const auto xd = x->type.static_dims(), wd = node.input(1)->type.static_dims(), yd = node.output(0)->type.static_dims();
  if (xd.size() != 4 || wd.size() != 4 || yd.size() != 4 || wd[2] != 1 || wd[3] != 1) return nullptr;
  const int64_t O = wd[0], C = wd[1];
  const bool nhwc = node.attr_int("channels_last", 0) != 0;
  const std::vector<int64_t> want_x = nhwc ? std::vector<int64_t>{1, 1, 1, C} : std::vector<int64_t>{1, C, 1, 1};
  const std::vector<int64_t> want_y = nhwc ? std::vector<int64_t>{1, 1, 1, O} : std::vector<int64_t>{1, O, 1, 1};
  if (xd != want_x || yd != want_y || C == 0 || O == 0) return nullptr;
  std::vector<float> bias;
  if (b) {
    const Tensor* bt = float_constant(b);
    if (!bt || bt->numel() != O) return nullptr;
    bias.assign(bt->data<float>(), bt->data<float>() + O);
  }
  const std::optional<ops::Activation> act = epilogue_of(node);
  if (!act) return nullptr;
  return std::make_unique<GemvKernel>(w->data<float>(), false, 1.f, std::move(bias), O, C, threads, *act);
}

}  // namespace

std::optional<GemvForm> gemv_form(const ir::Node& node) {
  if (node.num_inputs() < 2 || node.num_outputs() != 1) return std::nullopt;
  const ir::Value* a = node.input(0);
  const Tensor* bt = float_constant(node.input(1));
  if (!bt || !plain_elem_size(a) || a->type.dtype != DType::Float || !plain_elem_size(node.output(0))) return std::nullopt;
  const auto ad = a->type.static_dims(), bd = node.input(1)->type.static_dims();
  if (ad.size() != 2 || bd.size() != 2) return std::nullopt;
  const bool ta = node.attr_int("transA", 0) != 0, tb = node.attr_int("transB", 0) != 0;
  const int64_t M = ad[ta ? 1 : 0], K = ad[ta ? 0 : 1], N = bd[tb ? 0 : 1];
  if (M != 1 || bd[tb ? 1 : 0] != K || K == 0 || N == 0) return std::nullopt;
  GemvForm f;
  f.w = bt->data<float>();
  f.k_major = !tb;
  f.alpha = node.attr_float("alpha", 1.f);
  f.n = N;
  f.k = K;
  const float beta = node.attr_float("beta", 1.f);
  if (node.num_inputs() >= 3 && node.input(2) && beta != 0.f) {
    const Tensor* c = float_constant(node.input(2));
    if (!c) return std::nullopt;
    const auto cd = node.input(2)->type.static_dims();
    if (cd.size() > 2 || (cd.size() == 2 && cd[0] != 1)) return std::nullopt;
    const int64_t cn = cd.empty() ? 1 : cd.back();
    if (cn != 1 && cn != N) return std::nullopt;
    f.bias.resize(static_cast<size_t>(N));
    for (int64_t n = 0; n < N; ++n) f.bias[n] = beta * c->data<float>()[cn == 1 ? 0 : n];
  }
  // kiln.FusedGemm: a Gemm and its activation (mlp_small's hidden layers), the epilogue per block.
  const std::optional<ops::Activation> act = epilogue_of(node);
  if (!act) return std::nullopt;
  f.act = *act;
  return f;
}

void add_gemv_kernels(std::vector<KernelFactory>& table) {
  table.push_back({"", "Gemm", make_gemv, "gemv"});
  table.push_back({"kiln", "FusedGemm", make_gemv, "gemv"});
  table.push_back({"", "Conv", make_gemv_conv, "gemv"});
  table.push_back({"kiln", "FusedConv", make_gemv_conv, "gemv"});
}

}  // namespace kiln::backends::cpu
