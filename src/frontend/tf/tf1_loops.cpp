// TensorFlow 1 while loops (tf.compat.v1.while_loop) as ONNX Loop.
//
// A loop is a frame of nodes between Enter and Exit. Each loop variable k runs
//   Enter(init_k) -> Merge(Enter, NextIteration) -> Switch(Merge, LoopCond)
//   Switch:1 -> the body -> NextIteration(next_k) -> back into the Merge
//   Switch:0 -> Exit (the final value)
// and the condition is LoopCond's input, computed from the Merges. An Enter with is_constant
// set brings in a value every trip reads unchanged (an invariant). The frame becomes one Loop:
// the condition's nodes converted with the Merges bound to the initial values (the first test,
// in the enclosing graph), and a body of the nodes that lead to the NextIterations, the
// Switches bound to the loop's variables, followed by the condition again on their next values.
#include <kiln/error.h>

#include <algorithm>

#include "frontend/tf/control_flow.h"
#include "frontend/tf/graph_walk.h"

namespace kiln::tf_fe {

namespace {

struct LoopVar {
  int enter = -1, merge = -1, next_iteration = -1, switch_node = -1;
  std::vector<int> exits;
};

const NodeInput& data_input(const NodeSet& set, int node, int k, const std::string& what) {
  int seen = 0;
  for (const NodeInput& r : set.inputs(node)) {
    if (r.control) continue;
    if (seen++ == k) return r;
  }
  throw Error(set.describe(node) + ": has no input " + std::to_string(k) + " (" + what + ")");
}

int count_data_inputs(const NodeSet& set, int node) {
  int n = 0;
  for (const NodeInput& r : set.inputs(node)) n += r.control ? 0 : 1;
  return n;
}

bool bool_attr(const tfpb::NodeDef& n, const std::string& a) {
  auto it = n.attr().find(a);
  return it != n.attr().end() && it->second.b();
}

std::string loop_name(const std::string& frame) {
  const std::string suffix = "/while_context";
  if (frame.size() > suffix.size() && frame.compare(frame.size() - suffix.size(), suffix.size(), suffix) == 0)
    return frame.substr(0, frame.size() - suffix.size());
  return frame;
}

}  // namespace

void GraphWalk::build_frame(const NodeSet& set, int f, Scope& scope) {
  const Frame& fr = set.frame(f);
  const std::string what = "TensorFlow while loop '" + fr.name + "'" + set.where();
  // What the loop reads from outside must exist before it is built (a value only its body
  // reads can come after its Exits in the topological order).
  walk(set, scope, needed(set, fr.parent, fr.outer_inputs, scope));

  int loop_cond = -1;
  std::vector<LoopVar> vars;
  std::map<int, int> var_of_merge;
  for (int i : fr.nodes) {
    const std::string& op = set.node(i).op();
    if (op == "LoopCond") {
      if (loop_cond >= 0)
        throw Error(what + ": has two LoopCond nodes ('" + set.node(loop_cond).name() + "', '" + set.node(i).name() + "')");
      loop_cond = i;
    } else if ((op == "Merge" || op == "RefMerge") && !set.is_cond_merge(i)) {
      LoopVar v;
      v.merge = i;
      for (const NodeInput& r : set.inputs(i)) {
        if (r.control) continue;
        if (r.back_edge && v.next_iteration < 0) v.next_iteration = r.node;
        else if (!r.back_edge && v.enter < 0 && std::find(fr.enters.begin(), fr.enters.end(), r.node) != fr.enters.end() &&
                 !bool_attr(set.node(r.node), "is_constant"))
          v.enter = r.node;
        else v.enter = v.next_iteration = -2;
      }
      if (v.enter < 0 || v.next_iteration < 0)
        throw Error(set.describe(i) + ": a Merge in while loop '" + fr.name +
                    "' with a NextIteration input must join it and one of the loop's Enters");
      var_of_merge[i] = static_cast<int>(vars.size());
      vars.push_back(v);
    }
  }
  if (loop_cond < 0) throw UnsupportedError(what + ": has no LoopCond (only while loops are supported)");
  const NodeInput pred = data_input(set, loop_cond, 0, "the loop condition");

  for (int i : fr.nodes) {
    const std::string& op = set.node(i).op();
    if ((op == "Switch" || op == "RefSwitch") && !set.is_cond_switch(i)) {
      const NodeInput& data = data_input(set, i, 0, "data");
      const NodeInput& p = data_input(set, i, 1, "pred");
      auto it = data.node >= 0 ? var_of_merge.find(data.node) : var_of_merge.end();
      if (p.node != loop_cond || it == var_of_merge.end())
        throw Error(set.describe(i) + ": a Switch on a LoopCond in while loop '" + fr.name +
                    "' must split a loop variable's Merge on that loop's LoopCond");
      LoopVar& v = vars[it->second];
      if (v.switch_node >= 0)
        throw Error(set.describe(i) + ": loop variable '" + set.node(v.merge).name() + "' has two Switches");
      v.switch_node = i;
    }
  }
  for (int x : fr.exits) {
    const NodeInput& r = data_input(set, x, 0, "the value leaving the loop");
    bool found = false;
    for (LoopVar& v : vars)
      if (r.node == v.switch_node && r.output == 0) {
        v.exits.push_back(x);
        found = true;
      }
    if (!found) throw UnsupportedError(set.describe(x) + ": an Exit must take a loop Switch's output 0");
  }
  std::vector<int> invariants;
  for (int e : fr.enters) {
    if (bool_attr(set.node(e), "is_constant")) {
      invariants.push_back(e);
      continue;
    }
    bool merged = false;
    for (const LoopVar& v : vars) merged = merged || v.enter == e;
    if (!merged) throw Error(set.describe(e) + ": a loop variable's Enter (is_constant false) must feed a Merge");
  }
  for (const LoopVar& v : vars) {
    if (v.switch_node < 0)
      throw Error(set.describe(v.merge) + ": loop variable has no Switch on the LoopCond");
    if (count_data_inputs(set, v.next_iteration) != 1)
      throw Error(set.describe(v.next_iteration) + ": takes one input");
  }

  std::vector<ir::Value*> init, invariant_values;
  for (const LoopVar& v : vars) init.push_back(input_value(set, scope, v.enter, data_input(set, v.enter, 0, "value")));
  for (int e : invariants) invariant_values.push_back(input_value(set, scope, e, data_input(set, e, 0, "value")));
  const std::string name = scope.prefix + loop_name(fr.name);

  // A scope inside the loop: the invariants and, for each variable, the value its Merge and
  // Switch:1 stand for.
  auto inner = [&](ir::Graph& g, const std::string& prefix, const std::vector<ir::Value*>& values, bool body) {
    Scope s;
    s.parent = &scope;
    s.graph = &g;
    s.prefix = prefix;
    s.args = scope.args;
    s.branch = scope.branch;
    for (size_t k = 0; k < invariants.size(); ++k) s.values[invariants[k]] = {invariant_values[k]};
    for (size_t k = 0; k < vars.size(); ++k) {
      s.values[vars[k].merge] = {values[k], nullptr};
      if (body) s.values[vars[k].switch_node] = {nullptr, values[k]};
    }
    return s;
  };
  LoopParts parts;
  parts.cond = [&](ir::Graph& g, const std::vector<ir::Value*>& values, bool in_body) {
    Scope s = inner(g, in_body ? name + "/next_cond/" + scope.prefix : scope.prefix, values, false);
    walk(set, s, needed(set, f, {pred.node}, s));
    return input_value(set, s, loop_cond, pred);
  };
  parts.body = [&](ir::Graph& g, const std::vector<ir::Value*>& values) {
    Scope s = inner(g, scope.prefix, values, true);
    std::vector<int> targets;
    for (const LoopVar& v : vars) targets.push_back(data_input(set, v.next_iteration, 0, "next value").node);
    walk(set, s, needed(set, f, targets, s));
    std::vector<ir::Value*> next;
    for (const LoopVar& v : vars)
      next.push_back(input_value(set, s, v.next_iteration, data_input(set, v.next_iteration, 0, "next value")));
    return next;
  };
  std::vector<ir::Value*> results = emit_loop(*this, *scope.graph, name, init, parts, what);

  // The Exits are the Loop's outputs, named as TensorFlow names them.
  for (size_t k = 0; k < vars.size(); ++k) {
    for (int x : vars[k].exits) {
      ir::Value* v = results[k];
      const std::string tn = scope.prefix + set.node(x).name() + ":0";
      if (!tf_named_.count(v) && !scope.graph->find_value(tn)) {
        scope.graph->rename_value(v, tn);
        tf_named_.insert(v);
      }
      scope.values[x] = {v};
    }
  }
}

}  // namespace kiln::tf_fe
