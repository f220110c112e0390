// `kiln inspect --plan`: the memory plan of a model as text or JSON.
#pragma once
#include <string>

#include "ir/graph.h"

namespace kiln::cli {

// Compiles `g` for its declared input shapes (symbolic dims bound to 1) and prints arena bytes,
// lower bound, naive sum, checker verdict and the per-buffer table (which backend runs each
// instruction too). Returns false when the checker fails.
bool print_plan(const ir::Graph& g, bool json, int fusion_level = 3);

}  // namespace kiln::cli
