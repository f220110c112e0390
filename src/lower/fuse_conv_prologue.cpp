#include "lower/fuse_conv_prologue.h"

#include "fusion/access_plan.h"
#include "ir/graph_util.h"
#include "lower/outline.h"

namespace kiln::lower {

ir::Node* conv_prologue_of(const ir::Graph& g, const ir::Node* conv) {
  if (conv->domain() != "kiln" || conv->op_type() != "FusedConv" || conv->num_inputs() < 1) return nullptr;
  const ir::Value* x = conv->input(0);
  if (!x || x->is_constant() || x->uses().size() != 1 || ir::is_graph_output(g, x)) return nullptr;
  ir::Node* f = x->producer();
  if (!f || f->domain() != "kiln" || f->op_type() != "FusedElementwise" || f->num_outputs() != 1) return nullptr;
  for (int i = 1; i < conv->num_inputs(); ++i)  // the prologue feeds the conv's X only
    if (conv->input(i) == x) return nullptr;
  // No views in the group: its rows are then its output's memory order, in which the conv reads
  // them (a transposing view would write the output in another order).
  auto it = f->attrs.find("body");
  if (it == f->attrs.end() || !it->second.g) return nullptr;
  for (const ir::Node* n : it->second.g->nodes())
    if (fusion::is_view_op(*n)) return nullptr;
  return f;
}

int fuse_conv_prologue(ir::Graph& g, const std::function<bool(const ir::Node&)>& takes) {
  std::vector<std::pair<ir::Node*, ir::Node*>> pairs;  // found first, outlined after
  for (ir::Node* n : g.nodes())
    if (ir::Node* f = conv_prologue_of(g, n); f && takes(*n)) pairs.emplace_back(f, n);
  for (auto [f, conv] : pairs) outline(g, {f, conv}, {conv->output(0)}, "PrologueConv", "prologue_" + conv->name());
  if (!pairs.empty()) g.topological_sort();  // each new node went to the end
  return static_cast<int>(pairs.size());
}

std::unique_ptr<passes::Pass> make_conv_prologue_pass(std::function<bool(const ir::Node&)> takes, int* fused) {
  return std::make_unique<passes::FunctionPass>(
      "conv_prologue", [takes = std::move(takes), fused](ir::Graph& g) { return (*fused = fuse_conv_prologue(g, takes)) > 0; });
}

}  // namespace kiln::lower
