// Head transposes folded into kiln.Attention: a transformer's export splits the heads with
// Reshape [B, S, H*D] -> [B, S, H, D] and Transpose [0, 2, 1, 3] (the keys [0, 2, 3, 1]) before
// its attention, or one packed [B, S, 3, H, D] by Transpose [2, 0, 3, 1, 4] and a Gather each
// for Q, K and V, and joins the heads after it with the inverse Transpose. Each of those is a
// copy of a whole activation, and at two threads a copy whose rows the other core wrote. They
// become the node's q_perm / k_perm / v_perm (and q_index / k_index / v_index for the Gather) and
// out_perm (src/ops/kiln_attention.cpp), which its kernels read as strides
// (ops/core/attention_view.h). An input is folded where the operand stays rows of contiguous
// columns (the keys' either way: K_T or K), the layout every kernel of the node reads; the
// Transposes and Gathers are left where other nodes read them too. A constant scalar factor of Q
// or K_T (Swin's) joins the node's scale first, so the copies before it can fold as well.
#pragma once
#include <memory>

#include "ir/graph.h"
#include "passes/pass.h"

namespace kiln::lower {

// Rewrites a graph with static types; returns how many operands (inputs and outputs) now read
// or write in place.
int fold_attention_layouts(ir::Graph& g);
// As a lowering pass: "attention_layout"; *folded = that count.
std::unique_ptr<passes::Pass> make_attention_layout_pass(int* folded);

}  // namespace kiln::lower
