// Turns fusion groups into executable nodes: the elementwise/broadcast part of each group
// (a whole ElemWise/Broadcast group, or the epilogue of an anchor group) becomes one
// kiln.FusedElementwise node holding its members as a body graph, which a backend runs as one
// kernel. Anchors (Conv, Gemm, MatMul) keep their own kernels, where the graph optimizer has
// already moved what oneDNN post-ops can do into kiln.FusedConv/FusedGemm/FusedMatMul;
// injective and reduction members stay single nodes.
#pragma once
#include <functional>
#include <memory>

#include "fusion/partitioner.h"
#include "ir/graph.h"
#include "passes/pass.h"

namespace kiln::fusion {

struct CollapseStats {
  int fused_nodes = 0;    // kiln.FusedElementwise nodes made
  int nodes_folded = 0;   // graph nodes they replaced
};

// `evaluable` says which nodes the backend's fused kernel can compute. Works on graphs whose
// types are static (a compiled plan's specialized clone).
CollapseStats collapse_groups(ir::Graph& g, const FusionOptions& opts,
                              const std::function<bool(const ir::Node&)>& evaluable);
// As a lowering pass: "collapse_groups"; fills *stats.
std::unique_ptr<passes::Pass> make_collapse_groups_pass(const FusionOptions& opts,
                                                        std::function<bool(const ir::Node&)> evaluable,
                                                        CollapseStats* stats);

}  // namespace kiln::fusion
