#include "lower/fuse_gemv_chain.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "ir/graph_util.h"
#include "lower/outline.h"

namespace kiln::lower {

namespace {

bool one_row_gemm(const ir::Node* n) {
  return n && n->num_outputs() == 1 &&
         ((n->domain().empty() && n->op_type() == "Gemm") || (n->domain() == "kiln" && n->op_type() == "FusedGemm"));
}

}  // namespace

int fuse_gemv_chains(ir::Graph& g, const std::function<bool(const ir::Node&, const ir::Node&)>& chains) {
  if (!chains) return 0;
  std::vector<std::pair<ir::Node*, ir::Node*>> pairs;
  std::vector<const ir::Node*> taken;
  auto is_taken = [&](const ir::Node* n) { return std::find(taken.begin(), taken.end(), n) != taken.end(); };
  for (ir::Node* first : g.nodes()) {
    if (!one_row_gemm(first) || is_taken(first)) continue;
    const ir::Value* h = first->output(0);
    if (!h || h->uses().size() != 1 || ir::is_graph_output(g, h)) continue;
    const ir::Use& u = h->uses()[0];
    ir::Node* second = u.node;
    if (u.input_index != 0 || !one_row_gemm(second) || is_taken(second) || !chains(*first, *second)) continue;
    taken.push_back(first);
    taken.push_back(second);
    pairs.emplace_back(first, second);
  }
  for (const auto& [first, second] : pairs)
    outline(g, {first, second}, {second->output(0)}, "GemvChain", "gemv_chain_" + first->name());
  if (!pairs.empty()) g.topological_sort();
  return static_cast<int>(pairs.size());
}

std::unique_ptr<passes::Pass> make_gemv_chain_pass(std::function<bool(const ir::Node&, const ir::Node&)> chains,
                                                   int* count) {
  return std::make_unique<passes::FunctionPass>("gemv_chain", [chains = std::move(chains), count](ir::Graph& g) {
    *count = fuse_gemv_chains(g, chains);
    return *count > 0;
  });
}

}  // namespace kiln::lower
