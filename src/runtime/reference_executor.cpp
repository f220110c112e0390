#include "runtime/reference_executor.h"

#include <kiln/error.h>

#include <algorithm>
#include <set>

#include "ops/core/infer_graph.h"

namespace kiln::runtime {

namespace {
// Values of g read by node n, including reads from n's subgraphs (outer-scope uses).
void collect_reads(const ir::Graph& g, const ir::Node& n, std::vector<const ir::Value*>& out) {
  for (const ir::Value* v : n.inputs())
    if (v && v->owner() == &g) out.push_back(v);
  for (const auto& [k, a] : n.attrs) {
    std::vector<const ir::Graph*> subs;
    if (a.g) subs.push_back(a.g.get());
    for (const auto& sg : a.graphs) subs.push_back(sg.get());
    for (const ir::Graph* sg : subs) {
      for (const ir::Node* sn : sg->nodes()) collect_reads(g, *sn, out);
      for (const ir::Value* v : sg->outputs())
        if (v && v->owner() == &g) out.push_back(v);
    }
  }
}
}  // namespace

ReferenceExecutor::ReferenceExecutor(const ir::Graph& g, std::vector<const ir::Value*> keep)
    : g_(g), keep_(std::move(keep)) {
  std::vector<ir::Node*> nodes = g.nodes();
  std::unordered_map<const ir::Value*, size_t> last;
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::vector<const ir::Value*> reads;
    collect_reads(g, *nodes[i], reads);
    for (const ir::Value* v : reads) last[v] = i;
  }
  std::set<const ir::Value*> pinned(keep_.begin(), keep_.end());
  for (const ir::Value* v : g.outputs()) pinned.insert(v);
  frees_.resize(nodes.size());
  for (auto& [v, i] : last)
    if (!pinned.count(v) && !v->is_constant()) frees_[i].push_back(v);
}

std::vector<Tensor> ReferenceExecutor::run(const std::vector<Tensor>& inputs, const ValueMap* outer,
                                           ValueMap* kept) const {
  if (inputs.size() != g_.inputs().size())
    throw Error("graph '" + g_.name + "' takes " + std::to_string(g_.inputs().size()) + " inputs, got " +
                std::to_string(inputs.size()));
  ValueMap env;
  for (size_t i = 0; i < inputs.size(); ++i) env[g_.inputs()[i]] = inputs[i];

  // A value from this graph, or from an enclosing one when running a subgraph.
  auto lookup = [&](const ir::Value* v) -> const Tensor* {
    if (v->is_constant()) return &v->constant();
    if (auto it = env.find(v); it != env.end()) return &it->second;
    if (outer)
      if (auto it = outer->find(v); it != outer->end()) return &it->second;
    return nullptr;
  };

  // Subgraphs see this graph's env (and ours' outer) as their outer scope.
  ValueMap scope;
  ops::SubgraphRunner runner = [&](const ir::Graph& body, const std::vector<Tensor>& args) {
    scope = outer ? *outer : ValueMap{};
    for (auto& [k, v] : env) scope[k] = v;
    return ReferenceExecutor(body).run(args, &scope);
  };

  std::vector<ir::Node*> nodes = g_.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const ir::Node& n = *nodes[i];
    std::vector<const Tensor*> args;
    for (const ir::Value* v : n.inputs()) {
      if (!v) { args.push_back(nullptr); continue; }
      const Tensor* t = lookup(v);
      if (!t) throw Error(n.describe() + ": input '" + v->name() + "' has no value at run time");
      args.push_back(t);
    }
    std::vector<Tensor> outs = ops::run_reference(n, args, &runner);
    for (int k = 0; k < n.num_outputs(); ++k)
      if (const ir::Value* o = n.output(k)) env[o] = std::move(outs[k]);
    for (const ir::Value* v : frees_[i]) env.erase(v);
  }

  std::vector<Tensor> result;
  for (const ir::Value* v : g_.outputs()) {
    const Tensor* t = lookup(v);
    if (!t) throw Error("graph output '" + v->name() + "' has no value after the run");
    result.push_back(*t);
  }
  if (kept)
    for (const ir::Value* v : keep_)
      if (const Tensor* t = lookup(v)) (*kept)[v] = *t;
  return result;
}

}  // namespace kiln::runtime
