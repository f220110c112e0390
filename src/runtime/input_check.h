// Checks run-time inputs against the graph's declared input types: count, dtype, rank, static
// extents, and one consistent binding per symbolic dim.
#pragma once
#include <kiln/tensor.h>

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::runtime {

// Throws kiln::Error naming the input and the reason. Returns the symbol bindings.
std::map<std::string, int64_t> check_inputs(const ir::Graph& g, const std::vector<Tensor>& inputs);
// The same for shapes alone (one per input, Session::prepare and .kiln plans): count, rank,
// static dims and one value per symbol.
std::map<std::string, int64_t> check_input_dims(const ir::Graph& g, const std::vector<std::vector<int64_t>>& dims);

}  // namespace kiln::runtime
