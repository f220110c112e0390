// kiln's channels-last 2-D max and average pooling (kiln.NhwcMaxPool / NhwcAveragePool), an
// output row at a time from whatever rows of the input are at hand, so a ConvChain
// (conv_chain.cpp) runs it on its line buffers as well as the pool kernel on a whole tensor.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>

#include "backends/backend.h"
#include "ir/graph.h"

namespace kiln::backends::cpu {

struct PoolWindow {
  int64_t kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;  // kernel, strides, dilations, pads
  int64_t H, W, C, OH, OW;
  bool is_max, count_include_pad;
};

// The window of a channels-last NhwcMaxPool / NhwcAveragePool with static float shapes (auto_pad
// resolved to pads as the reference does), or nullopt.
std::optional<PoolWindow> nhwc_pool_window(const ir::Node& node);

// Output rows [oh0, oh1) of one image to y (row oh0 first). Input row r (of the H rows; taps
// outside them are ignored, or counted as zeros by an average with count_include_pad) is at
// x + (r - x_row0) * W * C: `x` may hold only the rows these outputs read; with `ring` > 0 at
// x + (r % ring) * W * C (row_slot in row_conv.h).
void pool_rows(const PoolWindow& g, const float* x, int64_t x_row0, float* y, int64_t oh0, int64_t oh1,
               int64_t ring = 0);

// The kernel for such a pool on a team of `threads` (also a step of a kiln.ConvConcat branch);
// null where nhwc_pool_window declines.
std::unique_ptr<Kernel> make_nhwc_pool(const ir::Node& node, int threads);

}  // namespace kiln::backends::cpu
