#include "fusion/collapse_groups.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "fusion/access_plan.h"
#include "ops/core/registry.h"
#include "ir/graph_util.h"

namespace kiln::fusion {

namespace {

bool elementwise_kind(const ir::Node& n) {
  const ops::OpDef* def = ops::Registry::instance().find(n.domain(), n.op_type());
  return def && (def->pattern == ops::PatternKind::ElemWise || def->pattern == ops::PatternKind::Broadcast);
}

bool reduce_kind(const ir::Node& n) {
  const ops::OpDef* def = ops::Registry::instance().find(n.domain(), n.op_type());
  return def && def->pattern == ops::PatternKind::CommReduce;
}

// Connected pieces of `members` (edges between members only), each in topological order.
std::vector<std::vector<ir::Node*>> components(const std::vector<ir::Node*>& members) {
  std::unordered_map<ir::Node*, int> parent;
  for (size_t i = 0; i < members.size(); ++i) parent[members[i]] = static_cast<int>(i);
  std::vector<int> up(members.size());
  for (size_t i = 0; i < up.size(); ++i) up[i] = static_cast<int>(i);
  auto find = [&](int x) {
    while (up[x] != x) x = up[x] = up[up[x]];
    return x;
  };
  for (size_t i = 0; i < members.size(); ++i)
    for (const ir::Value* v : members[i]->inputs())
      if (v && v->producer() && parent.count(v->producer())) up[find(static_cast<int>(i))] = find(parent[v->producer()]);
  std::map<int, std::vector<ir::Node*>> by_root;
  for (size_t i = 0; i < members.size(); ++i) by_root[find(static_cast<int>(i))].push_back(members[i]);
  std::vector<std::vector<ir::Node*>> out;
  for (auto& [r, nodes] : by_root) out.push_back(std::move(nodes));
  return out;
}

// Nodes of `group` reachable from `from` through group members only.
std::unordered_set<const ir::Node*> reachable(const std::vector<ir::Node*>& from,
                                              const std::unordered_set<const ir::Node*>& group) {
  std::unordered_set<const ir::Node*> seen;
  std::vector<const ir::Node*> stack(from.begin(), from.end());
  while (!stack.empty()) {
    const ir::Node* n = stack.back();
    stack.pop_back();
    for (const ir::Value* o : n->outputs()) {
      if (!o) continue;
      for (const ir::Use& u : o->uses())
        if (group.count(u.node) && seen.insert(u.node).second) stack.push_back(u.node);
    }
  }
  return seen;
}

// Collapsing `piece` must not close a cycle: no other member of the group may be both
// downstream and upstream of it (paths leaving the group never come back: groups are convex).
bool collapsible(const std::vector<ir::Node*>& piece, const std::vector<ir::Node*>& group) {
  std::unordered_set<const ir::Node*> in_group(group.begin(), group.end());
  std::unordered_set<const ir::Node*> in_piece(piece.begin(), piece.end());
  auto down = reachable(piece, in_group);
  for (const ir::Node* m : group) {
    if (in_piece.count(m) || !down.count(m)) continue;
    auto from_m = reachable({const_cast<ir::Node*>(m)}, in_group);
    for (const ir::Node* p : piece)
      if (from_m.count(p)) return false;
  }
  return true;
}

// Replaces `piece` by one kiln.FusedElementwise node, or by a kiln.FusedReduce when `reduce`
// (the group's sink, last in the piece) ends it.
bool fuse(ir::Graph& g, const std::vector<ir::Node*>& piece, const ir::Node* reduce = nullptr) {
  std::unordered_set<const ir::Node*> in_piece(piece.begin(), piece.end());
  std::vector<ir::Value*> ext_in, ext_out;
  std::set<const ir::Value*> seen_in;
  for (ir::Node* n : piece)
    for (ir::Value* v : n->inputs()) {
      if (!v || v->is_constant() || (v->producer() && in_piece.count(v->producer()))) continue;
      if (seen_in.insert(v).second) ext_in.push_back(v);
    }
  for (ir::Node* n : piece)
    for (ir::Value* o : n->outputs()) {
      if (!o) continue;
      bool outside = ir::is_graph_output(g, o);
      for (const ir::Use& u : o->uses()) outside = outside || !in_piece.count(u.node);
      if (outside) ext_out.push_back(o);
    }
  if (ext_out.empty()) return false;
  // One iteration shape: every output has the same static shape, and the view members
  // (Reshape, Transpose, ...) fold into strides.
  for (const ir::Value* o : ext_out)
    if (!o->type.is_static() || o->type.static_dims() != ext_out[0]->type.static_dims()) return false;
  for (ir::Node* n : piece)
    for (const ir::Value* v : n->outputs())
      if (v && !v->type.is_static()) return false;
  if (reduce) {
    // The prologue computes the reduction's input in one loop; only the reduction's output leaves.
    if (ext_out.size() != 1 || ext_out[0] != reduce->output(0) || piece.back() != reduce) return false;
    const ir::Value* r_in = reduce->input(0);
    if (!r_in->producer() || !in_piece.count(r_in->producer()) ||
        !plan_access(std::vector<const ir::Node*>(piece.begin(), piece.end() - 1), {r_in}))
      return false;
  } else if (std::any_of(piece.begin(), piece.end(), [](const ir::Node* n) { return is_view_op(*n); }) &&
             !plan_access(std::vector<const ir::Node*>(piece.begin(), piece.end()),
                          std::vector<const ir::Value*>(ext_out.begin(), ext_out.end()))) {
    return false;
  }

  auto body = std::make_shared<ir::Graph>();
  body->name = "fused_" + piece.front()->name();
  body->parent = &g;
  body->opsets = g.opsets;
  std::unordered_map<const ir::Value*, ir::Value*> map;
  for (ir::Value* v : ext_in) map[v] = body->add_input(v->name(), v->type);
  for (ir::Node* n : piece) {
    std::vector<ir::Value*> ins, outs;
    for (ir::Value* v : n->inputs()) {
      if (!v) { ins.push_back(nullptr); continue; }
      if (!map.count(v)) map[v] = body->add_constant(v->name(), v->constant());  // only constants are missing
      ins.push_back(map[v]);
    }
    for (ir::Value* o : n->outputs()) {
      if (!o) { outs.push_back(nullptr); continue; }
      outs.push_back(map[o] = body->add_value(o->name(), o->type));
    }
    body->add_node(n->op_type(), ins, outs, n->attrs, n->name(), n->domain());
  }
  for (ir::Value* o : ext_out) body->add_output(map.at(o));

  std::vector<ir::Value*> new_outs;
  for (ir::Value* o : ext_out) new_outs.push_back(ir::add_value_like(g, o, o->name()));
  ir::use_kiln_domain(g);
  g.add_node(reduce ? "FusedReduce" : "FusedElementwise", ext_in, new_outs, {{"body", ir::Attribute::of_graph(body)}},
             g.unique_name("fused_" + piece.front()->name()), "kiln");
  for (size_t i = 0; i < ext_out.size(); ++i) g.replace_all_uses(ext_out[i], new_outs[i]);
  return true;
}

// A reduction's epilogue: while its result feeds exactly one elementwise op (or collapsed
// elementwise group) of the reduced shape (`+ eps`, `Sqrt`, a scale), it joins the
// kiln.FusedReduce body and runs on the reduced values before they are written. The partitioner ends groups at reductions (TVM's
// rule), so this happens here, on the collapsed graph. Nothing can cycle: the op is the
// reduction's only reader, so none of its other inputs depends on the reduction.
void absorb_reduce_epilogues(ir::Graph& g, const std::function<bool(const ir::Node&)>& evaluable, CollapseStats& st) {
  std::vector<ir::Node*> reductions;
  for (ir::Node* f : g.nodes())
    if (f->domain() == "kiln" && f->op_type() == "FusedReduce") reductions.push_back(f);
  for (ir::Node* f : reductions) {
    for (;;) {
      ir::Value* r = f->output(0);
      if (ir::is_graph_output(g, r) || r->uses().size() != 1) break;
      ir::Node* c = r->uses()[0].node;
      const bool fused = c->domain() == "kiln" && c->op_type() == "FusedElementwise";
      if (!(fused || (elementwise_kind(*c) && evaluable(*c))) || c->num_outputs() != 1 || !c->output(0) ||
          !c->output(0)->type.is_static() || c->output(0)->type.static_dims() != r->type.static_dims())
        break;
      ir::Graph& body = *f->attrs.at("body").g;
      // Outer values -> values of f's body: f's inputs, r, and (added here) c's other inputs.
      std::unordered_map<const ir::Value*, ir::Value*> map;
      for (int i = 0; i < f->num_inputs(); ++i) map[f->input(i)] = body.inputs()[i];
      map[r] = body.outputs()[0];
      std::vector<ir::Value*> new_ins(f->inputs().begin(), f->inputs().end());
      auto outer = [&](ir::Value* v) -> ir::Value* {
        if (!v) return nullptr;
        if (!map.count(v)) {
          if (v->is_constant()) {
            map[v] = body.add_constant(body.unique_name(v->name()), v->constant());
          } else {
            map[v] = body.add_input(body.unique_name(v->name()), v->type);
            new_ins.push_back(v);
          }
        }
        return map[v];
      };
      // The ops to append: c itself, or the body of a collapsed elementwise group.
      std::unordered_map<const ir::Value*, ir::Value*> inner;
      std::vector<const ir::Node*> ops{c};
      const ir::Value* result = c->output(0);
      if (fused) {
        const ir::Graph& cb = *c->attrs.at("body").g;
        for (size_t i = 0; i < cb.inputs().size(); ++i) inner[cb.inputs()[i]] = outer(c->input(static_cast<int>(i)));
        const std::vector<ir::Node*> body_nodes = cb.nodes();  // (a copy: one call, one vector)
        ops.assign(body_nodes.begin(), body_nodes.end());
        result = cb.outputs()[0];
      }
      ir::Value* out = nullptr;
      for (const ir::Node* n : ops) {
        std::vector<ir::Value*> ins;
        for (ir::Value* v : n->inputs()) {
          if (v && inner.count(v)) ins.push_back(inner[v]);
          else if (v && fused && v->is_constant()) ins.push_back(inner[v] = body.add_constant(body.unique_name(v->name()), v->constant()));
          else ins.push_back(outer(v));
        }
        std::vector<ir::Value*> outs;
        for (ir::Value* o : n->outputs()) {
          if (!o) { outs.push_back(nullptr); continue; }
          outs.push_back(inner[o] = body.add_value(body.unique_name(o->name()), o->type));
          if (o == result) out = outs.back();
        }
        body.add_node(n->op_type(), ins, outs, n->attrs, n->name(), n->domain());
      }
      if (!out) break;  // cannot happen: the result is one of the ops' outputs
      body.mutable_outputs() = {out};
      ir::Value* y = ir::add_value_like(g, c->output(0), c->output(0)->name());
      ir::Node* f2 = g.add_node("FusedReduce", new_ins, {y}, {{"body", f->attrs.at("body")}}, f->name(), "kiln");
      g.replace_all_uses(c->output(0), y);
      g.remove_node(c);  // it read r, so it goes first
      g.remove_node(f);
      f = f2;
      if (fused) st.fused_nodes -= 1;  // its nodes were counted when it was made
      else st.nodes_folded += 1;
    }
  }
}

}  // namespace

CollapseStats collapse_groups(ir::Graph& g, const FusionOptions& opts,
                              const std::function<bool(const ir::Node&)>& evaluable) {
  CollapseStats st;
  if (opts.level == 0) return st;
  std::vector<std::string> names;
  for (const ir::Value* v : g.outputs()) names.push_back(v->name());
  for (const Group& group : partition(g, opts)) {
    if (group.nodes.size() < 2) continue;
    std::vector<ir::Node*> members;
    for (ir::Node* n : group.nodes)
      if ((elementwise_kind(*n) || is_view_op(*n)) && evaluable(*n)) members.push_back(n);
    // A reduction only ends a group (the partitioner's rule): it takes its prologue along.
    ir::Node* reduce = group.nodes.back();
    if (reduce_kind(*reduce) && evaluable(*reduce)) members.push_back(reduce);
    else reduce = nullptr;
    auto try_piece = [&](const std::vector<ir::Node*>& piece, const ir::Node* r) {
      if (piece.size() < 2 || !collapsible(piece, group.nodes) || !fuse(g, piece, r)) return false;
      st.fused_nodes += 1;
      st.nodes_folded += static_cast<int>(piece.size());
      return true;
    };
    auto try_elementwise = [&](const std::vector<ir::Node*>& piece) {
      // Views alone stay the copies (or free reshapes) they are.
      std::vector<ir::Node*> compute;
      for (ir::Node* n : piece)
        if (!is_view_op(*n)) compute.push_back(n);
      if (compute.empty() || try_piece(piece, nullptr) || compute.size() == piece.size()) return;
      // No single loop through the views: fuse the elementwise parts on their own.
      for (const auto& sub : components(compute)) try_piece(sub, nullptr);
    };
    for (auto piece : components(members)) {
      if (!reduce || piece.back() != reduce) {
        try_elementwise(piece);
        continue;
      }
      if (try_piece(piece, reduce)) continue;
      piece.pop_back();
      for (const auto& sub : components(piece)) try_elementwise(sub);
    }
  }
  if (st.fused_nodes == 0) return st;
  ir::remove_dead_nodes(g);  // the collapsed members, so each value's uses are the live ones
  absorb_reduce_epilogues(g, evaluable, st);
  g.topological_sort();
  ir::restore_output_names(g, names);
  return st;
}

std::unique_ptr<passes::Pass> make_collapse_groups_pass(const FusionOptions& opts,
                                                        std::function<bool(const ir::Node&)> evaluable,
                                                        CollapseStats* stats) {
  return std::make_unique<passes::FunctionPass>("collapse_groups", [=](ir::Graph& g) {
    *stats = collapse_groups(g, opts, evaluable);
    return stats->fused_nodes > 0;
  });
}

}  // namespace kiln::fusion
