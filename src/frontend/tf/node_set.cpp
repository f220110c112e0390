#include "frontend/tf/node_set.h"

#include <kiln/error.h>

#include <algorithm>
#include <queue>

namespace kiln::tf_fe {

namespace {

bool all_digits(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

// Inside a function body an output is named by its op's output argument: "node:arg:k". Most
// ops have one output argument (a single tensor or a list), where k is the output's index.
// These have several, each one tensor: the argument's position is the output's index.
const std::map<std::string, std::vector<std::string>>& output_args() {
  static const std::map<std::string, std::vector<std::string>> table = [] {
    std::map<std::string, std::vector<std::string>> t;
    const std::vector<std::string> bn = {"y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2",
                                         "reserve_space_3"};
    t["FusedBatchNorm"] = t["FusedBatchNormV2"] = {bn.begin(), bn.end() - 1};
    t["FusedBatchNormV3"] = bn;
    t["TopKV2"] = t["TopK"] = {"values", "indices"};
    t["Unique"] = {"y", "idx"};
    t["NonMaxSuppressionV4"] = {"selected_indices", "valid_outputs"};
    t["NonMaxSuppressionV5"] = {"selected_indices", "selected_scores", "valid_outputs"};
    t["Switch"] = {"output_false", "output_true"};
    t["Merge"] = {"output", "value_index"};
    t["TensorArrayV3"] = {"handle", "flow"};
    t["TensorListPopBack"] = {"output_handle", "tensor"};
    return t;
  }();
  return table;
}

bool is_merge(const std::string& op) { return op == "Merge" || op == "RefMerge"; }
bool is_next_iteration(const std::string& op) { return op == "NextIteration" || op == "RefNextIteration"; }
bool is_enter(const std::string& op) { return op == "Enter" || op == "RefEnter"; }
bool is_exit(const std::string& op) { return op == "Exit" || op == "RefExit"; }

}  // namespace

NodeSet::NodeSet(const NodeDefs& nodes, const std::vector<std::string>* args, std::string where)
    : function_(args != nullptr), where_(std::move(where)) {
  if (args) args_ = *args;
  for (int i = 0; i < nodes.size(); ++i) {
    const tfpb::NodeDef& nd = nodes[i];
    if (nd.name().empty())
      throw Error("node " + std::to_string(i) + " (" + nd.op() + ")" + where_ + " has no name");
    if (!index_.emplace(nd.name(), i).second) throw Error("two nodes are named '" + nd.name() + "'" + where_);
    nodes_.push_back(&nd);
  }
  const int n = size();
  inputs_.resize(n);
  data_consumed_.assign(n, false);
  for (int i = 0; i < n; ++i) {
    for (const std::string& s : node(i).input()) {
      NodeInput r = parse(s, describe(i));
      if (r.node >= 0) {
        if (!r.control) data_consumed_[r.node] = true;
        r.back_edge = !r.control && is_merge(node(i).op()) && is_next_iteration(node(r.node).op());
      }
      inputs_[i].push_back(std::move(r));
    }
  }
  sort();
  assign_frames();
  assign_branches();
}

int NodeSet::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? -1 : it->second;
}

std::string NodeSet::describe(int i) const {
  return "TensorFlow node '" + node(i).name() + "' (" + node(i).op() + ")" + where_;
}

bool NodeSet::within(int f, int ancestor) const {
  for (; f >= 0; f = frames_[f].parent)
    if (f == ancestor) return true;
  return false;
}

NodeInput NodeSet::parse(const std::string& s, const std::string& what) const {
  NodeInput r;
  r.text = s;
  std::string body = s;
  if (!body.empty() && body[0] == '^') {
    r.control = true;
    body = body.substr(1);
  }
  std::string name = body, arg_name;
  bool has_arg = false;
  const size_t colon = body.find(':');
  if (colon != std::string::npos) {
    name = body.substr(0, colon);
    std::string rest = body.substr(colon + 1);
    const size_t colon2 = rest.find(':');
    if (colon2 != std::string::npos) {  // node:output_arg:k
      arg_name = rest.substr(0, colon2);
      has_arg = true;
      rest = rest.substr(colon2 + 1);
    } else if (!all_digits(rest)) {  // node:output_arg
      arg_name = rest;
      has_arg = true;
      rest = "0";
    }
    if (!all_digits(rest) || rest.size() > 6) throw Error(what + ": input '" + s + "' is not a tensor name");
    r.output = std::stoi(rest);
  }
  r.node = find(name);
  if (function_ && (colon == std::string::npos || r.node < 0)) {  // an argument: "x" (or "x:0")
    auto a = std::find(args_.begin(), args_.end(), name);
    if (a != args_.end()) {
      r.node = -1;
      r.arg = static_cast<int>(a - args_.begin());
      if (r.output != 0) throw Error(what + ": input '" + s + "': argument '" + name + "' is a single tensor");
      return r;
    }
  }
  if (r.node < 0)
    throw Error(what + ": input '" + s + "' names no node" + (function_ ? " or argument" : " of the graph"));
  if (has_arg) {
    auto t = output_args().find(node(r.node).op());
    if (t != output_args().end()) {
      auto a = std::find(t->second.begin(), t->second.end(), arg_name);
      if (a == t->second.end())
        throw Error(what + ": input '" + s + "': " + node(r.node).op() + " has no output argument '" + arg_name + "'");
      if (r.output != 0)
        throw Error(what + ": input '" + s + "': output argument '" + arg_name + "' is a single tensor");
      r.output = static_cast<int>(a - t->second.begin());
    }
  }
  return r;
}

NodeInput NodeSet::resolve(const std::string& ref, const std::string& what) const { return parse(ref, what); }

// Kahn's algorithm over data and control edges, lowest node index first (a stable order).
void NodeSet::sort() {
  const int n = size();
  std::vector<std::vector<int>> consumers(n);
  std::vector<int> pending(n, 0);
  for (int i = 0; i < n; ++i)
    for (const NodeInput& r : inputs_[i]) {
      if (r.node < 0 || r.back_edge) continue;
      consumers[r.node].push_back(i);
      ++pending[i];
    }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push(i);
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order_.push_back(i);
    for (int c : consumers[i])
      if (--pending[c] == 0) ready.push(c);
  }
  if (static_cast<int>(order_.size()) != n) {
    for (int i = 0; i < n; ++i)
      if (pending[i] > 0)
        throw Error(describe(i) +
                    ": is on a cycle (only a TensorFlow 1 while loop's NextIteration -> Merge edge may close one)");
  }
  position_.assign(n, 0);
  for (int k = 0; k < n; ++k) position_[order_[k]] = k;
}

