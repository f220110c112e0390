// \file Op fission for variadic ops (MindSpore's AddN/Concat fission): a Sum or Concat with
// more inputs than a limit becomes a tree of ones within it, so no kernel has to take an
// unbounded number of inputs. The merge pass is the inverse, for backends with wide kernels.
//
//   Sum(a,b,c,d,e) with limit 2  ->  Sum(Sum(Sum(a,b), Sum(c,d)), e)
//   Concat(a,b,c,d, axis=1) with limit 2  ->  Concat(Concat(a,b), Concat(c,d), axis=1)
#include "passes/graph_util.h"
#include "passes/pass.h"

namespace kiln::passes {

namespace {

bool variadic(const ir::Node* n) {
  return n && n->domain().empty() && n->num_outputs() == 1 && (n->op_type() == "Sum" || n->op_type() == "Concat");
}

class VariadicFission : public Pass {
 public:
  explicit VariadicFission(int max_inputs) : max_(std::max(2, max_inputs)) {}
  std::string name() const override { return "variadic_fission"; }
  bool run(ir::Graph& g) override {
    bool changed = false;
    for (ir::Node* n : g.nodes()) {
      if (!variadic(n) || n->num_inputs() <= max_) continue;
      std::vector<ir::Value*> level = n->inputs();
      ir::Value* y = n->output(0);
      while (static_cast<int>(level.size()) > max_) {
        std::vector<ir::Value*> next;
        for (size_t i = 0; i < level.size(); i += max_) {
          size_t end = std::min(level.size(), i + max_);
          if (end - i == 1) { next.push_back(level[i]); continue; }
          // Partial results have unknown shapes until re-inference fills them in.
          ir::Value* part = g.add_value(g.unique_name(y->name() + "_part"), ir::TensorType::unranked(y->type.dtype));
          g.add_node(n->op_type(), std::vector<ir::Value*>(level.begin() + i, level.begin() + end), {part}, n->attrs,
                     g.unique_name(n->name()));
          next.push_back(part);
        }
        level = std::move(next);
      }
      ir::Value* out = add_value_like(g, y, y->name());
      g.add_node(n->op_type(), level, {out}, n->attrs, g.unique_name(n->name()));
      g.replace_all_uses(y, out);
      changed = true;
    }
    return changed;
  }

 private:
  int max_;
};

class VariadicMerge : public Pass {
 public:
  std::string name() const override { return "variadic_merge"; }
  bool run(ir::Graph& g) override {
    bool changed = false;
    for (ir::Node* n : g.nodes()) {
      if (!variadic(n)) continue;
      std::vector<ir::Value*> ins;
      bool merged = false;
      for (ir::Value* v : n->inputs()) {
        ir::Node* p = v ? v->producer() : nullptr;
        if (variadic(p) && p->op_type() == n->op_type() && single_use(g, v) &&
            (n->op_type() == "Sum" || p->attr_int("axis", 0) == n->attr_int("axis", 0))) {
          ins.insert(ins.end(), p->inputs().begin(), p->inputs().end());
          merged = true;
        } else {
          ins.push_back(v);
        }
      }
      if (!merged) continue;
      ir::Value* y = n->output(0);
      ir::Value* out = add_value_like(g, y, y->name());
      g.add_node(n->op_type(), ins, {out}, n->attrs, g.unique_name(n->name()));
      g.replace_all_uses(y, out);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_variadic_fission(int max_inputs) { return std::make_unique<VariadicFission>(max_inputs); }
std::unique_ptr<Pass> make_variadic_merge() { return std::make_unique<VariadicMerge>(); }

}  // namespace kiln::passes
