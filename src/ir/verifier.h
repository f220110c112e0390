// Structural checks of the IR invariants that passes and the frontend rely on (SSA producers,
// exact use lists, topological order, scoping of subgraph reads, constant types). Run it after
// import and after each pass in debug builds: a broken invariant found here is much cheaper to
// diagnose than the crash or wrong result it causes later.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::ir {

// Every problem found in g and its subgraphs, one message each naming the graph, node and value.
std::vector<std::string> verify_all(const Graph& g);

// Throws kiln::Error listing the problems verify_all finds; does nothing for a valid graph.
void verify(const Graph& g);

}  // namespace kiln::ir