void NodeSet::assign_frames() {
  const int n = size();
  frames_.push_back(Frame{});
  frame_of_.assign(n, 0);
  out_frame_.assign(n, 0);
  std::map<std::pair<int, std::string>, int> by_name;  // (parent, frame_name) -> frame
  for (int i : order_) {
    int f = 0;
    int from = -1;  // the input f came from, for the error
    for (const NodeInput& r : inputs_[i]) {
      if (r.node < 0 || r.back_edge) continue;
      const int g = out_frame_[r.node];
      if (within(g, f)) {
        f = g;
        from = r.node;
      } else if (!within(f, g)) {
        throw Error(describe(i) + ": reads '" + node(r.node).name() + "' and '" + node(from).name() +
                    "', which are in two different while-loop frames ('" + frames_[g].name + "', '" + frames_[f].name +
                    "')");
      }
    }
    frame_of_[i] = f;
    frames_[f].nodes.push_back(i);
    const std::string& op = node(i).op();
    if (is_enter(op)) {
      const auto& attrs = node(i).attr();
      auto it = attrs.find("frame_name");
      if (it == attrs.end() || it->second.s().empty()) throw Error(describe(i) + ": has no frame_name");
      auto [pos, added] = by_name.emplace(std::make_pair(f, it->second.s()), static_cast<int>(frames_.size()));
      if (added) {
        Frame child;
        child.name = it->second.s();
        child.parent = f;
        frames_.push_back(std::move(child));
      }
      out_frame_[i] = pos->second;
      frames_[pos->second].enters.push_back(i);
    } else if (is_exit(op)) {
      if (f == 0) throw Error(describe(i) + ": is not inside a while loop (no Enter leads to it)");
      out_frame_[i] = frames_[f].parent;
      frames_[f].exits.push_back(i);
    } else {
      out_frame_[i] = f;
    }
  }
  // What each frame reads from outside itself.
  for (int i = 0; i < n; ++i) {
    for (const NodeInput& r : inputs_[i]) {
      if (r.node < 0 || r.control || r.back_edge) continue;
      // Node i reads r.node: every frame that holds i but not r.node's output reads it from outside.
      const int reader = is_enter(node(i).op()) ? out_frame_[i] : frame_of_[i];
      for (int f = reader; f > 0 && !within(out_frame_[r.node], f); f = frames_[f].parent) {
        auto& outer = frames_[f].outer_inputs;
        if (std::find(outer.begin(), outer.end(), r.node) == outer.end()) outer.push_back(r.node);
      }
    }
  }
}

