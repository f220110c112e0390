// oneDNN's convolution as a kernel for composite kernels that choose their members'
// implementations (kiln.ConvConcat, conv_concat.cpp); the node's own factories are in
// onednn_conv.cpp.
#pragma once
#include <cstdint>
#include <memory>

#include "backends/backend.h"
#include "ir/graph.h"

namespace kiln::backends::cpu {

// A channels-last FusedConv (or Conv) on oneDNN for `threads`, its Winograd algorithm with
// `winograd`; `dst_row_channels` > 0 makes its output a channel slice of an NHWC tensor with that
// many channels per pixel. Null where oneDNN declines.
std::unique_ptr<Kernel> make_onednn_conv(const ir::Node& node, bool winograd, int threads, int64_t dst_row_channels);

}  // namespace kiln::backends::cpu
