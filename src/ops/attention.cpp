// Attention (opsets 23, 24): scaled dot-product attention with grouped KV heads, a KV cache,
// masks, causal masking, softcap and the optional QK output, as ONNX defines it.
//
// Q [B, Hq, Sq, D], K [B, Hkv, Skv, D], V [B, Hkv, Skv, Dv], or 3-D [B, S, H * D] with the
// q_num_heads / kv_num_heads attributes. past_key / past_value [B, Hkv, P, D] are prepended to
// K / V (present_key / present_value are the results). attn_mask, boolean (true attends) or
// added, broadcasts to [B, Hq, Sq, P + Skv] (a shorter last dim is padded with masked keys).
// is_causal masks key j for query i when j > i + offset: offset is P, or (opset 24, no past)
// nonpad_kv_seqlen[b] - Sq; nonpad_kv_seqlen [B] masks keys past each batch's length. Q heads
// share KV heads in consecutive groups of Hq / Hkv. The scores are the scaled QK product, plus
// the mask, then softcapped (as ONNX 1.20 defines opsets 23 and 24), then the softmax;
// qk_matmul_output_mode picks which of those four the optional fourth output holds.
#include <kiln/error.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

struct AttnShape {
  int64_t B, Hq, Hkv, Sq, Skv, P, D, Dv;
  bool three_d;
};

template <typename Ctx>
AttnShape attn_shape(const Ctx& ctx, const std::vector<int64_t>& q, const std::vector<int64_t>& k,
                     const std::vector<int64_t>& v, const std::vector<int64_t>* past_k) {
  const ir::Node& n = ctx.node();
  if (q.size() != k.size() || q.size() != v.size() || (q.size() != 3 && q.size() != 4))
    ctx.fail("Q, K and V must all be 3-D or all 4-D");
  AttnShape s{};
  s.three_d = q.size() == 3;
  if (s.three_d) {
    const int64_t hq = n.attr_int("q_num_heads", 0), hkv = n.attr_int("kv_num_heads", 0);
    if (hq <= 0 || hkv <= 0) ctx.fail("3-D Q, K and V need the q_num_heads and kv_num_heads attributes");
    if (q[2] % hq || k[2] % hkv || v[2] % hkv) ctx.fail("hidden sizes must be multiples of their head counts");
    s = {q[0], hq, hkv, q[1], k[1], 0, q[2] / hq, v[2] / hkv, true};
    if (k[0] != s.B || v[0] != s.B || v[1] != s.Skv || k[2] / hkv != s.D) ctx.fail("Q, K and V shapes disagree");
  } else {
    s = {q[0], q[1], k[1], q[2], k[2], 0, q[3], v[3], false};
    if (k[0] != s.B || v[0] != s.B || v[1] != s.Hkv || v[2] != s.Skv || k[3] != s.D)
      ctx.fail("Q, K and V shapes disagree");
  }
  if (s.Hkv <= 0 || s.Hq % s.Hkv != 0)
    ctx.fail("q heads (" + std::to_string(s.Hq) + ") must be a multiple of kv heads (" + std::to_string(s.Hkv) + ")");
  if (past_k) {
    if (past_k->size() != 4 || (*past_k)[0] != s.B || (*past_k)[1] != s.Hkv || (*past_k)[3] != s.D)
      ctx.fail("past_key must be [batch, kv_heads, past, head_size]");
    s.P = (*past_k)[2];
  }
  return s;
}

void infer_attention(InferContext& ctx) {
  const ir::TensorType &q = ctx.input(0), &k = ctx.input(1), &v = ctx.input(2);
  if (!dtype_is_float(q.dtype) || k.dtype != q.dtype || v.dtype != q.dtype)
    ctx.fail("Q, K and V must share one floating-point type");
  if (ctx.opset() < 24 && ctx.has_input(6)) ctx.fail("nonpad_kv_seqlen arrived in opset 24");
  if (ctx.has_input(4) != ctx.has_input(5)) ctx.fail("past_key and past_value come together");
  const bool known = q.is_static() && k.is_static() && v.is_static() && (!ctx.has_input(4) || ctx.input(4).is_static());
  if (!known) {
    for (int i = 0; i < ctx.num_outputs(); ++i)
      if (ctx.has_output(i)) ctx.set_output(i, ir::TensorType::unranked(q.dtype));
    return;
  }
  std::vector<int64_t> pk;
  if (ctx.has_input(4)) pk = ctx.input(4).static_dims();
  const AttnShape s = attn_shape(ctx, q.static_dims(), k.static_dims(), v.static_dims(), ctx.has_input(4) ? &pk : nullptr);
  const int64_t T = s.P + s.Skv;
  if (s.three_d) ctx.set_output(0, q.dtype, {s.B, s.Sq, s.Hq * s.Dv});
  else ctx.set_output(0, q.dtype, {s.B, s.Hq, s.Sq, s.Dv});
  if (ctx.has_output(1)) ctx.set_output(1, q.dtype, {s.B, s.Hkv, T, s.D});
  if (ctx.has_output(2)) ctx.set_output(2, q.dtype, {s.B, s.Hkv, T, s.Dv});
  if (ctx.has_output(3)) ctx.set_output(3, q.dtype, {s.B, s.Hq, s.Sq, T});
}

