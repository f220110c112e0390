#include "lower/fuse_concat_elementwise.h"

#include <unordered_map>

#include "fusion/access_plan.h"
#include "ir/graph_util.h"

namespace kiln::lower {

namespace {

bool static_float(const ir::Value* v) {
  return v && v->type.is_tensor() && v->type.rank_known && v->type.rank() >= 1 && v->type.is_static() &&
         v->type.dtype == DType::Float;
}

// The FusedElementwise that takes Concat `c` into its body, or nullptr: c's output is its only
// reader's input, and inside that body it is read only by elementwise ops (no views, which could
// read it in another order), in the shape of every body output (no broadcast).
ir::Node* reader_of(const ir::Graph& g, const ir::Node* c, int* index) {
  if (c->domain() != "" || c->op_type() != "Concat" || c->num_outputs() != 1 || c->num_inputs() < 2) return nullptr;
  const ir::Value* y = c->output(0);
  if (!static_float(y) || ir::is_graph_output(g, y) || y->uses().size() != 1) return nullptr;
  const int64_t rank = y->type.rank();
  int64_t axis = c->attr_int("axis", 0);
  if (axis < 0) axis += rank;
  if (axis != rank - 1) return nullptr;
  for (const ir::Value* v : c->inputs())
    if (!static_float(v) || v->is_constant()) return nullptr;
  ir::Node* f = y->uses()[0].node;
  if (f->domain() != "kiln" || f->op_type() != "FusedElementwise") return nullptr;
  for (const ir::Value* o : f->outputs())
    if (!o) return nullptr;
  auto it = f->attrs.find("body");
  if (it == f->attrs.end() || !it->second.g) return nullptr;
  const ir::Graph& body = *it->second.g;
  const int i = y->uses()[0].input_index;
  if (static_cast<int>(body.inputs().size()) != f->num_inputs()) return nullptr;
  for (int k = 0; k < f->num_inputs(); ++k)
    if (k != i && f->input(k) == y) return nullptr;  // read twice
  for (const ir::Node* n : body.nodes())
    if (fusion::is_view_op(*n)) return nullptr;
  for (const ir::Value* o : body.outputs())
    if (!o->type.is_static() || o->type.static_dims() != y->type.static_dims()) return nullptr;
  *index = i;
  return f;
}

void fuse(ir::Graph& g, ir::Node* c, ir::Node* f, int index) {
  const ir::Graph& old = *f->attrs.at("body").g;
  auto body = std::make_shared<ir::Graph>();
  body->name = old.name;
  body->parent = &g;
  body->opsets = old.opsets;
  std::unordered_map<const ir::Value*, ir::Value*> map;
  std::vector<ir::Value*> ins;
  for (int k = 0; k < f->num_inputs(); ++k) {
    if (k == index) continue;
    const ir::Value* b = old.inputs()[k];
    map[b] = body->add_input(body->unique_name(b->name()), b->type);
    ins.push_back(f->input(k));
  }
  std::vector<ir::Value*> pieces;
  for (ir::Value* v : c->inputs()) {
    pieces.push_back(body->add_input(body->unique_name(v->name()), v->type));
    ins.push_back(v);
  }
  const ir::Value* joined = old.inputs()[index];
  map[joined] = body->add_value(body->unique_name(joined->name()), joined->type);
  body->add_node("Concat", pieces, {map[joined]}, c->attrs, c->name());
  for (const ir::Node* n : old.nodes()) {
    std::vector<ir::Value*> nin, nout;
    for (const ir::Value* v : n->inputs()) {
      if (!v) { nin.push_back(nullptr); continue; }
      auto it = map.find(v);
      if (it == map.end()) it = map.emplace(v, body->add_constant(body->unique_name(v->name()), v->constant())).first;
      nin.push_back(it->second);
    }
    for (const ir::Value* o : n->outputs()) nout.push_back(map[o] = body->add_value(body->unique_name(o->name()), o->type));
    body->add_node(n->op_type(), nin, nout, n->attrs, n->name(), n->domain());
  }
  for (const ir::Value* o : old.outputs()) body->add_output(map.at(o));
  std::vector<ir::Value*> outs;
  for (ir::Value* o : f->outputs()) outs.push_back(ir::add_value_like(g, o, g.unique_name(o->name())));
  ir::Node* f2 = g.add_node("FusedElementwise", ins, outs, {{"body", ir::Attribute::of_graph(body)}}, f->name(), "kiln");
  for (int k = 0; k < f->num_outputs(); ++k) g.replace_all_uses(f->output(k), f2->output(k));
}

}  // namespace

int fuse_concat_elementwise(ir::Graph& g) {
  struct Fuse {
    ir::Node *concat, *reader;
    int index;
  };
  std::vector<Fuse> todo;
  std::vector<std::string> names;  // the new group's outputs take over the graph's output names
  for (const ir::Value* v : g.outputs()) names.push_back(v->name());
  for (ir::Node* n : g.nodes()) {
    int index = -1;
    if (ir::Node* f = reader_of(g, n, &index)) todo.push_back({n, f, index});
  }
  // A FusedElementwise reads at most one Concat this way (the first): the second would read a
  // body input the first rewrite moved.
  std::unordered_map<const ir::Node*, bool> taken;
  int fused = 0;
  for (const Fuse& f : todo) {
    if (taken[f.reader]) continue;
    taken[f.reader] = true;
    fuse(g, f.concat, f.reader, f.index);
    ++fused;
  }
  if (fused) {
    ir::remove_dead_nodes(g);
    ir::restore_output_names(g, names);
    g.topological_sort();
  }
  return fused;
}

std::unique_ptr<passes::Pass> make_concat_elementwise_pass(int* fused) {
  return std::make_unique<passes::FunctionPass>(
      "concat_elementwise", [fused](ir::Graph& g) { return (*fused = fuse_concat_elementwise(g)) > 0; });
}

}  // namespace kiln::lower
