#include "fusion/access_plan.h"

#include <set>
#include <unordered_set>

namespace kiln::fusion {

bool is_view_op(const ir::Node& n) {
  if (!n.domain().empty() || n.num_outputs() != 1 || !n.has_input(0)) return false;
  static const std::set<std::string> views = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Expand"};
  return views.count(n.op_type()) > 0;
}

namespace {

// One dim of a value: the atoms it is made of, major to minor (none for a dim of size 1).
using Layout = std::vector<std::vector<int>>;

class Planner {
 public:
  std::optional<AccessPlan> run(const std::vector<const ir::Node*>& nodes, const std::vector<const ir::Value*>& outputs);

 private:
  std::vector<int64_t> size_;                                 // per atom
  std::unordered_map<const ir::Value*, Layout> layout_;       // computed values
  std::vector<std::pair<std::pair<const ir::Node*, int>, Layout>> reads_;  // edges reading a source
  std::unordered_set<const ir::Value*> produced_;
  size_t rank_ = 0;  // of the iteration space, once known

  int new_atom(int64_t size) {
    size_.push_back(size);
    return static_cast<int>(size_.size()) - 1;
  }
  // Replaces atom `a` by (major, minor) with major of size `major` in every layout.
  std::pair<int, int> split(int a, int64_t major);
  // `out`'s flat index order re-cut into `dims` (Reshape and friends).
  std::optional<Layout> regroup(const Layout& out, const std::vector<int64_t>& dims);
  // `out` (of shape `out_dims`) read by an input of shape `in_dims` that broadcasts to it.
  static std::optional<Layout> broadcast(const Layout& out, const std::vector<int64_t>& out_dims,
                                         const std::vector<int64_t>& in_dims);
  bool give(const ir::Node* n, int i, Layout l);
  Access access_of(const Layout& l, const std::vector<int64_t>& shape, const std::vector<int>& position) const;
};

std::pair<int, int> Planner::split(int a, int64_t major) {
  const int m = new_atom(major), n = new_atom(size_[a] / major);
  auto fix = [&](Layout& l) {
    for (auto& d : l)
      for (size_t k = 0; k < d.size(); ++k)
        if (d[k] == a) {
          d[k] = n;
          d.insert(d.begin() + static_cast<std::ptrdiff_t>(k), m);
          break;
        }
  };
  for (auto& [v, l] : layout_) fix(l);
  for (auto& [e, l] : reads_) fix(l);
  return {m, n};
}

std::optional<Layout> Planner::regroup(const Layout& out, const std::vector<int64_t>& dims) {
  std::vector<int> flat;
  for (const auto& d : out) flat.insert(flat.end(), d.begin(), d.end());
  Layout in(dims.size());
  size_t p = 0;
  for (size_t k = 0; k < dims.size(); ++k) {
    int64_t cur = 1;
    while (cur < dims[k]) {
      if (p >= flat.size() || dims[k] % cur != 0) return std::nullopt;
      const int64_t need = dims[k] / cur, s = size_[flat[p]];
      if (s > need) {
        if (s % need != 0) return std::nullopt;
        auto [m, n] = split(flat[p], need);
        flat[p] = n;
        flat.insert(flat.begin() + static_cast<std::ptrdiff_t>(p), m);
      } else if (need % s != 0) {
        return std::nullopt;
      }
      in[k].push_back(flat[p]);
      cur *= size_[flat[p]];
      ++p;
    }
    if (cur != dims[k]) return std::nullopt;
  }
  if (p != flat.size()) return std::nullopt;
  return in;
}

std::optional<Layout> Planner::broadcast(const Layout& out, const std::vector<int64_t>& out_dims,
                                         const std::vector<int64_t>& in_dims) {
  if (in_dims.size() > out_dims.size()) return std::nullopt;
  const size_t shift = out_dims.size() - in_dims.size();
  Layout in(in_dims.size());
  for (size_t k = 0; k < in_dims.size(); ++k) {
    if (in_dims[k] == out_dims[k + shift]) in[k] = out[k + shift];
    else if (in_dims[k] != 1) return std::nullopt;
  }
  return in;
}

// Input `i` of `n` is read with layout `l`: a source records the read, a computed value must
// not already be read another way.
bool Planner::give(const ir::Node* n, int i, Layout l) {
  const ir::Value* v = n->input(i);
  if (!produced_.count(v)) {
    reads_.push_back({{n, i}, std::move(l)});
    return true;
  }
  auto [it, fresh] = layout_.emplace(v, l);
  return fresh || it->second == l;
}

Access Planner::access_of(const Layout& l, const std::vector<int64_t>& shape, const std::vector<int>& position) const {
  Access a;
  a.strides.assign(rank_, 0);
  int64_t c = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    int64_t s = c;
    for (size_t j = l[k].size(); j-- > 0;) {
      a.strides[position[l[k][j]]] = s;
      s *= size_[l[k][j]];
    }
    c *= shape[k];
  }
  return a;
}

std::optional<AccessPlan> Planner::run(const std::vector<const ir::Node*>& nodes,
                                       const std::vector<const ir::Value*>& outputs) {
  if (outputs.empty()) return std::nullopt;
  for (const ir::Node* n : nodes)
    for (const ir::Value* o : n->outputs())
      if (o) produced_.insert(o);
  auto dims_of = [](const ir::Value* v) -> std::optional<std::vector<int64_t>> {
    if (!v || !v->type.is_tensor() || !v->type.is_static()) return std::nullopt;
    return v->type.static_dims();
  };
  const auto out_dims = dims_of(outputs[0]);
  if (!out_dims) return std::nullopt;
  Layout out_layout;
  for (int64_t d : *out_dims) out_layout.push_back(d == 1 ? std::vector<int>{} : std::vector<int>{new_atom(d)});
  for (const ir::Value* o : outputs) {
    if (dims_of(o) != out_dims || !produced_.count(o)) return std::nullopt;
    auto [it, fresh] = layout_.emplace(o, out_layout);
    if (!fresh && it->second != out_layout) return std::nullopt;
  }

  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    const ir::Node* n = *it;
    if (n->num_outputs() != 1) return std::nullopt;
    auto lo = layout_.find(n->output(0));
    if (lo == layout_.end()) continue;  // nothing in the body reads it
    const Layout l = lo->second;
    const auto od = dims_of(n->output(0));
    if (!od) return std::nullopt;
    if (is_view_op(*n)) {
      const auto id = dims_of(n->input(0));
      if (!id) return std::nullopt;
      std::optional<Layout> in;
      if (n->op_type() == "Transpose") {
        std::vector<int64_t> perm = n->attr_ints("perm");
        if (perm.empty())
          for (size_t k = id->size(); k-- > 0;) perm.push_back(static_cast<int64_t>(k));
        if (perm.size() != id->size()) return std::nullopt;
        in = Layout(id->size());
        for (size_t k = 0; k < perm.size(); ++k) {
          if (perm[k] < 0 || perm[k] >= static_cast<int64_t>(id->size())) return std::nullopt;
          (*in)[perm[k]] = l[k];
        }
      } else if (n->op_type() == "Expand") {
        in = broadcast(l, *od, *id);
      } else {
        in = regroup(l, *id);
      }
      // regroup() may have split atoms of `l`; give() compares against the updated layouts.
      if (!in || !give(n, 0, std::move(*in))) return std::nullopt;
      continue;
    }
    for (int i = 0; i < n->num_inputs(); ++i) {
      if (!n->has_input(i)) continue;
      const auto id = dims_of(n->input(i));
      if (!id) return std::nullopt;
      auto in = broadcast(l, *od, *id);
      if (!in || !give(n, i, std::move(*in))) return std::nullopt;
    }
  }

