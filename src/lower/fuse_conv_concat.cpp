#include "lower/fuse_conv_concat.h"

#include <unordered_set>

#include "lower/outline.h"
#include "ir/graph_util.h"

namespace kiln::lower {

namespace {

// A FusedConv whose output can go straight into a channel slice: channels-last, no residual
// (it would have to be read from the slice), no activation kiln applies after the primitive
// over the output as one dense block (SiLU), and not in a blocked layout.
bool slice_writer(const ir::Node* n) {
  if (!n || n->domain() != "kiln" || n->op_type() != "FusedConv" || !n->attr_int("channels_last", 0)) return false;
  if (n->num_inputs() < 2 || n->num_outputs() != 1) return false;
  for (int i = 3; i < n->num_inputs(); ++i)  // a residual Z or channel scale S
    if (n->input(i)) return false;
  if (n->attr_string("activation", "") == "SiLU") return false;
  if (n->attr_int("x_blocked", 0) || n->attr_int("y_blocked", 0)) return false;
  for (int i = 1; i < n->num_inputs(); ++i)
    if (n->input(i) && !n->input(i)->is_constant()) return false;
  return n->input(0) && !n->input(0)->is_constant();
}

bool static_float4(const ir::Value* v) {
  return v && v->type.is_tensor() && v->type.rank_known && v->type.rank() == 4 && v->type.is_static() &&
         v->type.dtype == DType::Float;
}

bool fusable(const ir::Graph& g, const ir::Node* concat) {
  if (concat->domain() != "" || concat->op_type() != "Concat" || concat->num_outputs() != 1) return false;
  if (concat->num_inputs() < 2 || !static_float4(concat->output(0))) return false;
  const int64_t axis = concat->attr_int("axis", 0);
  if (axis != 3 && axis != -1) return false;
  std::unordered_set<const ir::Value*> seen;
  for (const ir::Value* v : concat->inputs()) {
    if (!v || !seen.insert(v).second || !static_float4(v) || ir::is_graph_output(g, v)) return false;
    if (!slice_writer(v->producer()) || v->uses().size() != 1) return false;
  }
  return true;
}

// A node that may run inside a branch before its slice's conv: a channels-last conv or pool with
// one output, whose other inputs are constants (the backend has the last word: deals_branches).
bool branch_step(const ir::Node* n) {
  if (!n || n->domain() != "kiln" || n->num_outputs() != 1 || n->num_inputs() < 1 || !n->input(0)) return false;
  if (n->op_type() != "FusedConv" && n->op_type() != "NhwcMaxPool" && n->op_type() != "NhwcAveragePool") return false;
  if (n->op_type() == "FusedConv" && !n->attr_int("channels_last", 0)) return false;
  for (int i = 1; i < n->num_inputs(); ++i)
    if (n->input(i) && !n->input(i)->is_constant()) return false;
  return static_float4(n->input(0)) && static_float4(n->output(0));
}

// The Concat's branches: each piece's conv, preceded by the chain of steps whose results only
// the next one reads, back to a value read elsewhere too (the block's input).
std::vector<std::vector<ir::Node*>> branches_of(const ir::Graph& g, const ir::Node* concat) {
  std::vector<std::vector<ir::Node*>> branches;
  for (ir::Value* v : concat->inputs()) {
    std::vector<ir::Node*> steps{v->producer()};
    for (;;) {
      const ir::Value* link = steps.front()->input(0);
      ir::Node* p = link->producer();
      if (!branch_step(p) || link->uses().size() != 1 || ir::is_graph_output(g, link)) break;
      steps.insert(steps.begin(), p);
    }
    branches.push_back(std::move(steps));
  }
  return branches;
}

void fuse(ir::Graph& g, ir::Node* concat, const DealsBranches& deals_branches) {
  std::vector<ir::Node*> nodes;
  std::vector<std::vector<ir::Node*>> branches = branches_of(g, concat);
  std::vector<std::vector<const ir::Node*>> chains;
  bool longer = false;
  for (const auto& b : branches) {
    chains.emplace_back(b.begin(), b.end());
    longer = longer || b.size() > 1;
  }
  if (longer && deals_branches && deals_branches(chains)) {
    for (const auto& b : branches) nodes.insert(nodes.end(), b.begin(), b.end());
  } else {
    for (ir::Value* v : concat->inputs()) nodes.push_back(v->producer());
  }
  nodes.push_back(concat);
  outline(g, nodes, {concat->output(0)}, "ConvConcat", "conv_concat_" + concat->name());
}

}  // namespace

int fuse_conv_concat(ir::Graph& g, const DealsBranches& deals_branches) {
  // Found first, fused after: fusing removes nodes (each conv feeds only its own Concat).
  std::vector<ir::Node*> concats;
  for (ir::Node* n : g.nodes())
    if (fusable(g, n)) concats.push_back(n);
  for (ir::Node* n : concats) fuse(g, n, deals_branches);
  if (!concats.empty()) g.topological_sort();  // each new node went to the end
  return static_cast<int>(concats.size());
}

std::unique_ptr<passes::Pass> make_conv_concat_pass(DealsBranches deals_branches, int* fused) {
  return std::make_unique<passes::FunctionPass>("conv_concat", [deals_branches, fused](ir::Graph& g) {
    return (*fused = fuse_conv_concat(g, deals_branches)) > 0;
  });
}

}  // namespace kiln::lower
