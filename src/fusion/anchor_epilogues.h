// Fusion level 3's anchor groups (Conv/Gemm/MatMul with their elementwise epilogue) run as one
// kernel when the epilogue maps onto the anchor kernel's own epilogue (oneDNN post-ops: bias,
// residual sum, activation): the optimizer's epilogue rewrites (fuse_residual_add,
// fuse_matmul_bias, fuse_activation) applied here too, so fusion does not depend on the
// optimizer level. What they cannot take stays for collapse_groups.
#pragma once
#include <memory>

#include "ir/graph.h"
#include "passes/pass.h"

namespace kiln::fusion {

// Rewrites g (types inferred); returns true when something changed.
bool fold_anchor_epilogues(ir::Graph& g);
// As a lowering pass: "anchor_epilogues".
std::unique_ptr<passes::Pass> make_anchor_epilogues_pass();

}  // namespace kiln::fusion