  AccessPlan plan;
  std::vector<int> position(size_.size(), -1);
  int p = 0;
  const Layout& ol = layout_.at(outputs[0]);
  for (size_t k = 0; k < ol.size(); ++k)
    for (int a : ol[k]) {
      position[a] = p++;
      plan.dims.push_back(size_[a]);
      plan.output_dim.push_back(static_cast<int>(k));
    }
  // Every live atom is one of the output's: atoms only come from the output and its splits.
  auto check = [&](const Layout& l) {
    for (const auto& d : l)
      for (int a : d)
        if (position[a] < 0) return false;
    return true;
  };
  rank_ = plan.dims.size();
  for (const ir::Value* o : outputs) plan.outputs.push_back(access_of(layout_.at(o), *dims_of(o), position));
  for (const auto& [edge, l] : reads_) {
    if (!check(l)) return std::nullopt;
    const ir::Value* v = edge.first->input(edge.second);
    Access a = access_of(l, *dims_of(v), position);
    int k = 0;
    while (k < static_cast<int>(plan.operands.size()) &&
           !(plan.operands[k].source == v && plan.operands[k].access == a))
      ++k;
    if (k == static_cast<int>(plan.operands.size())) plan.operands.push_back({v, std::move(a)});
    plan.reads[edge] = k;
  }
  return plan;
}

}  // namespace

std::optional<AccessPlan> plan_access(const std::vector<const ir::Node*>& nodes,
                                      const std::vector<const ir::Value*>& outputs) {
  return Planner().run(nodes, outputs);
}

}  // namespace kiln::fusion
