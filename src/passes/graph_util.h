// Graph helpers for the passes: the IR's queries and edits (ir/graph_util.h), which pass code
// in kiln::passes calls unqualified, and float copies of constant weights.
#pragma once
#include <kiln/tensor.h>

#include <vector>

#include "ir/graph_util.h"

namespace kiln::passes {

using ir::add_const;
using ir::add_value_like;
using ir::all_inputs_constant;
using ir::const_of;
using ir::fold_to_constants;
using ir::has_subgraph;
using ir::is_graph_output;
using ir::producer_of;
using ir::remove_dead_nodes;
using ir::restore_output_names;
using ir::single_use;
using ir::uniform_const;
using ir::use_kiln_domain;

// A float tensor copy of a constant (any float dtype), for weight arithmetic.
std::vector<float> to_floats(const Tensor& t);
Tensor floats_like(const Tensor& like, const std::vector<float>& v, std::vector<int64_t> dims);

}  // namespace kiln::passes
