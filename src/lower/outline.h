// Moves a run of nodes into the `body` graph of one new kiln-domain node (kiln.ConvConcat,
// kiln.ConvChain): the body's inputs are the run's non-constant inputs from outside it, its
// constants are copies of the run's constant inputs, its outputs are `results`. The reference
// kernel of such a node runs the body node by node (src/ops/kiln_fused.cpp); backends read the
// body to build one kernel for the whole run.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::lower {

// `nodes` in a valid execution order; every value they make other than `results` must be used
// only by them. Returns the new node (appended: the caller re-sorts the graph).
ir::Node* outline(ir::Graph& g, const std::vector<ir::Node*>& nodes, const std::vector<ir::Value*>& results,
                  const std::string& op, const std::string& name);

}  // namespace kiln::lower
