// Attention (opsets 23, 24) against a direct computation of its definition on odd shapes:
// grouped KV heads, a KV cache, a short boolean mask, causal masking, softcap and the QK output.
#include <kiln/error.h>

#include <cmath>
#include <limits>

#include "op_test_util.h"

namespace kiln::testing {

namespace {
using ir::Attribute;

struct Case {
  int64_t B = 2, Hq = 4, Hkv = 2, Sq = 3, Skv = 5, P = 2, D = 3, Dv = 2, mask_keys = 6;
  bool causal = true;
  float softcap = 0;
};

// Scores, softmax and output of head h of batch b, from 4-D Q, present K and V, the mask [Sq, mask_keys].
void naive(const Case& c, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, Tensor& y, Tensor& probs) {
  const int64_t T = c.P + c.Skv;
  const float scale = 1.f / std::sqrt(float(c.D)), ninf = -std::numeric_limits<float>::infinity();
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.Hq; ++h) {
      const int64_t hk = h / (c.Hq / c.Hkv);
      for (int64_t i = 0; i < c.Sq; ++i) {
        std::vector<double> s(T);
        double mx = -INFINITY;
        for (int64_t j = 0; j < T; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < c.D; ++d)
            dot += double(q.data<float>()[((b * c.Hq + h) * c.Sq + i) * c.D + d]) * k.data<float>()[((b * c.Hkv + hk) * T + j) * c.D + d];
          double x = dot * scale;
          if (j >= c.mask_keys || !mask.data<bool>()[i * c.mask_keys + j]) x = ninf;
          if (c.causal && j > i + c.P) x = ninf;
          if (c.softcap > 0) x = std::tanh(x / c.softcap) * c.softcap;
          s[j] = x;
          mx = std::max(mx, x);
        }
        double sum = 0;
        for (int64_t j = 0; j < T; ++j) sum += s[j] = std::exp(s[j] - mx);
        for (int64_t j = 0; j < T; ++j) probs.data<float>()[((b * c.Hq + h) * c.Sq + i) * T + j] = float(s[j] / sum);
        for (int64_t d = 0; d < c.Dv; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < T; ++j) acc += s[j] / sum * v.data<float>()[((b * c.Hkv + hk) * T + j) * c.Dv + d];
          y.data<float>()[((b * c.Hq + h) * c.Sq + i) * c.Dv + d] = float(acc);
        }
      }
    }
}

// Concatenates past [B, H, P, X] and new [B, H, S, X] along the sequence.
Tensor concat_seq(const Tensor& past, const Tensor& now) {
  const int64_t B = now.dim(0), H = now.dim(1), P = past.dim(2), S = now.dim(2), X = now.dim(3);
  Tensor out(DType::Float, {B, H, P + S, X});
  for (int64_t bh = 0; bh < B * H; ++bh)
    for (int64_t t = 0; t < P + S; ++t)
      for (int64_t x = 0; x < X; ++x)
        out.data<float>()[(bh * (P + S) + t) * X + x] =
            t < P ? past.data<float>()[(bh * P + t) * X + x] : now.data<float>()[(bh * S + t - P) * X + x];
  return out;
}
}  // namespace

