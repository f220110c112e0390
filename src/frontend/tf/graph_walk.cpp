#include "frontend/tf/graph_walk.h"

#include <kiln/error.h>

#include <algorithm>

#include "frontend/tf/tensor_value.h"

namespace kiln::tf_fe {

namespace {

// Ops that only order execution or check at run time: no value comes out of them.
bool is_effect_only(const std::string& op) { return op == "NoOp" || op == "Assert"; }

bool is_tf1_control_flow(const std::string& op) {
  return op == "Enter" || op == "Exit" || op == "Switch" || op == "Merge" || op == "NextIteration" ||
         op == "LoopCond" || op == "RefEnter" || op == "RefExit" || op == "RefSwitch" || op == "RefMerge" ||
         op == "RefNextIteration";
}

bool is_enter(const std::string& op) { return op == "Enter" || op == "RefEnter"; }
bool is_exit(const std::string& op) { return op == "Exit" || op == "RefExit"; }

std::string tensor_name(const std::string& node, int k) { return node + ":" + std::to_string(k); }

// Restores the function-call stack when a call ends, by an error too.
struct CallGuard {
  std::vector<std::string>& stack;
  ~CallGuard() { stack.pop_back(); }
};

}  // namespace

GraphWalk::GraphWalk(const tfpb::FunctionDefLibrary& library) {
  for (const tfpb::FunctionDef& f : library.function()) functions_[f.signature().name()] = &f;
}

std::vector<int> GraphWalk::root_region(const NodeSet& set) {
  std::vector<int> region;
  for (int i : set.order()) {
    const int f = set.frame_of(i);
    if (f == 0 || (is_exit(set.node(i).op()) && set.frame(f).parent == 0)) region.push_back(i);
  }
  return region;
}

std::vector<int> GraphWalk::needed(const NodeSet& set, int frame, const std::vector<int>& targets,
                                   const Scope& scope) const {
  std::vector<int> out, stack(targets.rbegin(), targets.rend());
  std::vector<bool> seen(set.size(), false);
  while (!stack.empty()) {
    const int i = stack.back();
    stack.pop_back();
    if (seen[i]) continue;
    seen[i] = true;
    if (scope.find(i)) continue;
    const int f = set.frame_of(i);
    const std::string& op = set.node(i).op();
    if (is_exit(op) && set.frame(f).parent == frame) {  // a loop nested here: its Exits and what it reads
      out.push_back(i);
      for (int j : set.frame(f).outer_inputs) stack.push_back(j);
      continue;
    }
    if (f != frame) {
      const std::string here = frame == 0 ? std::string("outside any while loop") : "in while loop '" + set.frame(frame).name + "'";
      if (set.within(frame, f))
        throw Error(set.describe(i) + ": is read " + here + " but not computed before it");
      throw Error(set.describe(i) + ": runs in while loop '" + set.frame(f).name + "' but is read " + here +
                  " (not through an Exit)");
    }
    if (is_enter(op)) continue;  // the loop it enters reads it
    out.push_back(i);
    for (const NodeInput& r : set.inputs(i))
      if (r.node >= 0 && !r.control && !r.back_edge) stack.push_back(r.node);
  }
  std::sort(out.begin(), out.end(), [&](int a, int b) { return set.position(a) < set.position(b); });
  return out;
}

void GraphWalk::walk(const NodeSet& set, Scope& scope, const std::vector<int>& region) {
  for (int i : region) {
    if (scope.find(i)) continue;
    const std::string& op = set.node(i).op();
    if (set.branch_of(i) != scope.branch) {
      if (set.branch_within(set.branch_of(i), scope.branch)) continue;  // converted with its conditional's Merge
      throw Error(set.describe(i) + ": runs outside the conditional branch being converted but was not converted before it");
    }
    if (op == "Placeholder") throw Error(set.describe(i) + ": a Placeholder can only be a graph input");
    if (set.is_cond_switch(i)) continue;  // its outputs are bound in the branches of its Merge
    if (set.is_cond_merge(i)) {
      build_cond(set, i, scope);
    } else if (is_effect_only(op)) {
      scope.values[i] = {};
    } else if (is_exit(op)) {
      build_frame(set, set.frame_of(i), scope);
    } else if (is_enter(op)) {
      continue;  // read by the loop it enters
    } else if (is_tf1_control_flow(op)) {
      throw UnsupportedError(set.describe(i) +
                             ": TensorFlow 1 control flow outside a while loop's Enter -> Merge -> Switch -> "
                             "NextIteration / Exit structure or a conditional's Switch -> Merge is not supported");
    } else if (op == "Const") {
      constant(set, scope, i);
    } else {
      convert(set, scope, i);
    }
  }
}

ir::Value* GraphWalk::input_value(const NodeSet& set, const Scope& scope, int node, const NodeInput& r) const {
  if (r.arg >= 0) {
    if (r.arg >= static_cast<int>(scope.args.size()))
      throw Error(set.describe(node) + ": input '" + r.text + "' is an argument the call does not give");
    return scope.args[r.arg];
  }
  const std::vector<ir::Value*>* outs = scope.find(r.node);
  const std::string& producer = set.node(r.node).name();
  if (!outs)
    throw Error(set.describe(node) + ": input '" + r.text + "' has no value where the node runs (node '" + producer +
                "' is converted after it)");
  if (r.output < 0 || r.output >= static_cast<int>(outs->size()))
    throw Error(set.describe(node) + ": input '" + r.text + "' does not exist (node '" + producer + "' has " +
                std::to_string(outs->size()) + " outputs)");
  if (!(*outs)[r.output])
    throw Error(set.describe(node) + ": input '" + r.text +
                "' has no value where the node runs (a Switch branch or Merge index a while loop does not carry "
                "there)");
  return (*outs)[r.output];
}

void GraphWalk::constant(const NodeSet& set, Scope& scope, int i) {
  const tfpb::NodeDef& nd = set.node(i);
  const std::string what = set.describe(i);
  if (!nd.attr().count("value")) throw Error(what + ": attribute 'value' is missing");
  const tfpb::TensorProto& p = nd.attr().at("value").tensor();
  if (p.tensor_content().empty() && p.float_val().empty() && p.int_val().empty() && p.int64_val().empty() &&
      p.half_val().empty() && p.bool_val().empty() && p.double_val().empty() && p.string_val().empty()) {
    // A TF.js Const whose weight the manifest did not give holds only dtype and shape.
    int64_t numel = 1;
    for (const auto& d : p.tensor_shape().dim()) numel *= d.size();
    if (numel != 0) throw Error(what + ": has no value (its weight is missing from the weights manifest)");
  }
  ir::Graph& g = *scope.graph;
  std::string name = scope.prefix + nd.name();
  if (g.find_value(name)) name = g.unique_name(name);
  ir::Value* v = g.add_constant(name, tensor_from_proto(p, what));
  v->type = ir::TensorType::from_dims(v->constant().dtype(), v->constant().dims());
  scope.values[i] = {v};
}

void GraphWalk::convert(const NodeSet& set, Scope& scope, int i) {
  const tfpb::NodeDef& nd = set.node(i);
  const ConverterTable& table = converters();
  auto conv = table.find(nd.op());
  if (conv == table.end())
    throw UnsupportedError(set.describe(i) + ": TensorFlow op '" + nd.op() + "' is not supported");
  std::vector<ir::Value*> ins;
  for (const NodeInput& r : set.inputs(i))
    if (!r.control) ins.push_back(input_value(set, scope, i, r));
  ir::Graph& g = *scope.graph;
  Converter c(g, infer_, nd, std::move(ins), this, set.where(), scope.prefix);
  std::vector<ir::Value*> outs;
  // An error of the ops a converter emits (their inference) names an ONNX node: say which
  // TensorFlow node it came from.
  auto named = [&](const Error& e) {
    const std::string msg = e.what();
    return msg.rfind("TensorFlow ", 0) == 0 ? msg : set.describe(i) + ": " + msg;
  };
  try {
    outs = conv->second(c);
  } catch (const UnsupportedError& e) {
    throw UnsupportedError(named(e));
  } catch (const Error& e) {
    throw Error(named(e));
  }
  // What the converter made carries TensorFlow's tensor name ("node:k"), so that `keep`,
  // `inspect` and errors speak of the tensors as the model's author knows them. A tensor passed
  // through (Identity and its kin, or a value of an enclosing graph) gets an Identity node of
  // that name, which the optimizer removes again.
  for (size_t k = 0; k < outs.size(); ++k) {
    ir::Value* v = outs[k];
    const std::string tn = scope.prefix + tensor_name(nd.name(), static_cast<int>(k));
    if (!v || g.find_value(tn)) continue;
    if (v->owner() != &g || v->is_constant() || v->is_graph_input() || tf_named_.count(v)) {
      ir::Value* id = g.add_value(tn, v->type);
      infer_.infer_node(*g.add_node("Identity", {v}, {id}, {}, tn));
      v = outs[k] = id;
    } else {
      g.rename_value(v, tn);
    }
    tf_named_.insert(v);
  }
  scope.values[i] = std::move(outs);
}

namespace {
void detach(ir::Graph& g) {
  for (ir::Node* n : g.nodes()) {
    for (int i = 0; i < n->num_inputs(); ++i) n->set_input(i, nullptr);
    for (auto& [k, a] : n->attrs) {
      if (a.g) detach(*a.g);
      for (auto& sg : a.graphs) detach(*sg);
    }
  }
}
}  // namespace

void GraphWalk::drop(std::shared_ptr<ir::Graph> g) {
  detach(*g);
  dropped_.push_back(std::move(g));
}

std::vector<ir::Value*> GraphWalk::call_function(const std::string& fn, ir::Graph& into,
                                                 const std::vector<ir::Value*>& args, const std::string& prefix,
                                                 const std::string& caller) {
  auto it = functions_.find(fn);
  if (it == functions_.end()) throw Error(caller + ": function '" + fn + "' is not in the graph's library");
  if (std::find(calling_.begin(), calling_.end(), fn) != calling_.end())
    throw UnsupportedError(caller + ": function '" + fn + "' calls itself (recursion cannot be imported)");
  const tfpb::FunctionDef& fd = *it->second;
  const std::string where = " in function '" + fn + "'";
  auto& body = bodies_[fn];
  if (!body) {
    std::vector<std::string> names;
    for (const auto& a : fd.signature().input_arg()) {
      if (!a.number_attr().empty() || !a.type_list_attr().empty())
        throw UnsupportedError("function '" + fn + "': input argument '" + a.name() +
                               "' is a list of tensors (only single-tensor arguments are supported)");
      names.push_back(a.name());
    }
    body = std::make_unique<NodeSet>(fd.node_def(), &names, where);
  }
  const NodeSet& set = *body;
  const int nargs = fd.signature().input_arg_size();
  if (static_cast<int>(args.size()) != nargs)
    throw Error(caller + ": calls function '" + fn + "' with " + std::to_string(args.size()) + " arguments, it takes " +
                std::to_string(nargs));
  std::vector<NodeInput> rets;
  std::vector<int> targets;
  for (const auto& o : fd.signature().output_arg()) {
    auto r = fd.ret().find(o.name());
    if (r == fd.ret().end()) throw Error("function '" + fn + "': output '" + o.name() + "' has no ret entry");
    rets.push_back(set.resolve(r->second, "function '" + fn + "' output '" + o.name() + "'"));
    if (rets.back().node >= 0) targets.push_back(rets.back().node);
  }
  Scope scope;
  scope.graph = &into;
  scope.prefix = prefix;
  scope.args = args;
  calling_.push_back(fn);
  {
    CallGuard guard{calling_};
    walk(set, scope, needed(set, 0, targets, scope));
  }
  std::vector<ir::Value*> outs;
  for (size_t k = 0; k < rets.size(); ++k) {
    const NodeInput& r = rets[k];
    if (r.arg >= 0) {
      outs.push_back(args[r.arg]);
      continue;
    }
    const auto& values = *scope.find(r.node);
    if (r.output >= static_cast<int>(values.size()) || !values[r.output])
      throw Error("function '" + fn + "': output '" + fd.signature().output_arg(static_cast<int>(k)).name() + "' ('" +
                  r.text + "') does not exist");
    outs.push_back(values[r.output]);
  }
  return outs;
}

}  // namespace kiln::tf_fe
