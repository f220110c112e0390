// Scaled dot-product attention of one head: o = softmax(q . k_t * scale + mask) . v, the
// softmax over the keys. q [Sq][D], k_t [D][Sk] (keys transposed), v [Sk][Dv], o [Sq][Dv];
// the mask (or null) is [mq][mk] with mq in {1, Sq} and mk in {1, Sk}, broadcast to [Sq][Sk].
// The matrices' rows may lie any distance apart (HeadLayout: a head of a [B, S, H, D] tensor),
// and the keys may be given as K's rows ([Sk][D]) instead of K_T's.
// Both products run on the register tile (gemm.h), the keys and values packed into panels per
// call, the scores a [Sq][Sk] matrix in a per-thread buffer.
#pragma once
#include <limits>
#include <vector>

#include "gemm.h"
#include "norm.h"

namespace kiln_kernels {

// Row strides (in floats) of q, of the keys, of v and of o; keys_as_rows: the keys are K [Sk][D].
struct HeadLayout {
  int64_t ldq, ldk, ldv, ldo;
  bool keys_as_rows;
};

template <int PANEL>
inline void attention_head(int64_t Sq, int64_t D, int64_t Sk, int64_t Dv, float scale, const float* q, const float* k,
                           const float* v, const float* mask, int64_t mq, int64_t mk, float* o, const HeadLayout& l) {
  thread_local std::vector<float> kp, vp, sc;
  kp.resize(static_cast<size_t>(packed_size<PANEL>(D, Sk)));
  vp.resize(static_cast<size_t>(packed_size<PANEL>(Sk, Dv)));
  sc.resize(static_cast<size_t>(Sq * Sk));
  pack_panels<PANEL>(k, D, Sk, l.ldk, l.keys_as_rows, scale, kp.data());
  pack_panels<PANEL>(v, Sk, Dv, l.ldv, false, 1.f, vp.data());
  float* s = sc.data();
  gemm_packed<Act::None, PANEL>(Sq, D, Sk, q, l.ldq, kp.data(), nullptr, nullptr, 0, s, Sk);
  for (int64_t i = 0; i < Sq; ++i) {
    float* row = s + i * Sk;
    const float* mr = mask ? mask + (mq == 1 ? 0 : i * mk) : nullptr;
    if (mr && mk == 1) softmax_row(row, row, Sk, 1.f, nullptr, mr[0]);
    else softmax_row(row, row, Sk, 1.f, mr, 0.f);
  }
  gemm_packed<Act::None, PANEL>(Sq, Sk, Dv, s, Sk, vp.data(), nullptr, nullptr, 0, o, l.ldo);
}

// The same on dense matrices: q [Sq][D], k_t [D][Sk], v [Sk][Dv], o [Sq][Dv].
template <int PANEL>
inline void attention_head(int64_t Sq, int64_t D, int64_t Sk, int64_t Dv, float scale, const float* q, const float* k_t,
                           const float* v, const float* mask, int64_t mq, int64_t mk, float* o) {
  attention_head<PANEL>(Sq, D, Sk, Dv, scale, q, k_t, v, mask, mq, mk, o, HeadLayout{D, Sk, Dv, Dv, false});
}

}  // namespace kiln_kernels
