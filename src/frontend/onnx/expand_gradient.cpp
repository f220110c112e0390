// One Gradient node at a time, in four steps over the graph holding it:
//   1. the forward region: the nodes y depends on, back to the tensors xs and zs name;
//   2. where the node's inputs are other values than those tensors, copies of the region's
//      nodes that read them (directly or through other copies), with the inputs put in;
//   3. which of the region's values carry a gradient: those that depend on an x and lead to y,
//      both through inputs gradients flow to (not a Reshape's shape, not an integer result);
//   4. the backward walk, in reverse order, through each such node's rule, summing the
//      gradients of values read more than once.
// Shape inference runs before each expansion, so the rules see the forward values' types
// (ranks, broadcast dims); a Gradient whose y depends on another's outputs (higher orders)
// waits until that one is expanded.
#include "frontend/onnx/expand_gradient.h"

#include <kiln/error.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "frontend/onnx/gradient_builder.h"
#include "frontend/onnx/gradient_rules.h"
#include "ir/graph_util.h"
#include "ops/core/infer_graph.h"

namespace kiln::onnx_fe {

namespace {

const char* const kTrainingDomain = "ai.onnx.preview.training";

bool is_gradient(const ir::Node& n) { return n.op_type() == "Gradient" && n.domain() == kTrainingDomain; }

void collect_graphs(ir::Graph& g, std::vector<ir::Graph*>& out) {
  out.push_back(&g);
  for (ir::Node* n : g.nodes())
    for (auto& [name, a] : n->attrs) {
      if (a.g) collect_graphs(*a.g, out);
      for (const auto& sg : a.graphs) collect_graphs(*sg, out);
    }
}

// The values n reads: its inputs and what its subgraphs (If/Loop/Scan bodies) read from
// outside them.
std::vector<ir::Value*> reads(ir::Node& n) {
  std::vector<ir::Value*> out;
  for (ir::Value* v : n.inputs())
    if (v) out.push_back(v);
  std::vector<ir::Graph*> bodies;
  for (auto& [name, a] : n.attrs) {
    if (a.g) collect_graphs(*a.g, bodies);
    for (const auto& sg : a.graphs) collect_graphs(*sg, bodies);
  }
  for (ir::Graph* body : bodies)
    for (ir::Node* m : body->nodes())
      for (ir::Value* v : m->inputs())
        if (v && std::find(bodies.begin(), bodies.end(), v->owner()) == bodies.end()) out.push_back(v);
  return out;
}

ir::Value* resolve(const ir::Graph& g, const std::string& name) {
  for (const ir::Graph* s = &g; s; s = s->parent)
    if (ir::Value* v = s->find_value(name)) return v;
  return nullptr;
}

bool carries_gradient(const ir::Value* v) {
  return v && (v->type.dtype == DType::Undefined || dtype_is_float(v->type.dtype));
}

// Whether n's y depends on another Gradient node's outputs, which must be expanded first.
bool waits_for_another(ir::Node& n) {
  const ir::Attribute* y_attr = n.attr("y");
  ir::Value* y = y_attr && y_attr->kind == ir::Attribute::Kind::String ? resolve(*n.owner(), y_attr->s) : nullptr;
  std::unordered_set<const ir::Node*> seen;
  std::vector<ir::Value*> stack;
  if (y) stack.push_back(y);
  while (!stack.empty()) {
    ir::Node* p = stack.back()->producer();
    stack.pop_back();
    if (!p || p->owner() != n.owner() || !seen.insert(p).second) continue;
    if (p != &n && is_gradient(*p)) return true;
    for (ir::Value* r : reads(*p)) stack.push_back(r);
  }
  return false;
}

// The next Gradient node to expand: the first (in order, main graph first) whose y does not
// wait for another; failing that the first, whose expansion then reports why.
ir::Node* next_gradient(ir::Graph& root) {
  std::vector<ir::Graph*> graphs;
  collect_graphs(root, graphs);
  ir::Node* first = nullptr;
  for (ir::Graph* g : graphs)
    for (ir::Node* n : g->nodes()) {
      if (!is_gradient(*n)) continue;
      if (!waits_for_another(*n)) return n;
      if (!first) first = n;
    }
  return first;
}

class Expansion {
 public:
  Expansion(ir::Node& n, ops::ShapeInference& si) : g_(*n.owner()), n_(n), si_(si), b_(g_, n.name()) {}

