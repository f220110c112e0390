#include "codegen/cpp/weight_packing.h"

#include <algorithm>

#include "kernels/gemm.h"

namespace kiln::codegen::cpp {

namespace {

int64_t panels_of(int64_t n, int panel) { return (n + panel - 1) / panel; }
// The lanes of one vector for a panel width (kernels/tile.h: 16 for 64, 8 for 32).
int64_t lanes_of(int panel) { return panel == 64 ? 16 : 8; }
// Panel j's width: the panel, the last one rounded up to whole vectors only (tile.h's Panel::width).
int64_t width_of(int64_t n, int panel, int64_t j) {
  const int64_t L = lanes_of(panel);
  return std::min<int64_t>(panel, (n - j * panel + L - 1) / L * L);
}
// The columns of n packed: every panel's width summed.
int64_t padded(int64_t n, int panel) {
  const int64_t np = panels_of(n, panel);
  return (np - 1) * panel + width_of(n, panel, np - 1);
}

}  // namespace

bool has_avx512(const std::vector<std::string>& isa) { return std::find(isa.begin(), isa.end(), "avx512f") != isa.end(); }

int panel_for(const std::vector<std::string>& isa) { return has_avx512(isa) ? 64 : 32; }

std::vector<float> pack_gemm_b(const float* b, int64_t K, int64_t N, bool trans, float alpha, int panel) {
  std::vector<float> p(K * padded(N, panel), 0.f);
  if (panel == 64) kiln_kernels::pack_panels<64>(b, K, N, trans ? K : N, trans, alpha, p.data());
  else kiln_kernels::pack_panels<32>(b, K, N, trans ? K : N, trans, alpha, p.data());
  return p;
}

std::vector<float> pack_conv2d(const float* w, int64_t M, int64_t C, int64_t G, int64_t KH, int64_t KW, int panel) {
  const int64_t Cg = C / G, Mg = M / G, T = KH * KW, Kg = T * Cg, mpad = padded(Mg, panel);
  std::vector<float> p(G * Kg * mpad, 0.f);
  std::vector<float> b(Kg * Mg);  // one group's B: row t * Cg + c, column m
  for (int64_t g = 0; g < G; ++g) {
    for (int64_t m = 0; m < Mg; ++m)
      for (int64_t c = 0; c < Cg; ++c)
        for (int64_t t = 0; t < T; ++t) b[(t * Cg + c) * Mg + m] = w[((g * Mg + m) * Cg + c) * T + t];
    const std::vector<float> pg = pack_gemm_b(b.data(), Kg, Mg, false, 1.f, panel);
    std::copy(pg.begin(), pg.end(), p.begin() + g * Kg * mpad);
  }
  return p;
}

std::vector<float> pack_conv2d_bias(const float* b, int64_t M, int64_t G, int panel) {
  if (!b) return {};
  const int64_t Mg = M / G, mpad = padded(Mg, panel);
  std::vector<float> p(G * mpad, 0.f);
  for (int64_t g = 0; g < G; ++g)
    for (int64_t m = 0; m < Mg; ++m) p[g * mpad + m] = b[g * Mg + m];
  return p;
}

std::vector<float> pack_winograd_f23(const float* w, int64_t M, int64_t C, int panel) {
  // U = G g G^T with G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1], per (m, c), in double.
  std::vector<std::vector<float>> u(16, std::vector<float>(C * M));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < C; ++c) {
      const float* g = w + (m * C + c) * 9;
      double r[4][3];
      for (int j = 0; j < 3; ++j) {
        r[0][j] = g[j];
        r[1][j] = 0.5 * (g[j] + g[3 + j] + g[6 + j]);
        r[2][j] = 0.5 * (g[j] - g[3 + j] + g[6 + j]);
        r[3][j] = g[6 + j];
      }
      for (int a = 0; a < 4; ++a) {
        const double v[4] = {r[a][0], 0.5 * (r[a][0] + r[a][1] + r[a][2]), 0.5 * (r[a][0] - r[a][1] + r[a][2]), r[a][2]};
        for (int b = 0; b < 4; ++b) u[a * 4 + b][c * M + m] = static_cast<float>(v[b]);
      }
    }
  std::vector<float> p;
  for (const auto& ux : u) {
    const std::vector<float> packed = pack_gemm_b(ux.data(), C, M, false, 1.f, panel);
    p.insert(p.end(), packed.begin(), packed.end());
  }
  return p;
}

std::vector<float> pack_depthwise(const float* w, int64_t C, int64_t KH, int64_t KW) {
  std::vector<float> p(KH * KW * C);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t k = 0; k < KH * KW; ++k) p[k * C + c] = w[c * KH * KW + k];
  return p;
}

}  // namespace kiln::codegen::cpp
