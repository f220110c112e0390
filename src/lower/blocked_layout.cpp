#include "lower/blocked_layout.h"

#include "ir/graph_util.h"
#include "ops/core/conv_geometry.h"

namespace kiln::lower {

namespace {

// A channels-last FusedConv of the shape oneDNN's Winograd form takes (3x3, stride 1, no
// dilation, one group) that the backend runs that way: the convs whose own layout is nChw16c.
// Others (brgconv, kiln's Winograd) prefer NHWC: given nChw16c they run slower (oneDNN 2.6's
// 3x3 stride-2 convs), so a value that touches one stays NHWC.
bool winograd_conv(const ir::Node* n, const RunsBlocked& runs_blocked) {
  if (!n || n->domain() != "kiln" || n->op_type() != "FusedConv" || !n->attr_int("channels_last", 0)) return false;
  if (n->num_inputs() < 2 || !n->input(1) || !n->input(1)->type.rank_known || n->input(1)->type.rank() != 4) return false;
  const auto wd = n->input(1)->type.static_dims();
  return n->attr_int("group", 1) == 1 && wd[2] == 3 && wd[3] == 3 &&
         n->attr_ints("strides", {1, 1}) == std::vector<int64_t>{1, 1} &&
         n->attr_ints("dilations", {1, 1}) == std::vector<int64_t>{1, 1} &&
         ops::auto_pad_of(*n) == ops::AutoPad::NotSet && (!runs_blocked || runs_blocked(*n));
}

bool blockable(const ir::Graph& g, const ir::Value* v, const RunsBlocked& runs_blocked) {
  if (!v || v->is_constant() || v->is_graph_input() || ir::is_graph_output(g, v) || v->uses().empty()) return false;
  const ir::TensorType& t = v->type;
  if (!t.is_tensor() || !t.rank_known || t.rank() != 4 || !t.is_static() || t.dtype != DType::Float) return false;
  if (t.dims[3].value % 16 != 0) return false;
  if (!winograd_conv(v->producer(), runs_blocked) || v->producer_output() != 0) return false;
  for (const ir::Use& u : v->uses())
    if (!winograd_conv(u.node, runs_blocked) || (u.input_index != 0 && u.input_index != 3)) return false;
  return true;
}

}  // namespace

int assign_blocked_activations(ir::Graph& g, const RunsBlocked& runs_blocked) {
  std::vector<ir::Value*> blocked;
  for (ir::Node* n : g.nodes())
    if (n->num_outputs() > 0 && blockable(g, n->output(0), runs_blocked)) blocked.push_back(n->output(0));
  for (ir::Value* v : blocked) {
    v->producer()->attrs["y_blocked"] = ir::Attribute::of_int(1);
    for (const ir::Use& u : v->uses()) u.node->attrs[u.input_index == 0 ? "x_blocked" : "z_blocked"] = ir::Attribute::of_int(1);
  }
  return static_cast<int>(blocked.size());
}

std::unique_ptr<passes::Pass> make_blocked_layout_pass(RunsBlocked runs_blocked, int* marked) {
  return std::make_unique<passes::FunctionPass>("blocked_layout", [runs_blocked = std::move(runs_blocked), marked](ir::Graph& g) {
    return (*marked = assign_blocked_activations(g, runs_blocked)) > 0;
  });
}

}  // namespace kiln::lower
