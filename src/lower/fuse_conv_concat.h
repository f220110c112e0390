// Concat elimination for channels-last convolutions: a Concat along the channel axis whose
// inputs are each made by a FusedConv used only there (squeezenet's fire modules: expand1x1 and
// expand3x3 of the same input) becomes one kiln.ConvConcat node, whose `body` graph holds the
// convs and the Concat (src/ops/kiln_fused.cpp). The CPU backend runs each conv with its output
// written straight into its channel slice of the result (onednn_conv.cpp), so no copy of the
// pieces is made; the reference kernel runs the body node by node.
#pragma once
#include <memory>

#include "ir/graph.h"
#include "passes/pass.h"

namespace kiln::lower {

// Rewrites a channels-last graph with static types; returns how many Concats were fused.
int fuse_conv_concat(ir::Graph& g);
// As a lowering pass: "conv_concat"; *fused = how many Concats it fused.
std::unique_ptr<passes::Pass> make_conv_concat_pass(int* fused);

}  // namespace kiln::lower
