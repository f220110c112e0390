// Constant nodes (and Identity nodes of a constant) become constant values before lowering,
// whatever the optimizer level: they are data, not work (ONNX Runtime does the same at load). Kernels then see their weights,
// Clip bounds, Pow exponents and Reshape shapes as constants, as they do after the optimizer.
#pragma once
#include <memory>

#include "ir/graph.h"
#include "passes/pass.h"

namespace kiln::lower {

// Returns the number of nodes replaced. Constants that are graph outputs stay nodes.
int materialize_constants(ir::Graph& g);
// As a lowering pass: "materialize_constants".
std::unique_ptr<passes::Pass> make_materialize_constants_pass();

}  // namespace kiln::lower
