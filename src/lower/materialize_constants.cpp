#include "lower/materialize_constants.h"

#include <kiln/error.h>

#include "ops/core/infer_graph.h"
#include "ir/graph_util.h"

namespace kiln::lower {

int materialize_constants(ir::Graph& g) {
  int n_done = 0;
  for (ir::Node* n : g.nodes()) {  // in topological order, so Identity(Constant) chains fold too
    if (!n->domain().empty() || n->num_outputs() != 1) continue;
    const ir::Value* o = n->output(0);
    if (!o || !o->type.is_tensor() || ir::is_graph_output(g, o)) continue;
    // An Identity of a constant is that constant (exporters route weights through them).
    if (n->op_type() == "Identity" && n->num_inputs() == 1 && n->input(0) && n->input(0)->is_constant() &&
        n->input(0)->constant().kind() == ValueKind::Tensor) {
      ir::fold_to_constants(g, n, {n->input(0)->constant()});
      ++n_done;
      continue;
    }
    if (n->op_type() != "Constant" || n->num_inputs() != 0) continue;
    std::vector<Tensor> outs;
    try {
      outs = ops::run_reference(*n, {});
    } catch (const Error&) {
      continue;  // left to run time, where the error names the node
    }
    if (outs.size() != 1 || !outs[0].defined() || outs[0].is_sequence() || outs[0].is_none()) continue;
    ir::fold_to_constants(g, n, std::move(outs));
    ++n_done;
  }
  return n_done;
}

std::unique_ptr<passes::Pass> make_materialize_constants_pass() {
  return std::make_unique<passes::FunctionPass>("materialize_constants",
                                                [](ir::Graph& g) { return materialize_constants(g) > 0; });
}

}  // namespace kiln::lower
