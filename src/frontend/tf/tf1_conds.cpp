// TensorFlow 1 conditionals (tf.compat.v1.cond) as ONNX If.
//
// TensorFlow runs both branches' nodes as dataflow and lets the untaken one go dead: each value
// a branch reads passes a Switch(value, pred), whose output 1 lives only when pred is true and
// output 0 only when it is false, and a Merge forwards whichever of its inputs is alive. Here
// the Merge becomes an If on pred: its then branch converts what leads from the Switches'
// outputs 1 to the Merge's true-side input, with each Switch output bound to the value it
// passes; the else branch the same from outputs 0. A cond with several results is several
// Merges on one pred: an If each. Conditionals nest (an inner Merge is converted while its
// enclosing branch is).
#include <kiln/error.h>

#include "frontend/tf/control_flow.h"
#include "frontend/tf/graph_walk.h"

namespace kiln::tf_fe {

namespace {

NodeInput output_of(int node, int k) {
  NodeInput r;
  r.node = node;
  r.output = k;
  return r;
}

}  // namespace

void GraphWalk::build_cond(const NodeSet& set, int merge, Scope& scope) {
  const std::string what = set.describe(merge);
  std::vector<NodeInput> sides;
  for (const NodeInput& r : set.inputs(merge))
    if (!r.control) sides.push_back(r);
  if (sides.size() != 2)
    throw UnsupportedError(what + ": a conditional's Merge must join two values, it joins " +
                           std::to_string(sides.size()));

  // Which side is which branch; a side that is no branch's value is the other branch's.
  NodeInput pred;
  int branch_of_port[2] = {-1, -1}, side_of_port[2] = {-1, -1};
  for (int k = 0; k < 2; ++k) {
    const int b = set.value_branch(sides[k]);
    if (b == scope.branch) continue;
    pred = set.branch(b).pred;
    branch_of_port[set.branch(b).port] = b;
    side_of_port[set.branch(b).port] = k;
  }
  if (side_of_port[0] < 0 && side_of_port[1] < 0)
    throw UnsupportedError(what + ": joins two values that are not in the branches of a conditional");
  for (int p = 0; p < 2; ++p)
    if (side_of_port[p] < 0) side_of_port[p] = 1 - side_of_port[1 - p];

  // The Switches that open the two branches, and the branch each port leads into.
  std::vector<int> switches;
  for (int s = 0; s < set.size(); ++s) {
    if (!set.is_cond_switch(s) || set.branch_of(s) != scope.branch) continue;
    const int b1 = set.value_branch(output_of(s, 1));
    if (b1 == scope.branch || !set.same_pred(set.branch(b1).pred, pred)) continue;
    switches.push_back(s);
    branch_of_port[1] = b1;
    branch_of_port[0] = set.value_branch(output_of(s, 0));
  }

  ir::Graph& g = *scope.graph;
  const std::string name = scope.prefix + set.node(merge).name();
  ir::Value* cond = input_value(set, scope, merge, pred);
  if (cond->type.dtype != DType::Bool && cond->type.dtype != DType::Undefined)
    cond = add_op(*this, g, "Cast", {cond}, name + "/pred", {{"to", ir::Attribute::of_int(static_cast<int64_t>(DType::Bool))}});

  auto branch = [&](int port) {
    auto sub = std::make_shared<ir::Graph>();
    sub->name = name + (port ? "/then" : "/else");
    sub->parent = &g;
    Scope s;
    s.parent = &scope;
    s.graph = sub.get();
    s.prefix = scope.prefix;
    s.args = scope.args;
    s.branch = branch_of_port[port];
    for (int sw : switches) {
      NodeInput data;
      for (const NodeInput& r : set.inputs(sw))
        if (!r.control) {
          data = r;
          break;
        }
      ir::Value* v = input_value(set, scope, sw, data);
      s.values[sw] = port ? std::vector<ir::Value*>{nullptr, v} : std::vector<ir::Value*>{v, nullptr};
    }
    const NodeInput& r = sides[side_of_port[port]];
    if (r.node >= 0 && !s.find(r.node)) walk(set, s, needed(set, set.frame_of(merge), {r.node}, s));
    sub->add_output(own_value(*this, *sub, input_value(set, s, merge, r), sub->name + ":0"));
    return sub;
  };
  std::shared_ptr<ir::Graph> then_g = branch(1), else_g = branch(0);

  ir::Value* out = g.add_value(g.find_value(name + ":0") ? g.unique_name(name + ":0") : name + ":0");
  ir::Node* n = g.add_node("If", {cond}, {out},
                           {{"then_branch", ir::Attribute::of_graph(then_g)}, {"else_branch", ir::Attribute::of_graph(else_g)}},
                           g.unique_name(name));
  infer_.infer_node(*n);
  tf_named_.insert(out);

  // Merge's value_index: which input was alive.
  ir::Value* index = nullptr;
  for (int i = 0; i < set.size() && !index; ++i)
    for (const NodeInput& r : set.inputs(i))
      if (r.node == merge && r.output == 1 && !r.control) {
        kiln::Tensor t = kiln::Tensor::scalar<int32_t>(side_of_port[1]), e = kiln::Tensor::scalar<int32_t>(side_of_port[0]);
        ir::Value* tv = g.add_constant(g.unique_name(name + "/then_index"), t);
        ir::Value* ev = g.add_constant(g.unique_name(name + "/else_index"), e);
        tv->type = ev->type = ir::TensorType(DType::Int32, {});
        index = add_op(*this, g, "Where", {cond, tv, ev}, name + ":1");
        break;
      }
  scope.values[merge] = {out, index};
}

}  // namespace kiln::tf_fe
