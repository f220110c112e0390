// What a team's split of one kernel's work costs a thread beyond its share of the products, in
// multiply-adds (the unit of the kernels' cost models: winograd_pays, kiln.ConvConcat's dealing,
// kiln_pointwise's split).
#pragma once

namespace kiln::backends::cpu {

// A byte a thread reads that another core of the team wrote: it comes from that core's caches
// rather than its own (Inception's blocks dealt whole to threads at 160 and 299 pixels,
// bench/results/experiments-20261207-session48.md).
constexpr double kRemoteByteCost = 10.7;

// A byte of weights each thread streams where the team could have split them: the threads read
// the same weights at about the same time, so what one fetches from memory the other mostly finds
// in the shared L3; a tenth of what a lone thread's stream costs (kDirectWeightByteCost). Fitted
// where kiln_pointwise's two splits cross on ResNet-50's 1x1 convs at 160 pixels and 2 threads
// (bench/results/experiments-20261207-session49.md).
constexpr double kSharedWeightByteCost = 0.75;

}  // namespace kiln::backends::cpu
