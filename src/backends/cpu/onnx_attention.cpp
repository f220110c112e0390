// The ONNX Attention op (opsets 23, 24), float32, in the forms the optimizer leaves it in
// (passes/onnx_attention.cpp turns the plain ones into kiln.Attention): grouped KV heads, a KV
// cache (past_key/value in, present_key/value out), causal masking, softcap, boolean or
// additive masks, nonpad_kv_seqlen, 3-D or 4-D. The semantics are src/ops/attention.cpp's.
//
// Rows are independent: each (batch, head, query) row computes its scores as dot products
// along the head dim against the keys it may see (the causal frontier and the padding limit cut
// the loop short, not only the softmax), then the softmax and the weighted sum of value rows,
// all in one pass over contiguous memory; the row count is split over the team. A decoding step
// (one query row per head) is bound by reading the cache, which this reads once per row.
#include <cmath>
#include <limits>
#include <memory>

#include "backends/cpu/kernels.h"
#include "backends/cpu/onednn_common.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/simd.h"
#include "backends/cpu/simd_reduce.h"

namespace kiln::backends::cpu {

namespace {

struct Shape {
  int64_t B = 0, Hq = 0, Hkv = 0, Sq = 0, Skv = 0, P = 0, D = 0, Dv = 0;
  bool three_d = false;
  int64_t md[4] = {1, 1, 1, 1};  // the mask right-aligned against [B, Hq, Sq, T]
  bool mask = false, bool_mask = false, nonpad = false, causal = false;
  float scale = 1.f, softcap = 0.f;
};

KILN_SIMD float row_dot(const float* a, const float* b, int64_t n) { return simd::dot(a, b, n); }

KILN_SIMD void axpy(float a, const float* x, float* y, int64_t n) {
  for (int64_t d = 0; d < n; ++d) y[d] += a * x[d];
}

class OnnxAttentionKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  OnnxAttentionKernel(Shape s, int threads) : s_(s), threads_(threads) {}

  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out) const override {
    const Shape& s = s_;
    const int64_t T = s.P + s.Skv;
    auto input = [&](size_t i) { return in.size() > i && in[i] ? in[i] : nullptr; };
    auto output = [&](size_t i) { return out.size() > i && out[i] ? out[i] : nullptr; };
    // The keys and values every head reads, past then new: the present outputs when asked for.
    std::vector<float> own_k, own_v;
    float* pk = output(1) ? output(1)->data<float>() : (own_k.resize(static_cast<size_t>(s.B * s.Hkv * T * s.D)), own_k.data());
    float* pv = output(2) ? output(2)->data<float>() : (own_v.resize(static_cast<size_t>(s.B * s.Hkv * T * s.Dv)), own_v.data());
    const float *k = in[1]->data<float>(), *v = in[2]->data<float>();
    const float* past_k = input(4) ? input(4)->data<float>() : nullptr;
    const float* past_v = input(5) ? input(5)->data<float>() : nullptr;
    parallel_for(s.B * s.Hkv, threads_, [&](int64_t b0, int64_t e0) {
      for (int64_t bh = b0; bh < e0; ++bh) {
        const int64_t b = bh / s.Hkv, h = bh % s.Hkv;
        copy_rows(past_k, k, b, h, s.D, pk + bh * T * s.D);
        copy_rows(past_v, v, b, h, s.Dv, pv + bh * T * s.Dv);
      }
    });
    const float* q = in[0]->data<float>();
    const Tensor* mask = input(3);
    const int64_t* nonpad = input(6) ? input(6)->data<int64_t>() : nullptr;
    float* y = out[0]->data<float>();
    const int64_t rows = s.B * s.Hq * s.Sq, group = s.Hq / s.Hkv;
    const float ninf = -std::numeric_limits<float>::infinity();
    parallel_for(rows, threads_, [&](int64_t r0, int64_t r1) {
      std::vector<float> p(static_cast<size_t>(T)), qs(static_cast<size_t>(s.D));
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t i = r % s.Sq, h = r / s.Sq % s.Hq, b = r / (s.Sq * s.Hq);
        const float* kb = pk + (b * s.Hkv + h / group) * T * s.D;
        const float* vb = pv + (b * s.Hkv + h / group) * T * s.Dv;
        const float* qr = q + at(s.Hq, s.Sq, s.D, b, h, i);
        for (int64_t d = 0; d < s.D; ++d) qs[static_cast<size_t>(d)] = qr[d] * s.scale;
        // Keys past `visible` are masked for this row whatever else holds.
        int64_t visible = T;
        if (nonpad) visible = std::min(visible, std::max<int64_t>(0, nonpad[b]));
        if (s.causal) {
          const int64_t offset = past_k ? s.P : nonpad ? nonpad[b] - s.Sq : 0;
          visible = std::min(visible, std::max<int64_t>(0, i + offset + 1));
        }
        if (s.mask) visible = std::min(visible, s.md[3]);
        const int64_t mrow = s.mask ? (((s.md[0] == 1 ? 0 : b) * s.md[1] + (s.md[1] == 1 ? 0 : h)) * s.md[2] +
                                       (s.md[2] == 1 ? 0 : i)) * s.md[3]
                                    : 0;
        float mx = ninf;
        for (int64_t j = 0; j < visible; ++j) {
          float x = row_dot(qs.data(), kb + j * s.D, s.D);
          if (s.bool_mask) x = mask->data<bool>()[mrow + j] ? x : ninf;
          else if (s.mask) x += mask->data<float>()[mrow + j];
          if (s.softcap > 0.f) x = std::tanh(x / s.softcap) * s.softcap;
          p[static_cast<size_t>(j)] = x;
          mx = std::max(mx, x);
        }
        float* yr = y + at(s.Hq, s.Sq, s.Dv, b, h, i);
        for (int64_t d = 0; d < s.Dv; ++d) yr[d] = 0.f;
        if (visible == 0 || mx == ninf) {  // every key masked: 0 / 0, as the reference gives
          for (int64_t d = 0; d < s.Dv; ++d) yr[d] = std::numeric_limits<float>::quiet_NaN();
          continue;
        }
        float sum = 0.f;
        for (int64_t j = 0; j < visible; ++j) sum += p[static_cast<size_t>(j)] = std::exp(p[static_cast<size_t>(j)] - mx);
        const float inv = 1.f / sum;
        for (int64_t j = 0; j < visible; ++j) axpy(p[static_cast<size_t>(j)] * inv, vb + j * s.Dv, yr, s.Dv);
      }
    });
  }

 private:
  // Offset of row (b, h, i) of a 4-D [B, H, S, E] tensor or a 3-D [B, S, H * E] one.
  int64_t at(int64_t H, int64_t S, int64_t E, int64_t b, int64_t h, int64_t i) const {
    return s_.three_d ? ((b * S + i) * H + h) * E : ((b * H + h) * S + i) * E;
  }
  // Head (b, h)'s T rows of width E: the past's, then the new ones.
  void copy_rows(const float* past, const float* now, int64_t b, int64_t h, int64_t E, float* dst) const {
    const Shape& s = s_;
    if (past) std::copy(past + (b * s.Hkv + h) * s.P * E, past + (b * s.Hkv + h + 1) * s.P * E, dst);
    for (int64_t t = 0; t < s.Skv; ++t) {
      const float* src = now + at(s.Hkv, s.Skv, E, b, h, t);
      std::copy(src, src + E, dst + (s.P + t) * E);
    }
  }

  Shape s_;
  int threads_;
};

