// \file Dead-code elimination: nodes none of whose outputs is read (by a node, a subgraph or
// as a graph output) are removed, sinks first, until nothing more dies.
#include "passes/graph_util.h"
#include "passes/pass.h"

namespace kiln::passes {

namespace {
class Dce : public Pass {
 public:
  std::string name() const override { return "dce"; }
  bool run(ir::Graph& g) override { return remove_dead_nodes(g) > 0; }
};
}  // namespace

std::unique_ptr<Pass> make_dce() { return std::make_unique<Dce>(); }

}  // namespace kiln::passes