  void run() {
    read_attributes();
    find_region();
    detach_gradient_node();
    put_inputs_in();
    find_active();
    backward();
    write_outputs();
  }

 private:
  void read_attributes() {
    if (!n_.has_attr("xs")) b_.fail("attribute 'xs' is required");
    if (!n_.has_attr("y")) b_.fail("attribute 'y' is required");
    const std::vector<std::string> xs = n_.attr_strings("xs");
    const std::vector<std::string> zs = n_.attr_strings("zs");
    y_name_ = n_.attr_string("y", "");
    num_xs_ = xs.size();
    const size_t named = xs.size() + zs.size();
    if (xs.empty()) b_.fail("xs names no tensor");
    if (static_cast<size_t>(n_.num_inputs()) != named)
      b_.fail("has " + std::to_string(n_.num_inputs()) + " inputs for the " + std::to_string(named) +
              " tensors xs and zs name");
    if (static_cast<size_t>(n_.num_outputs()) > xs.size())
      b_.fail("has " + std::to_string(n_.num_outputs()) + " outputs for the " + std::to_string(xs.size()) +
              " tensors xs names");
    for (size_t i = 0; i < named; ++i) {
      const std::string attr = i < xs.size() ? "xs" : "zs";
      const std::string& name = i < xs.size() ? xs[i] : zs[i - xs.size()];
      ir::Value* v = resolve(g_, name);
      if (!v) b_.fail(attr + " names '" + name + "', which no node, initializer or graph input produces");
      if (std::find(named_.begin(), named_.end(), v) != named_.end())
        b_.fail("'" + name + "' is named twice in xs and zs");
      ir::Value* in = n_.input(static_cast<int>(i));
      if (!in) b_.fail("input " + std::to_string(i) + ", the value of '" + name + "', is missing");
      if (i < xs.size()) {
        check_float("x '" + name + "'", v);
        check_float("input " + std::to_string(i) + " '" + in->name() + "'", in);
      }
      named_.push_back(v);
      inputs_.push_back(in);
    }
    y_ = resolve(g_, y_name_);
    if (!y_) b_.fail("y names '" + y_name_ + "', which no node, initializer or graph input produces");
    check_float("y '" + y_name_ + "'", y_);
  }

  void check_float(const std::string& what, const ir::Value* v) const {
    if (!carries_gradient(v)) b_.fail(what + " is " + v->type.str() + ", not a floating-point tensor");
  }

  void find_region() {
    const std::unordered_set<const ir::Value*> named(named_.begin(), named_.end());
    std::unordered_set<const ir::Node*> region;
    std::vector<ir::Value*> stack{y_};
    while (!stack.empty()) {
      ir::Value* v = stack.back();
      stack.pop_back();
      ir::Node* p = v->producer();
      if (named.count(v) || !p || p->owner() != &g_) continue;
      if (p == &n_) b_.fail("y '" + y_name_ + "' depends on this Gradient's own outputs");
      if (!region.insert(p).second) continue;
      for (ir::Value* r : reads(*p)) stack.push_back(r);
    }
    for (ir::Node* p : g_.nodes())
      if (region.count(p)) forward_.push_back(p);
  }

  // The node goes; its output values stay (names, graph outputs, readers) on placeholders
  // until write_outputs gives them their producers.
  void detach_gradient_node() {
    for (ir::Value* o : n_.outputs()) {
      outputs_.push_back(o);
      held_.push_back(nullptr);
      if (!o) continue;
      held_.back() = g_.add_value(g_.unique_name(o->name()));
      g_.replace_all_uses(o, held_.back());
    }
    g_.remove_node(&n_);
  }

