#include "lower/fuse_channel_shuffle.h"

#include <optional>

#include "ir/graph_util.h"

namespace kiln::lower {

namespace {

bool is_op(const ir::Node* n, const char* op) { return n && n->domain().empty() && n->op_type() == op; }

const ir::Node* only_user(const ir::Graph& g, const ir::Value* v) {
  if (!v || v->uses().size() != 1 || ir::is_graph_output(g, v)) return nullptr;
  return v->uses()[0].node;
}

std::optional<std::vector<int64_t>> const_ints(const ir::Value* v) {
  if (!v || !v->is_constant() || !dtype_is_integer(v->constant().dtype())) return std::nullopt;
  return v->constant().to_int64_vector();
}

// [start, end) of a Slice of `v` along `axis` only, step 1; nullopt for anything else.
std::optional<std::pair<int64_t, int64_t>> channel_range(const ir::Node* s, const ir::Value* v, int64_t axis,
                                                          int64_t rank, int64_t channels) {
  if (!is_op(s, "Slice") || s->input(0) != v || s->num_inputs() < 3 || !s->output(0) ||
      !s->output(0)->type.is_static())
    return std::nullopt;
  auto starts = const_ints(s->input(1));
  auto axes = s->num_inputs() > 3 && s->input(3) ? const_ints(s->input(3)) : std::optional<std::vector<int64_t>>();
  if (!starts || starts->size() != 1 || (s->num_inputs() > 3 && s->input(3) && !axes)) return std::nullopt;
  const int64_t ax = axes ? (*axes)[0] : 0;
  if ((axes && axes->size() != 1) || (ax < 0 ? ax + rank : ax) != axis) return std::nullopt;
  if (s->num_inputs() > 4 && s->input(4)) {
    auto steps = const_ints(s->input(4));
    if (!steps || *steps != std::vector<int64_t>{1}) return std::nullopt;
  }
  int64_t begin = (*starts)[0];
  if (begin < 0) begin += channels;
  begin = std::max<int64_t>(0, std::min(begin, channels));
  const int64_t width = s->output(0)->type.static_dims()[axis];
  if (begin + width > channels) return std::nullopt;
  return std::make_pair(begin, begin + width);
}

bool fuse_at(ir::Graph& g, ir::Node* t) {
  if (!is_op(t, "Transpose") || !t->output(0)->type.is_static()) return false;
  ir::Node* r1 = t->input(0) ? t->input(0)->producer() : nullptr;
  if (!is_op(r1, "Reshape") || only_user(g, r1->output(0)) != t || !r1->input(0)->type.is_static()) return false;
  const ir::Value* x = r1->input(0);
  const auto xd = x->type.static_dims(), sd = r1->output(0)->type.static_dims();
  const int64_t rank = static_cast<int64_t>(xd.size());
  if (static_cast<int64_t>(sd.size()) != rank + 1) return false;
  // The split axis: the first dim where the shapes part.
  int64_t a = 0;
  while (a < rank && xd[a] == sd[a]) ++a;
  if (a >= rank || sd[a] * sd[a + 1] != xd[a]) return false;
  for (int64_t k = a + 1; k < rank; ++k)
    if (xd[k] != sd[k + 1]) return false;
  std::vector<int64_t> perm(static_cast<size_t>(rank + 1));
  for (int64_t k = 0; k <= rank; ++k) perm[k] = k;
  std::swap(perm[a], perm[a + 1]);
  if (t->attr_ints("perm") != perm) return false;
  const ir::Node* r2 = only_user(g, t->output(0));
  if (!is_op(r2, "Reshape") || r2->input(0) != t->output(0) || !r2->output(0)->type.is_static() ||
      r2->output(0)->type.static_dims() != xd)
    return false;
  const int64_t channels = xd[a], group = sd[a];
  // Inputs: the concatenated tensors when a Concat along the axis made x for this alone.
  std::vector<ir::Value*> ins{const_cast<ir::Value*>(x)};
  const ir::Node* cat = x->producer();
  if (is_op(cat, "Concat") && only_user(g, x) == r1) {
    int64_t ax = cat->attr_int("axis", 0);
    if (ax < 0) ax += rank;
    if (ax == a) ins.assign(cat->inputs().begin(), cat->inputs().end());
  }
  for (const ir::Value* v : ins)
    if (!v || !v->type.is_static() || v->type.dtype != x->type.dtype) return false;
  // Outputs: the Slices of the channel axis that read the result, or the result itself.
  ir::Value* y = r2->output(0);
  std::vector<ir::Value*> outs;
  std::vector<int64_t> ranges;
  bool sliced = !ir::is_graph_output(g, y) && !y->uses().empty();
  for (const ir::Use& u : y->uses()) {
    auto r = channel_range(u.node, y, a, rank, channels);
    if (!r) { sliced = false; break; }
    outs.push_back(u.node->output(0));
    ranges.push_back(r->first);
    ranges.push_back(r->second);
  }
  if (!sliced) {
    outs = {y};
    ranges = {0, channels};
  }
  std::vector<ir::Value*> new_outs;
  for (ir::Value* o : outs) new_outs.push_back(ir::add_value_like(g, o, o->name()));
  ir::use_kiln_domain(g);
  g.add_node("ChannelShuffle", ins, new_outs,
             {{"axis", ir::Attribute::of_int(a)}, {"group", ir::Attribute::of_int(group)},
              {"ranges", ir::Attribute::of_ints(ranges)}},
             g.unique_name(t->name() + "_shuffle"), "kiln");
  for (size_t k = 0; k < outs.size(); ++k) g.replace_all_uses(outs[k], new_outs[k]);
  return true;
}

}  // namespace

int fuse_channel_shuffle(ir::Graph& g) {
  std::vector<std::string> names;
  for (const ir::Value* v : g.outputs()) names.push_back(v->name());
  int n = 0;
  for (ir::Node* t : g.nodes()) n += fuse_at(g, t);
  if (n == 0) return 0;
  ir::remove_dead_nodes(g);
  g.topological_sort();
  ir::restore_output_names(g, names);
  return n;
}

std::unique_ptr<passes::Pass> make_channel_shuffle_pass(LayoutStats* stats) {
  return std::make_unique<passes::FunctionPass>("channel_shuffle", [stats](ir::Graph& g) {
    if (fuse_channel_shuffle(g) == 0) return false;
    stats->transposes = count_transposes(g);  // the shuffles' transposes are gone
    return true;
  });
}

}  // namespace kiln::lower
