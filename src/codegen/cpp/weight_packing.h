// Weights rearranged, at compile time, into the layouts the emitted kernels read
// (src/kernels/conv2d.h, gemm.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::codegen::cpp {

// The panel width (columns of packed B per register tile, kernels/tile.h) for a target's CPU
// features: 64 with AVX-512, else 32.
int panel_for(const std::vector<std::string>& isa);
// Whether the target's ISA features (ExecutablePlan::isa) include AVX-512F.
bool has_avx512(const std::vector<std::string>& isa);

// Conv weights [M][C/G][KH][KW] (ONNX) as conv2d_nhwc's: per group, gemm_packed's B for K =
// KH * KW * C/G and N = M/G; the bias [M] as [G][the panels' widths summed] (empty without one).
std::vector<float> pack_conv2d(const float* w, int64_t M, int64_t C, int64_t G, int64_t KH, int64_t KW, int panel);
std::vector<float> pack_conv2d_bias(const float* b, int64_t M, int64_t G, int panel);
// 3x3 conv weights [M][C][3][3] as winograd_f23_nhwc's: the 16 matrices U[xi] = (G g G^T)[xi] of
// [C][M], each packed as gemm_packed's B, one after another.
std::vector<float> pack_winograd_f23(const float* w, int64_t M, int64_t C, int panel);
// Depthwise weights [C][1][KH][KW] as depthwise_nhwc's [KH][KW][C] (the portable kernel;
// depthwise_rows.h packs its own with kiln_kernels::pack_depthwise).
std::vector<float> pack_depthwise(const float* w, int64_t C, int64_t KH, int64_t KW);
// B [K][N] (or [N][K] when trans) times alpha as gemm_packed's panels: [K][panel] each, the last
// [K][its width] (whole vectors), zeros past N.
std::vector<float> pack_gemm_b(const float* b, int64_t K, int64_t N, bool trans, float alpha, int panel);

}  // namespace kiln::codegen::cpp
