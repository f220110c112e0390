// 3x3 stride-1 convolution on channels-last activations by Winograd's F(2x2, 3x3): each 2x2
// block of outputs from a 4x4 block of inputs with 16 multiplies per input channel instead of
// 36, the channel sums as 16 matrix products (gemm.h).
//
//   V[xi][t][c] = (B^T d B)[xi]     input transform: tile t's 4x4 inputs of channel c
//   P[xi][t][m] = V[xi] . U[xi]     16 products, U = G g G^T packed at compile time
//   y = A^T P A + bias (+ z), act   output transform: the tile's 2x2 outputs
//
// Tiles go in blocks sized so that a block's V and P stay in cache; the team's threads split
// the blocks. Weights: 16 matrices U[xi] of [C][M], each packed as gemm_packed's B (weight
// packing: pack_winograd_f23 in kiln).
#pragma once
#include <vector>

#include "gemm.h"

namespace kiln_kernels {

struct WinogradShape {
  int64_t N, H, W, C;  // input [N][H][W][C]
  int64_t OH, OW, M;   // output [N][OH][OW][M]
  int64_t PH, PW;      // top and left padding
};

// The bytes of V and P one block of tiles may take: a share of a core's L2 (1-2 MiB on the x86
// cores kiln targets), so the 16 products read and write cached rows.
constexpr int64_t kWinogradBlockBytes = 512 << 10;

template <Act A, int PANEL>
void winograd_f23_nhwc(const WinogradShape& s, const float* x, const float* u, const float* bias, const float* z,
                       float* y, float p = 0.f, float q = 0.f, Team* team = nullptr) {
  const int64_t C = s.C, M = s.M;
  const int64_t th = (s.OH + 1) / 2, tw = (s.OW + 1) / 2, tiles = s.N * th * tw;
  const int64_t np = (M + PANEL - 1) / PANEL, mpad = (np - 1) * PANEL + Panel<PANEL>::width(M, np - 1);
  // Blocks of tiles whose V and P fit the cache share; but where the weights outweigh every
  // tile's V and P (deep layers on small images), each block would read all of U again: then
  // one block per thread.
  int64_t tb = kWinogradBlockBytes / (16 * (C + M) * static_cast<int64_t>(sizeof(float)));
  tb = std::max<int64_t>(Tile<PANEL>::kRows, tb / Tile<PANEL>::kRows * Tile<PANEL>::kRows);
  if (C * M > tiles * (C + M)) {
    const int64_t threads = team ? team->size() : 1;
    tb = std::max(tb, (tiles + threads - 1) / threads);
  }
  const int64_t blocks = (tiles + tb - 1) / tb;
  parallel_for(team, blocks, [&](int64_t b0, int64_t b1) {
    thread_local std::vector<float> vbuf, pbuf, zero_row;
    if (static_cast<int64_t>(vbuf.size()) < 16 * tb * C) vbuf.resize(static_cast<size_t>(16 * tb * C));
    if (static_cast<int64_t>(pbuf.size()) < 16 * tb * M) pbuf.resize(static_cast<size_t>(16 * tb * M));
    if (static_cast<int64_t>(zero_row.size()) < C) zero_row.assign(static_cast<size_t>(C), 0.f);
    float* V = vbuf.data();
    float* P = pbuf.data();
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t t0 = blk * tb, nt = std::min(tb, tiles - t0);
      // Input transform, the channels as the vector.
      for (int64_t i = 0; i < nt; ++i) {
        const int64_t t = t0 + i, n = t / (th * tw), ty = t / tw % th, tx = t % tw;
        const int64_t ih0 = ty * 2 - s.PH, iw0 = tx * 2 - s.PW;
        const float* d[16];
        for (int64_t a = 0; a < 4; ++a)
          for (int64_t b = 0; b < 4; ++b) {
            const int64_t ih = ih0 + a, iw = iw0 + b;
            d[a * 4 + b] = ih >= 0 && ih < s.H && iw >= 0 && iw < s.W ? x + ((n * s.H + ih) * s.W + iw) * C
                                                                      : zero_row.data();
          }
        float* v = V + i * C;
        const int64_t vs = tb * C;  // between the 16 matrices
#pragma GCC ivdep
        for (int64_t c = 0; c < C; ++c) {
          float r[4][4];
          for (int b = 0; b < 4; ++b) {  // B^T d: combine the rows
            r[0][b] = d[0 + b][c] - d[8 + b][c];
            r[1][b] = d[4 + b][c] + d[8 + b][c];
            r[2][b] = d[8 + b][c] - d[4 + b][c];
            r[3][b] = d[4 + b][c] - d[12 + b][c];
          }
          for (int a = 0; a < 4; ++a) {  // (B^T d) B: combine the columns
            v[(a * 4 + 0) * vs + c] = r[a][0] - r[a][2];
            v[(a * 4 + 1) * vs + c] = r[a][1] + r[a][2];
            v[(a * 4 + 2) * vs + c] = r[a][2] - r[a][1];
            v[(a * 4 + 3) * vs + c] = r[a][1] - r[a][3];
          }
        }
      }
      // The 16 products, on this thread.
      for (int xi = 0; xi < 16; ++xi)
        gemm_packed<Act::None, PANEL>(nt, C, M, V + xi * tb * C, C, u + xi * C * mpad, nullptr, nullptr, 0,
                                      P + xi * tb * M, M);
      // Output transform, the output channels as the vector: A^T P A with A^T = [1 1 1 0; 0 1 -1 -1].
      for (int64_t i = 0; i < nt; ++i) {
        const int64_t t = t0 + i, n = t / (th * tw), ty = t / tw % th, tx = t % tw;
        const float* pm = P + i * M;
        const int64_t ps = tb * M;
        int64_t at[4];
        bool valid[4];
        for (int o = 0; o < 4; ++o) {
          const int64_t oh = ty * 2 + o / 2, ow = tx * 2 + o % 2;
          valid[o] = oh < s.OH && ow < s.OW;
          at[o] = valid[o] ? ((n * s.OH + oh) * s.OW + ow) * M : 0;
        }
#pragma GCC ivdep
        for (int64_t m = 0; m < M; ++m) {
          float r0[4], r1[4];
          for (int b = 0; b < 4; ++b) {
            const float p0 = pm[(0 * 4 + b) * ps + m], p1 = pm[(1 * 4 + b) * ps + m];
            const float p2 = pm[(2 * 4 + b) * ps + m], p3 = pm[(3 * 4 + b) * ps + m];
            r0[b] = p0 + p1 + p2;
            r1[b] = p1 - p2 - p3;
          }
          float out[4] = {r0[0] + r0[1] + r0[2], r0[1] - r0[2] - r0[3], r1[0] + r1[1] + r1[2], r1[1] - r1[2] - r1[3]};
          for (int o = 0; o < 4; ++o) {
            if (!valid[o]) continue;
            float v = out[o];
            if (bias) v += bias[m];
            if (z) v += z[at[o] + m];
            y[at[o] + m] = activate<A>(v, p, q);
          }
        }
      }
    }
  });
}

}  // namespace kiln_kernels
