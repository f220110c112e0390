// Small graph queries and edits shared by the optimizer passes, fusion and lowering.
#pragma once
#include <kiln/tensor.h>

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::ir {

// The constant tensor of v, or nullptr.
const Tensor* const_of(const Value* v);
// When v is a constant whose elements all equal one number, that number.
std::optional<double> uniform_const(const Value* v);
bool is_graph_output(const Graph& g, const Value* v);
// v is read by exactly one node input and is not a graph output.
bool single_use(const Graph& g, const Value* v);
// The node producing v when it is `op` (domain ""), else nullptr.
Node* producer_of(const Value* v, const std::string& op);
bool has_subgraph(const Node& n);
// True when input i of n is a constant, or absent.
bool all_inputs_constant(const Node& n);
// The axes a Reduce* node reduces over as written, whichever form its opset uses: the `axes`
// attribute, or (ReduceSum from opset 13, the others from 18) a constant second input. An
// empty list when neither is given (every axis, or none with noop_with_empty_axes); nullopt
// when the axes input is not a constant.
std::optional<std::vector<int64_t>> reduction_axes(const Node& n);

// A new constant with a name derived from `hint`.
Value* add_const(Graph& g, const std::string& hint, Tensor t);
// A new, unproduced value typed like `like`.
Value* add_value_like(Graph& g, const Value* like, const std::string& hint);

// Turns every output of n into the given constant, keeping each value (and so its name and
// graph-output status), then removes n.
void fold_to_constants(Graph& g, Node* n, std::vector<Tensor> values);
// Removes nodes whose outputs nobody reads (not even a subgraph); returns how many.
int remove_dead_nodes(Graph& g);
// Puts each graph output back under the name it had in `names` (values renamed by rewrites).
void restore_output_names(Graph& g, const std::vector<std::string>& names);

// Declares the "kiln" op domain (fused and composite ops) in g's opsets.
inline void use_kiln_domain(Graph& g) {
  Graph* root = &g;
  while (root->parent) root = root->parent;
  root->opsets.emplace("kiln", 1);
}

}  // namespace kiln::ir
