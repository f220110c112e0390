#include "ir/verifier.h"

#include <kiln/error.h>

#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace kiln::ir {

namespace {

std::string q(const std::string& s) { return "'" + s + "'"; }

bool valid_dtype(DType t) {
  int v = static_cast<int>(t);
  return v >= static_cast<int>(DType::Undefined) && v <= static_cast<int>(DType::Int2);
}

// One graph on the path from the verified root to the graph being checked. `avail` is what
// nodes of inner graphs may read from it: for enclosing graphs, the values available at the
// node that owns the subgraph (a body cannot read a value its owner's graph produces later).
struct Scope {
  const Graph* g = nullptr;
  std::unordered_set<const Value*> own;
  std::unordered_set<const Value*> avail;
};

class Verifier {
 public:
  std::vector<std::string> problems;

  void run(const Graph& root) {
    // Pointers are only dereferenced once found here, so dangling uses or producers (of removed
    // nodes) are reported instead of crashing.
    // A subgraph verified on its own reads its enclosing graphs' values freely.
    std::vector<const Graph*> outer;
    for (const Graph* p = root.parent; p && outer.size() < 64; p = p->parent) outer.push_back(p);
    index(outer.empty() ? root : *outer.back());
    index(root);
    for (auto it = outer.rbegin(); it != outer.rend(); ++it) {
      Scope s;
      s.g = *it;
      for (Value* v : s.g->values()) s.own.insert(v);
      s.avail = s.own;
      scopes_.push_back(std::move(s));
    }
    check(root, "graph " + q(root.name));
  }

 private:
  std::unordered_set<const Node*> live_;
  std::unordered_map<const Value*, const Graph*> all_values_;
  std::unordered_set<const Graph*> indexed_;
  std::vector<Scope> scopes_;
  std::string where_;

  void fail(const std::string& m) { problems.push_back(where_ + ": " + m); }

  template <typename F>
  static void for_each_subgraph(const Node& n, F&& f) {
    for (const auto& [name, a] : n.attrs) {
      if (a.kind == Attribute::Kind::Graph) f(name, a.g.get(), -1);
      if (a.kind == Attribute::Kind::Graphs)
        for (size_t i = 0; i < a.graphs.size(); ++i) f(name, a.graphs[i].get(), static_cast<int>(i));
    }
  }

  void index(const Graph& g) {
    if (!indexed_.insert(&g).second) return;
    for (Value* v : g.values()) all_values_[v] = &g;
    for (Node* n : g.nodes()) {
      live_.insert(n);
      for_each_subgraph(*n, [&](const std::string&, const Graph* sg, int) {
        if (sg) index(*sg);
      });
    }
  }

  std::string vname(const Value* v) const { return q(v->name()); }

  // Where a value the graph being checked refers to lives: -1 = unknown pointer, otherwise the
  // index in scopes_ (the last one is the current graph).
  int scope_of(const Value* v) const {
    for (int s = static_cast<int>(scopes_.size()) - 1; s >= 0; --s)
      if (scopes_[s].own.count(v)) return s;
    return -1;
  }

  std::string foreign(const Value* v) const {
    auto it = all_values_.find(v);
    if (it != all_values_.end())
      return "value " + vname(v) + " of graph " + q(it->second->name) +
             ", which is neither this graph nor an enclosing one";
    return "a value that belongs to no graph in scope";
  }

  void check_type(const Value* v) {
    const TensorType& t = v->type;
    if (!valid_dtype(t.dtype))
      fail("value " + vname(v) + " has invalid dtype " + std::to_string(static_cast<int>(t.dtype)));
    if (!t.rank_known && !t.dims.empty())
      fail("value " + vname(v) + " has unknown rank but lists dims");
    for (const Dim& d : t.dims)
      if (d.value < -1) fail("value " + vname(v) + " has invalid dim " + std::to_string(d.value));
  }

  void check_values(const Graph& g) {
    std::unordered_map<std::string, int> names;
    for (Value* v : g.values()) ++names[v->name()];
    for (const auto& [name, count] : names)
      if (count > 1) fail("value name " + q(name) + " is used by " + std::to_string(count) + " values");

    std::unordered_set<const Value*> listed_inputs(g.inputs().begin(), g.inputs().end());
    for (Value* v : g.values()) {
      if (v->owner() != &g) fail("value " + vname(v) + " is listed in this graph but owned by another");
      if (names[v->name()] == 1 && g.find_value(v->name()) != v)
        fail("value " + vname(v) + " cannot be found by its name (renamed after creation?)");
      check_type(v);
      if (v->is_constant()) {
        const kiln::Tensor& t = v->constant();
        if (v->producer()) fail("constant " + vname(v) + " also has a producer");
        if (!t.defined()) fail("constant " + vname(v) + " has an undefined tensor");
        if (v->type.dtype != t.dtype())
          fail("constant " + vname(v) + " is typed " + dtype_name(v->type.dtype) + " but holds a " +
               t.describe() + " tensor");
        else if (!v->type.is_static() || v->type.static_dims() != t.dims())
          fail("constant " + vname(v) + " is typed " + v->type.str() + " but holds a " + t.describe() +
               " tensor");
      }
      if (v->is_graph_input() && !listed_inputs.count(v))
        fail("value " + vname(v) + " is marked as a graph input but is not in the input list");
      if (Node* p = v->producer()) {
        if (!live_.count(p)) {
          fail("value " + vname(v) + " has a producer that is no longer in the graph");
        } else if (p->owner() != &g) {
          fail("value " + vname(v) + " is produced by " + p->describe() + " of another graph");
        } else if (v->producer_output() < 0 || p->output(v->producer_output()) != v) {
          fail("value " + vname(v) + " names " + p->describe() + " output " +
               std::to_string(v->producer_output()) + " as its producer, but that output is not it");
        }
      }
      std::vector<Use> seen;
      for (const Use& u : v->uses()) {
        if (!live_.count(u.node)) {
          fail("value " + vname(v) + " has a use by a node that is no longer in the graph");
          continue;
        }
        if (std::find(seen.begin(), seen.end(), u) != seen.end()) {
          fail("value " + vname(v) + " lists its use by " + u.node->describe() + " input " +
               std::to_string(u.input_index) + " twice");
          continue;
        }
        seen.push_back(u);
        if (u.input_index < 0 || u.node->input(u.input_index) != v)
          fail("value " + vname(v) + " lists a use by " + u.node->describe() + " input " +
               std::to_string(u.input_index) + ", but that input is not it");
      }
    }
  }