  ir::Value* at(ir::Value* v) const {
    auto it = instance_.find(v);
    return it == instance_.end() ? v : it->second;
  }

  void put_inputs_in() {
    for (size_t i = 0; i < named_.size(); ++i) {
      if (inputs_[i] == named_[i]) continue;
      // A value of its own, so its gradient stays its own even where one value feeds two names.
      ir::Value* v = b_.op("Identity", {inputs_[i]});
      si_.infer_node(*v->producer());
      instance_[named_[i]] = v;
    }
    if (instance_.empty()) return;
    for (ir::Node*& p : forward_) {
      std::vector<ir::Value*> rs = reads(*p);
      if (std::none_of(rs.begin(), rs.end(), [&](ir::Value* r) { return instance_.count(r) != 0; })) continue;
      if (ir::has_subgraph(*p))
        b_.unsupported(p->describe() + " has a subgraph; the values the Gradient's inputs give cannot be put into it");
      std::vector<ir::Value*> ins, outs;
      for (ir::Value* v : p->inputs()) ins.push_back(v ? at(v) : nullptr);
      for (ir::Value* o : p->outputs()) outs.push_back(o ? g_.add_value(g_.unique_name(o->name())) : nullptr);
      ir::Node* copy = g_.add_node(p->op_type(), ins, outs, p->attrs, g_.unique_name(p->name()), p->domain());
      si_.infer_node(*copy);
      for (int j = 0; j < p->num_outputs(); ++j)
        if (outs[j]) instance_[p->output(j)] = outs[j];
      p = copy;
    }
  }

  void find_active() {
    // Back from y: the values y depends on through inputs gradients flow to.
    std::unordered_set<const ir::Value*> leads{at(y_)};
    for (auto it = forward_.rbegin(); it != forward_.rend(); ++it) {
      ir::Node& p = **it;
      if (std::none_of(p.outputs().begin(), p.outputs().end(), [&](ir::Value* o) { return leads.count(o) != 0; }))
        continue;
      const GradientRule* rule = ir::has_subgraph(p) ? nullptr : find_gradient_rule(p);
      if (!rule) {
        for (ir::Value* r : reads(p)) leads.insert(r);
        continue;
      }
      for (int i = 0; i < p.num_inputs(); ++i)
        if (rule->differentiable(i) && p.input(i)) leads.insert(p.input(i));
    }
    // Forward from the xs: each value that depends on one, and which (for errors).
    for (size_t i = 0; i < num_xs_; ++i) origin_.emplace(at(named_[i]), named_[i]);
    for (ir::Node* p : forward_) {
      if (std::none_of(p->outputs().begin(), p->outputs().end(),
                       [&](ir::Value* o) { return leads.count(o) != 0 && carries_gradient(o); }))
        continue;  // leads nowhere, or only to integer results (Shape, comparisons, indices)
      const GradientRule* rule = ir::has_subgraph(*p) ? nullptr : find_gradient_rule(*p);
      const ir::Value* from = nullptr;
      std::vector<ir::Value*> rs = rule ? p->inputs() : reads(*p);
      for (size_t i = 0; i < rs.size() && !from; ++i) {
        if (!rs[i] || (rule && !rule->differentiable(static_cast<int>(i)))) continue;
        if (auto it = origin_.find(rs[i]); it != origin_.end()) from = it->second;
      }
      if (!from) continue;
      if (!rule) {
        const std::string op = (p->domain().empty() ? "" : p->domain() + ".") + p->op_type();
        b_.fail("no gradient rule for op '" + op + "' (node '" + p->name() + "') on the path from '" + from->name() +
                "' to '" + y_name_ + "'");
      }
      for (ir::Value* o : p->outputs())
        if (carries_gradient(o)) origin_.emplace(o, from);
      active_.push_back(p);
    }
  }

