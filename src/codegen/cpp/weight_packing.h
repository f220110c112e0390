// Weights rearranged, at compile time, into the layouts the emitted kernels read
// (src/codegen/kernels/conv2d.h, gemm.h).
#pragma once
#include <cstdint>
#include <vector>

namespace kiln::codegen::cpp {

// Conv weights [M][C/G][KH][KW] (ONNX) as conv2d_nhwc's [G][KH][KW][C/G][Mp], Mp = M/G rounded
// up to 16 with zeros; the bias [M] as [G][Mp] (empty without one).
std::vector<float> pack_conv2d(const float* w, int64_t M, int64_t C, int64_t G, int64_t KH, int64_t KW);
std::vector<float> pack_conv2d_bias(const float* b, int64_t M, int64_t G);
// Depthwise weights [C][1][KH][KW] as depthwise_nhwc's [KH][KW][C].
std::vector<float> pack_depthwise(const float* w, int64_t C, int64_t KH, int64_t KW);
// B [K][N] (or [N][K] when trans) times alpha as gemm_packed's [K][Np], zeros past N.
std::vector<float> pack_gemm_b(const float* b, int64_t K, int64_t N, bool trans, float alpha);

}  // namespace kiln::codegen::cpp
