// The geometry of a 2-D convolution on channels-last (NHWC) activations, as the emitted code
// declares it for the conv kernels (conv2d.h, depthwise_rows.h).
#pragma once
#include <cstdint>

namespace kiln_kernels {

struct Conv2dShape {
  int64_t N, H, W, C;   // input [N][H][W][C]
  int64_t OH, OW, M;    // output [N][OH][OW][M]
  int64_t KH, KW;       // kernel
  int64_t SH, SW;       // strides
  int64_t PH, PW;       // top and left padding
  int64_t DH, DW;       // dilations
  int64_t G;            // groups
};

}  // namespace kiln_kernels