std::unique_ptr<Kernel> make_onnx_attention(const ir::Node& n, int threads) {
  if (n.num_inputs() < 3 || n.num_outputs() < 1) return nullptr;
  if (n.num_outputs() > 3 && n.output(3)) return nullptr;  // the qk_matmul_output stays on the reference kernel
  for (int i = 0; i < 3; ++i)
    if (!dnnl_util::static_float(n.input(i))) return nullptr;
  for (int i = 0; i < std::min(n.num_outputs(), 3); ++i)
    if (n.output(i) && !dnnl_util::static_float(n.output(i))) return nullptr;
  const std::vector<int64_t> q = n.input(0)->type.static_dims(), k = n.input(1)->type.static_dims(),
                             v = n.input(2)->type.static_dims();
  if (q.size() != k.size() || q.size() != v.size() || (q.size() != 3 && q.size() != 4)) return nullptr;
  Shape s;
  s.three_d = q.size() == 3;
  if (s.three_d) {
    const int64_t hq = n.attr_int("q_num_heads", 0), hkv = n.attr_int("kv_num_heads", 0);
    if (hq <= 0 || hkv <= 0 || q[2] % hq || k[2] % hkv || v[2] % hkv) return nullptr;
    s.B = q[0], s.Hq = hq, s.Hkv = hkv, s.Sq = q[1], s.Skv = k[1], s.D = q[2] / hq, s.Dv = v[2] / hkv;
    if (k[0] != s.B || v[0] != s.B || v[1] != s.Skv || k[2] / hkv != s.D) return nullptr;
  } else {
    s.B = q[0], s.Hq = q[1], s.Hkv = k[1], s.Sq = q[2], s.Skv = k[2], s.D = q[3], s.Dv = v[3];
    if (k[0] != s.B || v[0] != s.B || v[1] != s.Hkv || v[2] != s.Skv || k[3] != s.D) return nullptr;
  }
  if (s.Hkv <= 0 || s.Hq % s.Hkv || s.D <= 0) return nullptr;
  const ir::Value *past_k = n.num_inputs() > 4 ? n.input(4) : nullptr, *past_v = n.num_inputs() > 5 ? n.input(5) : nullptr;
  if (!past_k != !past_v) return nullptr;
  if (past_k) {
    if (!dnnl_util::static_float(past_k) || !dnnl_util::static_float(past_v)) return nullptr;
    const std::vector<int64_t> pk = past_k->type.static_dims(), pv = past_v->type.static_dims();
    if (pk.size() != 4 || pk[0] != s.B || pk[1] != s.Hkv || pk[3] != s.D) return nullptr;
    s.P = pk[2];
    if (pv != std::vector<int64_t>{s.B, s.Hkv, s.P, s.Dv}) return nullptr;
  }
  const int64_t T = s.P + s.Skv;
  if (const ir::Value* nonpad = n.num_inputs() > 6 ? n.input(6) : nullptr) {
    if (!nonpad->type.is_static() || nonpad->type.dtype != DType::Int64 ||
        nonpad->type.static_dims() != std::vector<int64_t>{s.B} || n.owner()->opset("") < 24)
      return nullptr;
    s.nonpad = true;
  }
  if (const ir::Value* mask = n.num_inputs() > 3 ? n.input(3) : nullptr) {
    if (!mask->type.is_static() || (mask->type.dtype != DType::Bool && mask->type.dtype != DType::Float)) return nullptr;
    std::vector<int64_t> md = mask->type.static_dims();
    if (md.size() < 2 || md.size() > 4) return nullptr;
    while (md.size() < 4) md.insert(md.begin(), 1);
    const int64_t full[3] = {s.B, s.Hq, s.Sq};
    for (int i = 0; i < 3; ++i)
      if (md[i] != 1 && md[i] != full[i]) return nullptr;
    if (md[3] > T) return nullptr;
    std::copy(md.begin(), md.end(), s.md);
    s.mask = true;
    s.bool_mask = mask->type.dtype == DType::Bool;
  }
  const int64_t mode = n.attr_int("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3) return nullptr;
  s.causal = n.attr_int("is_causal", 0) != 0;
  s.softcap = n.attr_float("softcap", 0.f);
  // ONNX caps the masked scores too (tanh(-inf) * cap = -cap: masked keys keep a weight), which
  // cutting the masked keys out would not give; that combination stays on the reference kernel.
  if (s.softcap > 0.f && (s.mask || s.causal || s.nonpad)) return nullptr;
  s.scale = n.has_attr("scale") ? n.attr_float("scale", 1.f) : static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.D)));
  return std::make_unique<OnnxAttentionKernel>(s, threads);
}

}  // namespace

void add_onnx_attention_kernels(std::vector<KernelFactory>& table) {
  table.push_back({"", "Attention", make_onnx_attention});
}

}  // namespace kiln::backends::cpu