bool NodeSet::is_cond_switch(int i) const {
  const std::string& op = node(i).op();
  if (op != "Switch" && op != "RefSwitch") return false;
  int seen = 0;
  for (const NodeInput& r : inputs_[i]) {
    if (r.control || seen++ != 1) continue;
    return r.node < 0 || node(r.node).op() != "LoopCond";
  }
  return true;
}

bool NodeSet::is_cond_merge(int i) const {
  if (!is_merge(node(i).op())) return false;
  for (const NodeInput& r : inputs_[i])
    if (r.back_edge) return false;
  return true;
}

NodeInput NodeSet::canonical_pred(int s) const {
  NodeInput p;
  int seen = 0;
  for (const NodeInput& r : inputs_[s])
    if (!r.control && seen++ == 1) p = r;
  if (seen < 2) throw Error(describe(s) + ": has no pred input");
  while (p.node >= 0 && (node(p.node).op() == "Identity" || node(p.node).op() == "Snapshot")) {
    const NodeInput* next = nullptr;
    for (const NodeInput& r : inputs_[p.node])
      if (!r.control) next = &r;
    if (!next) break;
    p = *next;
  }
  return p;
}

bool NodeSet::same_pred(const NodeInput& a, const NodeInput& b) const {
  return a.node == b.node && a.arg == b.arg && a.output == b.output;
}

int NodeSet::child_branch(int parent, const NodeInput& pred, int port) {
  for (int b = 1; b < static_cast<int>(branches_.size()); ++b)
    if (branches_[b].parent == parent && branches_[b].port == port && same_pred(branches_[b].pred, pred)) return b;
  branches_.push_back(Branch{parent, pred, port});
  return static_cast<int>(branches_.size()) - 1;
}

bool NodeSet::branch_within(int b, int ancestor) const {
  for (; b >= 0; b = branches_[b].parent)
    if (b == ancestor) return true;
  return false;
}

int NodeSet::value_branch(const NodeInput& r) const {
  if (r.node < 0) return 0;
  const int b = branch_of_[r.node];
  if (r.control || !is_cond_switch(r.node)) return b;
  const NodeInput pred = canonical_pred(r.node);
  for (int c = 1; c < static_cast<int>(branches_.size()); ++c)
    if (branches_[c].parent == b && branches_[c].port == r.output && same_pred(branches_[c].pred, pred)) return c;
  return b;  // a port nothing reads
}

void NodeSet::assign_branches() {
  const int n = size();
  branches_.push_back(Branch{});
  branch_of_.assign(n, 0);
  for (int i : order_) {
    int b = 0;
    std::string from;  // the input b came from, for the error
    std::vector<int> sides;  // a conditional Merge: the branch of each data input
    for (const NodeInput& r : inputs_[i]) {
      if (r.node < 0 || r.back_edge) continue;
      const int c = value_branch(r);
      if (is_cond_merge(i) && !r.control) {
        sides.push_back(c);
        continue;
      }
      if (branch_within(c, b)) {
        b = c;
        from = r.text;
      } else if (!branch_within(b, c)) {
        throw Error(describe(i) + ": reads '" + r.text + "' and '" + from +
                    "', which only exist in different branches of a conditional");
      }
    }
    if (!sides.empty()) {
      // The Merge runs outside the branches it joins: in the parent of its deepest side, whose
      // other sides are that parent or its branches of the same pred.
      int deepest = sides[0];
      for (int c : sides)
        if (branch_within(c, deepest)) deepest = c;
      const int outside = deepest == 0 ? 0 : branches_[deepest].parent;
      std::vector<int> ports;
      for (int c : sides) {
        if (c == outside) continue;
        if (c <= 0 || branches_[c].parent != outside || !same_pred(branches_[c].pred, branches_[deepest].pred))
          throw UnsupportedError(describe(i) + ": joins values of different conditionals");
        if (std::find(ports.begin(), ports.end(), branches_[c].port) != ports.end())
          throw UnsupportedError(describe(i) + ": joins two values of the same branch");
        ports.push_back(branches_[c].port);
      }
      if (!branch_within(outside, b) && !branch_within(b, outside))
        throw Error(describe(i) + ": its control inputs and its data inputs are in different conditional branches");
      b = branch_within(outside, b) ? outside : b;
    }
    branch_of_[i] = b;
    if (is_cond_switch(i)) {
      const NodeInput pred = canonical_pred(i);
      child_branch(b, pred, 0);
      child_branch(b, pred, 1);
    }
  }
}

}  // namespace kiln::tf_fe
