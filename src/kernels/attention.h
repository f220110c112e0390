// Scaled dot-product attention of one head: o = softmax(q . k_t * scale + mask) . v, the
// softmax over the keys. q [Sq][D], k_t [D][Sk] (keys transposed), v [Sk][Dv], o [Sq][Dv];
// the mask (or null) is [mq][mk] with mq in {1, Sq} and mk in {1, Sk}, broadcast to [Sq][Sk].
// Both products run on the register tile (gemm.h), the keys and values packed into panels per
// call, the scores a [Sq][Sk] matrix in a per-thread buffer.
#pragma once
#include <limits>
#include <vector>

#include "gemm.h"
#include "norm.h"

namespace kiln_kernels {

template <int PANEL>
inline void attention_head(int64_t Sq, int64_t D, int64_t Sk, int64_t Dv, float scale, const float* q, const float* k_t,
                           const float* v, const float* mask, int64_t mq, int64_t mk, float* o) {
  thread_local std::vector<float> kp, vp, sc;
  kp.resize(static_cast<size_t>(packed_size<PANEL>(D, Sk)));
  vp.resize(static_cast<size_t>(packed_size<PANEL>(Sk, Dv)));
  sc.resize(static_cast<size_t>(Sq * Sk));
  pack_panels<PANEL>(k_t, D, Sk, Sk, false, scale, kp.data());
  pack_panels<PANEL>(v, Sk, Dv, Dv, false, 1.f, vp.data());
  float* s = sc.data();
  gemm_packed<Act::None, PANEL>(Sq, D, Sk, q, D, kp.data(), nullptr, nullptr, 0, s, Sk);
  for (int64_t i = 0; i < Sq; ++i) {
    float* row = s + i * Sk;
    const float* mr = mask ? mask + (mq == 1 ? 0 : i * mk) : nullptr;
    if (mr && mk == 1) softmax_row(row, row, Sk, 1.f, nullptr, mr[0]);
    else softmax_row(row, row, Sk, 1.f, mr, 0.f);
  }
  gemm_packed<Act::None, PANEL>(Sq, Sk, Dv, s, Sk, vp.data(), nullptr, nullptr, 0, o, Dv);
}

}  // namespace kiln_kernels
