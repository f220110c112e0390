// `kiln inspect --plan`: the memory plan of a model as text or JSON.
#pragma once
#include <string>

#include "ir/graph.h"

namespace kiln::cli {

// Compiles `g` for its declared input shapes (symbolic dims bound to 1) and prints arena bytes,
// lower bound, naive sum, checker verdict, the lowering passes and the per-buffer table (which
// kernel runs each instruction too); the JSON form holds the whole executable plan, every
// instruction's KernelSpec with its parameters. Returns false when the checker fails.
bool print_plan(const ir::Graph& g, bool json, int fusion_level = 3, int threads = 1);

}  // namespace kiln::cli
