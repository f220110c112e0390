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

void fuse(ir::Graph& g, ir::Node* concat) {
  std::vector<ir::Node*> nodes;
  for (ir::Value* v : concat->inputs()) nodes.push_back(v->producer());
  nodes.push_back(concat);
  outline(g, nodes, {concat->output(0)}, "ConvConcat", "conv_concat_" + concat->name());
}

}  // namespace

int fuse_conv_concat(ir::Graph& g) {
  // Found first, fused after: fusing removes nodes (each conv feeds only its own Concat).
  std::vector<ir::Node*> concats;
  for (ir::Node* n : g.nodes())
    if (fusable(g, n)) concats.push_back(n);
  for (ir::Node* n : concats) fuse(g, n);
  if (!concats.empty()) g.topological_sort();  // each new node went to the end
  return static_cast<int>(concats.size());
}

std::unique_ptr<passes::Pass> make_conv_concat_pass(int* fused) {
  return std::make_unique<passes::FunctionPass>("conv_concat",
                                                [fused](ir::Graph& g) { return (*fused = fuse_conv_concat(g)) > 0; });
}

}  // namespace kiln::lower
