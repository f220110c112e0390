// MatMul, Gemm and kiln's FusedMatMul / FusedGemm on oneDNN's matmul primitive, float32.
// Constant weights are reordered once, at creation, into the blocked layout the primitive
// prefers (format_tag::any): that is what runs near the FMA peak (../shared/peers/KERNELS.md).
// Gemm's C goes in as the primitive's bias, which may broadcast along any dim, so every C shape
// Gemm allows maps onto it; activations become eltwise post-ops.
#include <memory>
#include <numeric>
#include <optional>

#include "backends/cpu/kernels.h"
#include "backends/cpu/onednn_common.h"

namespace kiln::backends::cpu {

namespace {

using dnnl::memory;
using dt = memory::data_type;

class MatMulKernel : public Kernel {
 public:
  // `weights` / `bias` are set when constant (prepacked); otherwise read from the inputs.
  MatMulKernel(dnnl::matmul::primitive_desc pd, memory::desc src, memory::desc weights_md, memory::desc bias_md,
               memory::desc dst, dnnl_util::PackedConstant weights, dnnl_util::PackedConstant bias, int bias_input)
      : pd_(pd), prim_(pd), src_(src), weights_md_(weights_md), bias_md_(bias_md), dst_(dst), weights_(weights),
        bias_(bias), bias_input_(bias_input) {}

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    auto& eng = dnnl_util::engine();
    dnnl::stream s(eng);
    memory scratchpad(pd_.scratchpad_desc(), eng, dnnl_util::scratch(pd_.scratchpad_desc().get_size()));
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, memory(src_, eng, const_cast<void*>(inputs[0]->raw()))},
        {DNNL_ARG_WEIGHTS, weights_ ? weights_.mem : memory(weights_md_, eng, const_cast<void*>(inputs[1]->raw()))},
        {DNNL_ARG_DST, memory(dst_, eng, outputs[0]->raw())},
        {DNNL_ARG_SCRATCHPAD, scratchpad}};
    if (bias_) args[DNNL_ARG_BIAS] = bias_.mem;
    else if (bias_input_ >= 0)
      args[DNNL_ARG_BIAS] = memory(bias_md_, eng, const_cast<void*>(inputs[bias_input_]->raw()));
    prim_.execute(s, args);
    s.wait();
  }

 private:
  dnnl::matmul::primitive_desc pd_;
  dnnl::matmul prim_;
  memory::desc src_, weights_md_, bias_md_, dst_;
  dnnl_util::PackedConstant weights_, bias_;
  int bias_input_;  // input index of a non-constant bias, or -1
};

