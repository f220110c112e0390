// Deep copy of a graph (nodes, values, types, attributes, subgraphs). Constant tensors are
// shared, not copied: weights are read-only everywhere in kiln.
#pragma once
#include <memory>

#include "ir/graph.h"

namespace kiln::ir {

std::unique_ptr<Graph> clone(const Graph& g);

}  // namespace kiln::ir