TEST(Attention, GroupedHeadsWithCacheShortMaskCausalAndSoftcap) {
  for (float softcap : {0.f, 0.7f}) {
    Case c;
    c.softcap = softcap;
    Tensor q = random_float({c.B, c.Hq, c.Sq, c.D}, -1, 1, 1), k = random_float({c.B, c.Hkv, c.Skv, c.D}, -1, 1, 2);
    Tensor v = random_float({c.B, c.Hkv, c.Skv, c.Dv}, -1, 1, 3);
    Tensor pk = random_float({c.B, c.Hkv, c.P, c.D}, -1, 1, 4), pv = random_float({c.B, c.Hkv, c.P, c.Dv}, -1, 1, 5);
    Tensor mask(DType::Bool, {c.Sq, c.mask_keys});
    for (int64_t i = 0; i < mask.numel(); ++i) mask.data<bool>()[i] = (i % 4) != 1;
    mask.data<bool>()[0] = true;  // every row keeps a visible key
    auto out = run_op({.op = "Attention", .inputs = {q, k, v, mask, pk, pv},
                       .attrs = {{"is_causal", Attribute::of_int(c.causal)}, {"softcap", Attribute::of_float(softcap)},
                                 {"qk_matmul_output_mode", Attribute::of_int(3)}},
                       .num_outputs = 4, .opset = 23});
    const Tensor K = concat_seq(pk, k), V = concat_seq(pv, v);
    Tensor y(DType::Float, {c.B, c.Hq, c.Sq, c.Dv}), probs(DType::Float, {c.B, c.Hq, c.Sq, c.P + c.Skv});
    naive(c, q, K, V, mask, y, probs);
    expect_near(out[0], y, 1e-5, 1e-4);
    expect_near(out[1], K);
    expect_near(out[2], V);
    expect_near(out[3], probs, 1e-5, 1e-4);
  }
}

TEST(Attention, ThreeDInputsMatchTheirFourDForm) {
  const int64_t B = 1, S = 4, Hq = 3, Hkv = 1, D = 2;
  Tensor q3 = random_float({B, S, Hq * D}, -1, 1, 6), k3 = random_float({B, S, Hkv * D}, -1, 1, 7);
  Tensor v3 = random_float({B, S, Hkv * D}, -1, 1, 8);
  auto to4 = [&](const Tensor& t, int64_t H) {
    Tensor o(DType::Float, {B, H, S, D});
    for (int64_t s = 0; s < S; ++s)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < D; ++d) o.data<float>()[(h * S + s) * D + d] = t.data<float>()[(s * H + h) * D + d];
    return o;
  };
  auto out3 = run_op({.op = "Attention", .inputs = {q3, k3, v3},
                      .attrs = {{"q_num_heads", Attribute::of_int(Hq)}, {"kv_num_heads", Attribute::of_int(Hkv)},
                                {"scale", Attribute::of_float(0.3f)}},
                      .opset = 23});
  auto out4 = run_op({.op = "Attention", .inputs = {to4(q3, Hq), to4(k3, Hkv), to4(v3, Hkv)},
                      .attrs = {{"scale", Attribute::of_float(0.3f)}}, .opset = 23});
  ASSERT_EQ(out3[0].dims(), (std::vector<int64_t>{B, S, Hq * D}));
  expect_near(to4(out3[0], Hq), out4[0], 1e-6, 1e-6);
}

TEST(Attention, NonpadLengthsAndErrors) {
  // Opset 24: keys past each batch's length are masked.
  Tensor q = random_float({2, 1, 1, 2}, -1, 1, 9), k = random_float({2, 1, 3, 2}, -1, 1, 10), v = random_float({2, 1, 3, 2}, -1, 1, 11);
  auto out = run_op({.op = "Attention", .inputs = {q, k, v, Tensor(), Tensor(), Tensor(), Tensor::from_vector<int64_t>({2}, {1, 3})},
                     .attrs = {{"qk_matmul_output_mode", Attribute::of_int(3)}}, .num_outputs = 4, .opset = 24});
  EXPECT_FLOAT_EQ(out[3].data<float>()[0], 1.f);  // batch 0 sees key 0 only
  EXPECT_FLOAT_EQ(out[3].data<float>()[1], 0.f);
  EXPECT_GT(out[3].data<float>()[5], 0.f);  // batch 1 sees all three
  EXPECT_THROW(run_op({.op = "Attention", .inputs = {random_float({1, 3, 2, 2}), random_float({1, 2, 2, 2}), random_float({1, 2, 2, 2})},
                       .opset = 23}),
               kiln::Error);  // 3 q heads over 2 kv heads
  EXPECT_THROW(run_op({.op = "Attention", .inputs = {random_float({1, 2, 4}), random_float({1, 2, 4}), random_float({1, 2, 4})},
                       .opset = 23}),
               kiln::Error);  // 3-D without head counts
}

}  // namespace kiln::testing