memory::dims row_major_strides(const memory::dims& d) {
  memory::dims s(d.size(), 1);
  for (int i = static_cast<int>(d.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * d[i + 1];
  return s;
}

// A matrix operand: its (possibly batched) dims and strides as oneDNN sees them.
struct Operand {
  memory::dims dims, strides;
  memory::desc md() const { return memory::desc(dims, dt::f32, strides); }
};

// `t`'s data as a standalone memory in `want`'s layout, scaled by `scale`.
dnnl_util::PackedConstant prepack(const Tensor& t, const memory::desc& have, const memory::desc& want, float scale) {
  std::vector<float> scaled;
  const void* data = t.raw();
  if (scale != 1.f) {
    scaled.assign(t.data<float>(), t.data<float>() + t.numel());
    for (float& v : scaled) v *= scale;
    data = scaled.data();
  }
  return dnnl_util::pack_constant(data, have, want);
}

struct Spec {
  Operand a, b, y;
  std::optional<Operand> c;  // bias, already broadcast-shaped to y's rank
  const ir::Value* bvalue = nullptr;
  const ir::Value* cvalue = nullptr;
  int c_input = -1;
  float alpha = 1.f, beta = 1.f;
};

std::unique_ptr<Kernel> build(const ir::Node& node, const Spec& s) {
  for (memory::dim d : s.y.dims)
    if (d == 0) return nullptr;  // empty results: nothing for oneDNN to do, the reference copes
  if (s.a.dims.back() == 0) return nullptr;
  const bool b_const = s.bvalue->is_constant();
  const bool c_const = s.cvalue && s.cvalue->is_constant();
  // alpha folds into constant weights; otherwise it needs output scales, which oneDNN applies to
  // the sum with the bias (alpha * (A·B + bias)), so a constant C is prescaled by beta / alpha and
  // a runtime one is left to the reference.
  const bool alpha_in_weights = s.alpha != 1.f && b_const;
  const bool alpha_scales = s.alpha != 1.f && !b_const;
  if (alpha_scales && s.c && (!c_const || s.alpha == 0.f)) return nullptr;
  if (s.c && s.beta != 1.f && !c_const) return nullptr;

  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (alpha_scales) attr.set_output_scales(0, {s.alpha});
  if (node.domain() == "kiln") {
    dnnl::post_ops po;
    if (!dnnl_util::append_activation(node, po)) return nullptr;
    attr.set_post_ops(po);
  }
  try {
    const memory::desc b_any(s.b.dims, dt::f32, memory::format_tag::any);
    const memory::desc w_md = b_const ? b_any : s.b.md();
    auto desc = s.c ? dnnl::matmul::desc(s.a.md(), w_md, s.c->md(), s.y.md())
                    : dnnl::matmul::desc(s.a.md(), w_md, s.y.md());
    dnnl::matmul::primitive_desc pd(desc, attr, dnnl_util::engine());
    dnnl_util::PackedConstant weights, bias;
    if (b_const) weights = prepack(s.bvalue->constant(), s.b.md(), pd.weights_desc(), alpha_in_weights ? s.alpha : 1.f);
    if (c_const)
      bias = prepack(s.cvalue->constant(), s.c->md(), pd.bias_desc(), alpha_scales ? s.beta / s.alpha : s.beta);
    return std::make_unique<MatMulKernel>(pd, s.a.md(), s.b.md(), s.c ? s.c->md() : memory::desc(), s.y.md(),
                                          weights, bias, s.c && !c_const ? s.c_input : -1);
  } catch (const dnnl::error&) {
    return nullptr;  // no oneDNN implementation for this form
  }
}

bool float_inputs(const ir::Node& node, int n) {
  if (node.num_outputs() < 1 || !dnnl_util::static_float(node.output(0))) return false;
  for (int i = 0; i < n; ++i)
    if (!dnnl_util::static_float(node.input(i))) return false;
  return true;
}

// numpy matmul: 1-D operands are promoted to matrices, batch dims broadcast. When B is a plain
// matrix, A's batch dims fold into M: one large GEMM instead of many small ones.
std::unique_ptr<Kernel> make_matmul(const ir::Node& node, int) {
  // kiln.FusedMatMul's optional third input is a [N] bias.
  const ir::Value* bias = node.num_inputs() == 3 ? node.input(2) : nullptr;
  if (node.num_inputs() == 3 && (node.domain() != "kiln" || !dnnl_util::static_float(bias))) return nullptr;
  if ((node.num_inputs() != 2 && !bias) || !float_inputs(node, 2)) return nullptr;
  memory::dims ad = node.input(0)->type.static_dims(), bd = node.input(1)->type.static_dims();
  if (ad.empty() || bd.empty()) return nullptr;
  if (ad.size() == 1) ad.insert(ad.begin(), 1);
  if (bd.size() == 1) bd.push_back(1);
  const memory::dim K = ad.back(), N = bd.back();
  if (bd[bd.size() - 2] != K) return nullptr;
  if (bd.size() == 2) ad = {std::accumulate(ad.begin(), ad.end() - 1, memory::dim{1}, std::multiplies<>()), K};
  const size_t rank = std::max(ad.size(), bd.size());
  if (rank > DNNL_MAX_NDIMS) return nullptr;
  ad.insert(ad.begin(), rank - ad.size(), 1);
  bd.insert(bd.begin(), rank - bd.size(), 1);
  memory::dims yd(rank);
  for (size_t i = 0; i + 2 < rank; ++i) {
    if (ad[i] != bd[i] && ad[i] != 1 && bd[i] != 1) return nullptr;
    yd[i] = std::max(ad[i], bd[i]);
  }
  yd[rank - 2] = ad[rank - 2];
  yd[rank - 1] = N;
  const auto out = node.output(0)->type.static_dims();
  if (std::accumulate(out.begin(), out.end(), int64_t{1}, std::multiplies<>()) !=
      std::accumulate(yd.begin(), yd.end(), int64_t{1}, std::multiplies<>()))
    return nullptr;
  Spec s;
  s.a = {ad, row_major_strides(ad)};
  s.b = {bd, row_major_strides(bd)};
  s.y = {yd, row_major_strides(yd)};
  s.bvalue = node.input(1);
  if (bias) {
    if (bias->type.static_dims() != std::vector<int64_t>{N}) return nullptr;
    memory::dims cd(rank, 1);
    cd.back() = N;
    s.c = Operand{cd, row_major_strides(cd)};
    s.cvalue = bias;
    s.c_input = 2;
  }
  return build(node, s);
}

// Gemm: 2-D A and B, each optionally transposed (a strided view, no copy), C broadcast to
// (M, N) as the primitive's bias, alpha and beta.
std::unique_ptr<Kernel> make_gemm(const ir::Node& node, int) {
  const bool has_c = node.num_inputs() >= 3 && node.input(2);
  if (node.num_inputs() < 2 || !float_inputs(node, 2) || (has_c && !dnnl_util::static_float(node.input(2))))
    return nullptr;
  const auto ad = node.input(0)->type.static_dims(), bd = node.input(1)->type.static_dims();
  if (ad.size() != 2 || bd.size() != 2) return nullptr;
  const bool ta = node.attr_int("transA", 0) != 0, tb = node.attr_int("transB", 0) != 0;
  const memory::dim M = ad[ta ? 1 : 0], K = ad[ta ? 0 : 1], N = bd[tb ? 0 : 1];
  if (bd[tb ? 1 : 0] != K) return nullptr;
  if (node.output(0)->type.static_dims() != std::vector<int64_t>{M, N}) return nullptr;
  Spec s;
  s.a = {{M, K}, ta ? memory::dims{1, M} : memory::dims{K, 1}};
  s.b = {{K, N}, tb ? memory::dims{1, K} : memory::dims{N, 1}};
  s.y = {{M, N}, {N, 1}};
  s.bvalue = node.input(1);
  s.alpha = node.attr_float("alpha", 1.f);
  s.beta = node.attr_float("beta", 1.f);
  if (has_c && s.beta != 0.f) {
    memory::dims cd = node.input(2)->type.static_dims();
    if (cd.size() > 2) return nullptr;
    cd.insert(cd.begin(), 2 - cd.size(), 1);
    if ((cd[0] != 1 && cd[0] != M) || (cd[1] != 1 && cd[1] != N)) return nullptr;
    s.c = Operand{cd, row_major_strides(cd)};
    s.cvalue = node.input(2);
    s.c_input = 2;
  }
  return build(node, s);
}

}  // namespace

void add_onednn_matmul_kernels(std::vector<KernelFactory>& table) {
  table.push_back({"", "MatMul", make_matmul, "onednn"});
  table.push_back({"kiln", "FusedMatMul", make_matmul, "onednn"});
  table.push_back({"", "Gemm", make_gemm, "onednn"});
  table.push_back({"kiln", "FusedGemm", make_gemm, "onednn"});
}

}  // namespace kiln::backends::cpu
