#include "codegen/cpp/weight_packing.h"

#include <algorithm>

namespace kiln::codegen::cpp {

namespace {
int64_t panels_of(int64_t n, int panel) { return (n + panel - 1) / panel; }
}  // namespace

int panel_for(const std::vector<std::string>& isa) {
  return std::find(isa.begin(), isa.end(), "avx512f") != isa.end() ? 64 : 32;
}

std::vector<float> pack_conv2d(const float* w, int64_t M, int64_t C, int64_t G, int64_t KH, int64_t KW, int panel) {
  const int64_t Cg = C / G, Mg = M / G, T = KH * KW, np = panels_of(Mg, panel);
  std::vector<float> p(G * np * T * Cg * panel, 0.f);
  for (int64_t g = 0; g < G; ++g)
    for (int64_t m = 0; m < Mg; ++m)
      for (int64_t c = 0; c < Cg; ++c)
        for (int64_t t = 0; t < T; ++t)
          p[(((g * np + m / panel) * T + t) * Cg + c) * panel + m % panel] = w[((g * Mg + m) * Cg + c) * T + t];
  return p;
}

std::vector<float> pack_conv2d_bias(const float* b, int64_t M, int64_t G, int panel) {
  if (!b) return {};
  const int64_t Mg = M / G, np = panels_of(Mg, panel);
  std::vector<float> p(G * np * panel, 0.f);
  for (int64_t g = 0; g < G; ++g)
    for (int64_t m = 0; m < Mg; ++m) p[g * np * panel + m] = b[g * Mg + m];
  return p;
}

std::vector<float> pack_depthwise(const float* w, int64_t C, int64_t KH, int64_t KW) {
  std::vector<float> p(KH * KW * C);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t k = 0; k < KH * KW; ++k) p[k * C + c] = w[c * KH * KW + k];
  return p;
}

std::vector<float> pack_gemm_b(const float* b, int64_t K, int64_t N, bool trans, float alpha, int panel) {
  const int64_t np = panels_of(N, panel);
  std::vector<float> p(np * K * panel, 0.f);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n)
      p[((n / panel) * K + k) * panel + n % panel] = alpha * (trans ? b[n * K + k] : b[k * N + n]);
  return p;
}

}  // namespace kiln::codegen::cpp
