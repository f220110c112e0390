// Blocked activations between Winograd convolutions: oneDNN 2.6's Winograd convolution only
// reads and writes the nChw16c layout, so a channels-last FusedConv running it reorders its
// input from NHWC and its output (and residual) back, inside every run. Where a value goes from
// one such conv to others only, this pass has the producer write nChw16c and the consumers read
// it, and those reorders disappear (on resnet18's 64-channel 56x56 convs they are a large part
// of the conv's time).
//
// The value keeps its NHWC type [N, H, W, C] (same bytes, C a multiple of 16); what changes is
// the order of its elements, recorded on both ends as FusedConv attributes (src/ops/
// kiln_fused.cpp): `y_blocked` = 1 on the producer, `x_blocked` = 1 on a consumer reading it as
// its input X, `z_blocked` = 1 on one adding it as its residual Z. Every kernel of
// FusedConv honours them: the reference kernel, the oneDNN convs, and the GEMV, which only takes
// 1x1 images, where both orders are the same.
#pragma once
#include <functional>
#include <memory>

#include "ir/graph.h"
#include "passes/pass.h"

namespace kiln::lower {

// Which convs compute in nChw16c: the backend's say (Backend::runs_blocked), on top of the
// shape rule (3x3, stride 1, one group); empty = every conv of that shape.
using RunsBlocked = std::function<bool(const ir::Node&)>;

// Marks the values described above in a channels-last graph with static types; returns how
// many.
int assign_blocked_activations(ir::Graph& g, const RunsBlocked& runs_blocked = {});
// As a lowering pass: "blocked_layout"; *marked = how many values it marked.
std::unique_ptr<passes::Pass> make_blocked_layout_pass(RunsBlocked runs_blocked, int* marked);

}  // namespace kiln::lower
