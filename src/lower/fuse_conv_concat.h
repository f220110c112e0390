// Concat elimination for channels-last convolutions: a Concat along the channel axis whose
// inputs are each made by a FusedConv used only there (squeezenet's fire modules: expand1x1 and
// expand3x3 of the same input) becomes one kiln.ConvConcat node, whose `body` graph holds the
// convs and the Concat (src/ops/kiln_fused.cpp). The CPU backend runs each conv with its output
// written straight into its channel slice of the result (onednn_conv.cpp), so no copy of the
// pieces is made; the reference kernel runs the body node by node.
//
// Where each piece's conv is the end of a chain (an Inception block's branches: 1x1 -> 1x7 ->
// 7x1, or a pool -> 1x1), every step of which only the next one reads, and the backend runs
// such branches dealt out whole to its threads (LoweringTarget::deals_branches), the body holds
// the whole chains: each thread then runs its branches start to end, their intermediate results
// in its own caches, with no hand-offs between the threads inside a branch.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "ir/graph.h"
#include "passes/pass.h"

namespace kiln::lower {

// Whether the backend deals these branches (each a chain of nodes in order, the last the conv
// writing its slice) out whole to its threads.
using DealsBranches = std::function<bool(const std::vector<std::vector<const ir::Node*>>&)>;

// Rewrites a channels-last graph with static types; returns how many Concats were fused. Without
// `deals_branches` a body holds the slice convs only.
int fuse_conv_concat(ir::Graph& g, const DealsBranches& deals_branches = {});
// As a lowering pass: "conv_concat"; *fused = how many Concats it fused.
std::unique_ptr<passes::Pass> make_conv_concat_pass(DealsBranches deals_branches, int* fused);

}  // namespace kiln::lower
