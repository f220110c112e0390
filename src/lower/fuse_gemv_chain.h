// Two one-row products in a row: a Gemm or kiln.FusedGemm of one row whose output only another
// one-row Gemm reads, as its A, move into the body of one kiln.GemvChain where the backend runs
// the pair that way (Backend::chains_gemvs: with a team, a second product too small to split).
// The CPU kernel then computes the second product's partial sums over each thread's share of
// the first's outputs in the same job, so the team meets once for both (an MLP's last layers).
//
//   h = FusedGemm[Relu](x, W1, B1); y = Gemm(h, W2, B2)  ->  y = GemvChain{the two}(x)
#pragma once
#include <functional>
#include <memory>

#include "ir/graph.h"
#include "passes/pass.h"

namespace kiln::lower {

// Rewrites a graph with static types; returns how many chains it formed. `chains`: whether the
// backend runs a given pair as one kiln.GemvChain.
int fuse_gemv_chains(ir::Graph& g, const std::function<bool(const ir::Node&, const ir::Node&)>& chains);
// As a lowering pass: "gemv_chain"; *chains = how many it formed.
std::unique_ptr<passes::Pass> make_gemv_chain_pass(std::function<bool(const ir::Node&, const ir::Node&)> chains,
                                                   int* count);

}  // namespace kiln::lower
