// Scaled dot-product attention of one head: o = softmax(q . k_t * scale + mask) . v, the
// softmax over the keys. q [Sq][D], k_t [D][Sk] (keys transposed), v [Sk][Dv], o [Sq][Dv];
// the mask (or null) is [mq][mk] with mq in {1, Sq} and mk in {1, Sk}, broadcast to [Sq][Sk].
#pragma once
#include <limits>

#include "common.h"

namespace kiln_kernels {

inline void attention_head(int64_t Sq, int64_t D, int64_t Sk, int64_t Dv, float scale, const float* KILN_RESTRICT q,
                           const float* KILN_RESTRICT k_t, const float* KILN_RESTRICT v, const float* mask, int64_t mq,
                           int64_t mk, float* KILN_RESTRICT o, float* KILN_RESTRICT scores /* Sk floats */) {
  for (int64_t i = 0; i < Sq; ++i) {
    for (int64_t j = 0; j < Sk; ++j) scores[j] = 0.f;
    for (int64_t e = 0; e < D; ++e) {
      const float a = q[i * D + e];
      const float* KILN_RESTRICT kr = k_t + e * Sk;
      for (int64_t j = 0; j < Sk; ++j) scores[j] += a * kr[j];
    }
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < Sk; ++j) {
      float s = scores[j] * scale;
      if (mask) s += mask[(mq == 1 ? 0 : i * mk) + (mk == 1 ? 0 : j)];
      scores[j] = s;
      mx = std::max(mx, s);
    }
    float sum = 0.f;
    for (int64_t j = 0; j < Sk; ++j) sum += (scores[j] = math::exp(scores[j] - mx));
    float* KILN_RESTRICT orow = o + i * Dv;
    for (int64_t e = 0; e < Dv; ++e) orow[e] = 0.f;
    for (int64_t j = 0; j < Sk; ++j) {
      const float p = scores[j] / sum;
      const float* KILN_RESTRICT vr = v + j * Dv;
      for (int64_t e = 0; e < Dv; ++e) orow[e] += p * vr[e];
    }
  }
}

}  // namespace kiln_kernels