  // `avail` holds what the current graph has produced so far.
  void check_read(const Value* v, const std::string& what, const std::unordered_set<const Value*>& avail) {
    int s = scope_of(v);
    if (s < 0) {
      fail(what + " is " + foreign(v));
      return;
    }
    bool here = s == static_cast<int>(scopes_.size()) - 1;
    if (here ? avail.count(v) : scopes_[s].avail.count(v)) return;
    const Node* p = v->producer();
    if (p && live_.count(p) && p->owner() == scopes_[s].g)
      fail(what + " " + vname(v) + " is used before it is produced (by " + p->describe() + ")" +
           (here ? "" : " in the enclosing graph " + q(scopes_[s].g->name)));
    else if (!p)
      fail(what + " " + vname(v) + " has no producer and is not a graph input or constant");
  }

  void check(const Graph& g, const std::string& where) {
    for (const Scope& s : scopes_)
      if (s.g == &g) {
        where_ = where;
        fail("graph is nested inside itself");
        return;
      }
    Scope scope;
    scope.g = &g;
    for (Value* v : g.values()) scope.own.insert(v);
    scopes_.push_back(std::move(scope));
    where_ = where;

    check_values(g);

    std::unordered_set<const Value*> avail;
    for (Value* v : g.inputs()) {
      if (!v) {
        fail("graph input list holds a null value");
        continue;
      }
      if (scope_of(v) != static_cast<int>(scopes_.size()) - 1) {
        fail("graph input is " + foreign(v));
        continue;
      }
      if (!v->is_graph_input()) fail("graph input " + vname(v) + " is not marked as an input");
      if (v->producer()) fail("graph input " + vname(v) + " also has a producer");
      avail.insert(v);
    }
    for (Value* v : g.constants()) avail.insert(v);

    for (Node* n : g.nodes()) {
      const std::string nd = n->describe();
      if (n->owner() != &g) fail(nd + " is listed in this graph but owned by another");
      for (int i = 0; i < n->num_inputs(); ++i) {
        const Value* v = n->input(i);
        if (!v) continue;
        const std::string what = nd + " input " + std::to_string(i);
        if (scope_of(v) < 0) {
          fail(what + " is " + foreign(v));
          continue;
        }
        check_read(v, what, avail);
        if (std::count(v->uses().begin(), v->uses().end(), Use{n, i}) != 1)
          fail(what + " " + vname(v) + " is missing from that value's use list");
      }

      for_each_subgraph(*n, [&](const std::string& attr, const Graph* sg, int idx) {
        std::string label = "attribute " + q(attr) + (idx >= 0 ? "[" + std::to_string(idx) + "]" : "");
        if (!sg) {
          fail(nd + " " + label + " holds no graph");
          return;
        }
        if (sg->parent != &g)
          fail(nd + " " + label + ": subgraph " + q(sg->name) + " does not have this graph as parent");
        scopes_.back().avail = avail;
        std::string saved = where_;
        check(*sg, where + " > " + nd + " " + label + " > graph " + q(sg->name));
        where_ = saved;
      });

      for (int j = 0; j < n->num_outputs(); ++j) {
        Value* o = n->output(j);
        if (!o) continue;
        const std::string what = nd + " output " + std::to_string(j);
        if (scope_of(o) != static_cast<int>(scopes_.size()) - 1) {
          fail(what + " is not a value of this graph");
          continue;
        }
        if (o->producer() != n || o->producer_output() != j) {
          const Node* p = o->producer();
          fail(what + " " + vname(o) + " records " +
               (p && live_.count(p) ? p->describe() + " output " + std::to_string(o->producer_output())
                                    : std::string("no live node")) +
               " as its producer");
        }
        if (o->is_constant()) fail(what + " " + vname(o) + " is also a constant");
        if (o->is_graph_input()) fail(what + " " + vname(o) + " is also a graph input");
        avail.insert(o);
      }
    }

    for (size_t k = 0; k < g.outputs().size(); ++k) {
      const Value* v = g.outputs()[k];
      if (!v) {
        fail("graph output " + std::to_string(k) + " is null");
        continue;
      }
      check_read(v, "graph output " + std::to_string(k), avail);
    }
    scopes_.pop_back();
  }
};

}  // namespace

std::vector<std::string> verify_all(const Graph& g) {
  Verifier v;
  v.run(g);
  return std::move(v.problems);
}

void verify(const Graph& g) {
  std::vector<std::string> problems = verify_all(g);
  if (problems.empty()) return;
  constexpr size_t kShown = 20;
  std::string msg = "IR verification failed (" + std::to_string(problems.size()) + " problem" +
                    (problems.size() == 1 ? "" : "s") + "):";
  for (size_t i = 0; i < problems.size() && i < kShown; ++i) msg += "\n  " + problems[i];
  if (problems.size() > kShown) msg += "\n  ...";
  throw Error(msg);
}

}  // namespace kiln::ir
