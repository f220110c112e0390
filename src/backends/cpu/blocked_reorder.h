// The conv layout copies kiln does itself at 2+ threads, split over image rows: NHWC <-> oneDNN's
// nChw16c (the Winograd convs' layout), and a dense NHWC output into a channel slice of a wider
// tensor (kiln.ConvConcat). oneDNN 2.6 runs these reorders on one thread, so at 2 threads they
// would be a serial step of every such conv, taking as long as at 1 thread.
#pragma once
#include <cstdint>

namespace kiln::backends::cpu {

// src: N images of H x W pixels, `ld` floats apart (ld >= C), channels first in each pixel.
// dst: nChw16c, channels padded with zeros to a multiple of 16.
void nhwc_to_blocked16(const float* src, float* dst, int64_t N, int64_t C, int64_t H, int64_t W, int64_t ld,
                       int threads);

// The inverse: each pixel's C channels go to `ld`-float rows of dst (the rest of a row is left
// as it was, so dst may be a channel slice of a wider tensor).
void blocked16_to_nhwc(const float* src, float* dst, int64_t N, int64_t C, int64_t H, int64_t W, int64_t ld,
                       int threads);

// Dense NHWC pixels of C channels into `ld`-float rows of dst (a channel slice).
void nhwc_to_slice(const float* src, float* dst, int64_t pixels, int64_t C, int64_t ld, int threads);

}  // namespace kiln::backends::cpu
