#include "codegen/cpp/weight_packing.h"

namespace kiln::codegen::cpp {

namespace {
int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }
}  // namespace

std::vector<float> pack_conv2d(const float* w, int64_t M, int64_t C, int64_t G, int64_t KH, int64_t KW) {
  const int64_t Cg = C / G, Mg = M / G, Mp = round16(Mg), K = KH * KW;
  std::vector<float> p(G * K * Cg * Mp, 0.f);
  for (int64_t g = 0; g < G; ++g)
    for (int64_t m = 0; m < Mg; ++m)
      for (int64_t c = 0; c < Cg; ++c)
        for (int64_t k = 0; k < K; ++k) p[((g * K + k) * Cg + c) * Mp + m] = w[((g * Mg + m) * Cg + c) * K + k];
  return p;
}

std::vector<float> pack_conv2d_bias(const float* b, int64_t M, int64_t G) {
  if (!b) return {};
  const int64_t Mg = M / G, Mp = round16(Mg);
  std::vector<float> p(G * Mp, 0.f);
  for (int64_t g = 0; g < G; ++g)
    for (int64_t m = 0; m < Mg; ++m) p[g * Mp + m] = b[g * Mg + m];
  return p;
}

std::vector<float> pack_depthwise(const float* w, int64_t C, int64_t KH, int64_t KW) {
  std::vector<float> p(KH * KW * C);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t k = 0; k < KH * KW; ++k) p[k * C + c] = w[c * KH * KW + k];
  return p;
}

std::vector<float> pack_gemm_b(const float* b, int64_t K, int64_t N, bool trans, float alpha) {
  const int64_t Np = round16(N);
  std::vector<float> p(K * Np, 0.f);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) p[k * Np + n] = alpha * (trans ? b[n * K + k] : b[k * N + n]);
  return p;
}

}  // namespace kiln::codegen::cpp