// Element (b, h, s, d) of a 4-D [B, H, S, D] tensor, or of a 3-D [B, S, H * D] one.
inline int64_t at(bool three_d, int64_t H, int64_t S, int64_t D, int64_t b, int64_t h, int64_t s, int64_t d) {
  return three_d ? ((b * S + s) * H + h) * D + d : ((b * H + h) * S + s) * D + d;
}

void attention_kernel(KernelContext& ctx) {
  const Tensor &q = ctx.input(0), &k = ctx.input(1), &v = ctx.input(2);
  const Tensor* mask = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  const Tensor* past_k = ctx.has_input(4) ? &ctx.input(4) : nullptr;
  const Tensor* past_v = ctx.has_input(5) ? &ctx.input(5) : nullptr;
  const Tensor* nonpad = ctx.opset() >= 24 && ctx.has_input(6) ? &ctx.input(6) : nullptr;
  if (!past_k != !past_v) ctx.fail("past_key and past_value come together");
  const AttnShape s = attn_shape(ctx, q.dims(), k.dims(), v.dims(), past_k ? &past_k->dims() : nullptr);
  if (past_v && past_v->dims() != std::vector<int64_t>{s.B, s.Hkv, s.P, s.Dv})
    ctx.fail("past_value must be [batch, kv_heads, past, v_head_size], got " + past_v->describe());
  const int64_t T = s.P + s.Skv, group = s.Hq / s.Hkv;
  const ir::Node& n = ctx.node();
  const bool causal = n.attr_int("is_causal", 0) != 0;
  const double softcap = n.attr_float("softcap", 0.f);
  const int64_t qk_mode = n.attr_int("qk_matmul_output_mode", 0);
  if (qk_mode < 0 || qk_mode > 3) ctx.fail("qk_matmul_output_mode must be 0..3");
  if (nonpad && (nonpad->dtype() != DType::Int64 || nonpad->dims() != std::vector<int64_t>{s.B}))
    ctx.fail("nonpad_kv_seqlen must be int64 [batch], got " + nonpad->describe());
  // The mask, right-aligned against [B, Hq, Sq, T]; its last dim may be shorter than T.
  std::vector<int64_t> md;
  if (mask) {
    md = mask->dims();
    if (md.size() < 2 || md.size() > 4) ctx.fail("attn_mask must be 2-D to 4-D, got " + mask->describe());
    while (md.size() < 4) md.insert(md.begin(), 1);
    const int64_t full[3] = {s.B, s.Hq, s.Sq};
    for (int i = 0; i < 3; ++i)
      if (md[i] != 1 && md[i] != full[i]) ctx.fail("attn_mask " + mask->describe() + " does not broadcast to the scores");
    if (md[3] > T) ctx.fail("attn_mask " + mask->describe() + " has more keys than " + std::to_string(T));
    if (mask->dtype() != DType::Bool && mask->dtype() != q.dtype())
      ctx.fail("attn_mask must be bool or Q's type, got " + mask->describe());
  }
  dispatch_float(q.dtype(), [&](auto tag) {
    using E = decltype(tag);
    using C = compute_t<E>;
    const double scale = n.attrs.count("scale") ? n.attr_float("scale", 0.f) : 1.0 / std::sqrt(static_cast<double>(s.D));
    const C root = static_cast<C>(std::sqrt(scale));
    const C ninf = -std::numeric_limits<C>::infinity();
    Tensor& y = s.three_d ? ctx.make_output(0, q.dtype(), {s.B, s.Sq, s.Hq * s.Dv})
                          : ctx.make_output(0, q.dtype(), {s.B, s.Hq, s.Sq, s.Dv});
    // present_key / present_value: past then new, [B, Hkv, T, D].
    Tensor pk(q.dtype(), {s.B, s.Hkv, T, s.D}), pv(q.dtype(), {s.B, s.Hkv, T, s.Dv});
    for (int64_t b = 0; b < s.B; ++b)
      for (int64_t h = 0; h < s.Hkv; ++h)
        for (int64_t t = 0; t < T; ++t) {
          for (int64_t d = 0; d < s.D; ++d)
            pk.data<E>()[((b * s.Hkv + h) * T + t) * s.D + d] =
                t < s.P ? past_k->data<E>()[((b * s.Hkv + h) * s.P + t) * s.D + d]
                        : k.data<E>()[at(s.three_d, s.Hkv, s.Skv, s.D, b, h, t - s.P, d)];
          for (int64_t d = 0; d < s.Dv; ++d)
            pv.data<E>()[((b * s.Hkv + h) * T + t) * s.Dv + d] =
                t < s.P ? past_v->data<E>()[((b * s.Hkv + h) * s.P + t) * s.Dv + d]
                        : v.data<E>()[at(s.three_d, s.Hkv, s.Skv, s.Dv, b, h, t - s.P, d)];
        }
    E* qk_out = ctx.has_output(3) ? ctx.make_output(3, q.dtype(), {s.B, s.Hq, s.Sq, T}).template data<E>() : nullptr;
    std::vector<C> qs(static_cast<size_t>(s.D)), row(static_cast<size_t>(T)), biased(static_cast<size_t>(T)),
        capped(static_cast<size_t>(T));
    for (int64_t b = 0; b < s.B; ++b)
      for (int64_t h = 0; h < s.Hq; ++h) {
        const int64_t hk = h / group;
        const E* kb = pk.data<E>() + (b * s.Hkv + hk) * T * s.D;
        const E* vb = pv.data<E>() + (b * s.Hkv + hk) * T * s.Dv;
        for (int64_t i = 0; i < s.Sq; ++i) {
          for (int64_t d = 0; d < s.D; ++d)
            qs[d] = static_cast<C>(static_cast<E>(static_cast<C>(q.data<E>()[at(s.three_d, s.Hq, s.Sq, s.D, b, h, i, d)]) * root));
          // The causal frontier: key j is visible from query i when j <= i + offset.
          const int64_t offset = past_k ? s.P : nonpad ? nonpad->data<int64_t>()[b] - s.Sq : 0;
          for (int64_t j = 0; j < T; ++j) {
            C dot = 0;
            for (int64_t d = 0; d < s.D; ++d) dot += qs[d] * static_cast<C>(static_cast<E>(static_cast<C>(kb[j * s.D + d]) * root));
            const C x = static_cast<C>(static_cast<E>(dot));
            row[j] = x;
            C bias = 0;
            if (mask) {
              if (j >= md[3]) {
                bias = ninf;
              } else {
                const int64_t mi = (((md[0] == 1 ? 0 : b) * md[1] + (md[1] == 1 ? 0 : h)) * md[2] + (md[2] == 1 ? 0 : i)) * md[3] + j;
                bias = mask->dtype() == DType::Bool ? (mask->data<bool>()[mi] ? C(0) : ninf) : static_cast<C>(mask->data<E>()[mi]);
              }
            }
            if (causal && j > i + offset) bias = ninf;
            if (nonpad && j >= nonpad->data<int64_t>()[b]) bias = ninf;
            biased[j] = static_cast<C>(static_cast<E>(x + bias));
            capped[j] = softcap > 0 ? static_cast<C>(static_cast<E>(std::tanh(biased[j] / static_cast<C>(softcap)) *
                                                                    static_cast<C>(softcap)))
                                    : biased[j];
          }
          C mx = ninf;
          for (int64_t j = 0; j < T; ++j) mx = std::max(mx, capped[j]);
          C sum = 0;
          std::vector<C> p(static_cast<size_t>(T));
          for (int64_t j = 0; j < T; ++j) sum += p[j] = std::exp(capped[j] - mx);
          for (int64_t j = 0; j < T; ++j) p[j] = static_cast<C>(static_cast<E>(p[j] / sum));
          if (qk_out) {
            E* o = qk_out + ((b * s.Hq + h) * s.Sq + i) * T;
            const std::vector<C>& shown = qk_mode == 0 ? row : qk_mode == 1 ? biased : qk_mode == 2 ? capped : p;
            for (int64_t j = 0; j < T; ++j) o[j] = static_cast<E>(shown[j]);
          }
          for (int64_t d = 0; d < s.Dv; ++d) {
            C acc = 0;
            for (int64_t j = 0; j < T; ++j) acc += p[j] * static_cast<C>(vb[j * s.Dv + d]);
            y.data<E>()[at(s.three_d, s.Hq, s.Sq, s.Dv, b, h, i, d)] = static_cast<E>(acc);
          }
        }
      }
    if (ctx.has_output(1)) ctx.set_output(1, pk);
    if (ctx.has_output(2)) ctx.set_output(2, pv);
  });
}

}  // namespace

KILN_REGISTER_OPS(attention) {
  reg.add({.name = "Attention", .since_version = 23, .max_version = 24, .min_inputs = 3, .max_inputs = 7,
           .min_outputs = 1, .max_outputs = 4, .pattern = PatternKind::Opaque, .infer = infer_attention,
           .kernel = attention_kernel});
}

}  // namespace kiln::ops