  void backward() {
    ir::Value* y = at(y_);
    if (!origin_.count(y)) return;  // y depends on no x: every gradient is zero
    grad_[y] = b_.filled_like(y, 1);
    for (auto it = active_.rbegin(); it != active_.rend(); ++it) {
      ir::Node& p = **it;
      auto dy = grad_.find(p.output(0));
      if (dy == grad_.end()) continue;
      const GradientRule& rule = *find_gradient_rule(p);
      GradientStep step{p, dy->second, {}, std::vector<ir::Value*>(static_cast<size_t>(p.num_inputs())), b_, si_};
      for (int i = 0; i < p.num_inputs(); ++i)
        step.wanted.push_back(rule.differentiable(i) && p.input(i) && origin_.count(p.input(i)));
      b_.set_node(&p);
      rule.backward(step);
      b_.set_node(nullptr);
      for (int i = 0; i < p.num_inputs(); ++i) {
        if (!step.wanted[i]) continue;
        auto [sum, fresh] = grad_.emplace(p.input(i), step.dx[i]);
        if (!fresh) sum->second = b_.op("Add", {sum->second, step.dx[i]});
      }
    }
  }

  void write_outputs() {
    for (size_t i = 0; i < outputs_.size(); ++i) {
      ir::Value* o = outputs_[i];
      if (!o) continue;
      ir::Value* x = at(named_[i]);
      auto it = grad_.find(x);
      ir::Value* d = it != grad_.end() ? it->second : b_.filled_like(x, 0);
      g_.add_node("Identity", {d}, {o}, {}, g_.unique_name(o->name()));
      g_.replace_all_uses(held_[i], o);
    }
  }

  ir::Graph& g_;
  ir::Node& n_;  // removed by detach_gradient_node
  ops::ShapeInference& si_;
  GradientBuilder b_;
  std::string y_name_;
  size_t num_xs_ = 0;
  std::vector<ir::Value*> named_;   // the tensors xs then zs name
  std::vector<ir::Value*> inputs_;  // the values the node gives them
  ir::Value* y_ = nullptr;
  std::vector<ir::Value*> outputs_, held_;
  std::vector<ir::Node*> forward_;  // the region, in order (copies where inputs were put in)
  std::unordered_map<const ir::Value*, ir::Value*> instance_;  // a region value -> its copy
  std::unordered_map<const ir::Value*, const ir::Value*> origin_;  // a value -> an x it depends on
  std::vector<ir::Node*> active_;
  std::unordered_map<const ir::Value*, ir::Value*> grad_;
};

}  // namespace

int expand_gradients(ir::Graph& g) {
  std::vector<ir::Graph*> graphs;
  collect_graphs(g, graphs);
  bool any = false;
  for (ir::Graph* sg : graphs)
    for (ir::Node* n : sg->nodes()) any = any || is_gradient(*n);
  if (!any) return 0;

  // The session infers the expanded graph itself; the symbols inferred here must not look to
  // it like declared dims.
  std::unordered_map<ir::Value*, ir::TensorType> declared;
  for (ir::Graph* sg : graphs)
    for (ir::Value* v : sg->values()) declared.emplace(v, v->type);

  int expanded = 0;
  while (ir::Node* n = next_gradient(g)) {
    ops::ShapeInference si;
    si.run(g);
    ir::Graph& owner = *n->owner();
    Expansion(*n, si).run();
    owner.topological_sort();
    ++expanded;
  }

  graphs.clear();
  collect_graphs(g, graphs);
  for (ir::Graph* sg : graphs)
    for (ir::Value* v : sg->values()) {
      if (auto it = declared.find(v); it != declared.end()) v->type = it->second;
      else if (!v->is_constant()) v->type = {};
    }
  return expanded;
}

}  // namespace kiln::onnx_fe
