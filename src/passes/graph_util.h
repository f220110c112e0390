// Small graph queries and edits shared by the passes.
#pragma once
#include <kiln/tensor.h>

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::passes {

// The constant tensor of v, or nullptr.
const Tensor* const_of(const ir::Value* v);
// When v is a constant whose elements all equal one number, that number.
std::optional<double> uniform_const(const ir::Value* v);
bool is_graph_output(const ir::Graph& g, const ir::Value* v);
// v is read by exactly one node input and is not a graph output.
bool single_use(const ir::Graph& g, const ir::Value* v);
// The node producing v when it is `op` (domain ""), else nullptr.
ir::Node* producer_of(const ir::Value* v, const std::string& op);
bool has_subgraph(const ir::Node& n);
// True when input i of n is a constant, or absent.
bool all_inputs_constant(const ir::Node& n);

// A new constant with a name derived from `hint`.
ir::Value* add_const(ir::Graph& g, const std::string& hint, Tensor t);
// A new, unproduced value typed like `like`.
ir::Value* add_value_like(ir::Graph& g, const ir::Value* like, const std::string& hint);

// Turns every output of n into the given constant, keeping each value (and so its name and
// graph-output status), then removes n.
void fold_to_constants(ir::Graph& g, ir::Node* n, std::vector<Tensor> values);
// Replaces every use of `from` by `to` (graph outputs too; the optimizer restores output
// names at the end).
inline void replace(ir::Graph& g, ir::Value* from, ir::Value* to) { g.replace_all_uses(from, to); }

// Removes nodes whose outputs nobody reads (not even a subgraph); returns how many.
int remove_dead_nodes(ir::Graph& g);
// Puts each graph output back under the name it had in `names` (values renamed by rewrites).
void restore_output_names(ir::Graph& g, const std::vector<std::string>& names);

// A float tensor copy of a constant (any float dtype), for weight arithmetic.
std::vector<float> to_floats(const Tensor& t);
Tensor floats_like(const Tensor& like, const std::vector<float>& v, std::vector<int64_t> dims);

}  // namespace kiln::passes

namespace kiln::passes {
// Declares the "kiln" op domain (fused and composite ops) in g's opsets.
inline void use_kiln_domain(ir::Graph& g) {
  ir::Graph* root = &g;
  while (root->parent) root = root->parent;
  root->opsets.emplace("kiln", 1);
}
}  // namespace kiln::passes
