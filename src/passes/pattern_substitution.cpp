// \file Pattern substitution: decomposed subgraphs that exporters emit for one logical op are
// replaced by that op. The table below is the whole pass: a pattern (see pattern.h) and a
// builder that checks what a pattern cannot say (axes, shapes, dtypes) and makes the new node,
// or returns nullptr to leave the graph alone.
//
//   LayerNorm   (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) * gamma + beta
//   Gelu        0.5 * x * (1 + erf(x / sqrt 2))  |  0.5 * x * (1 + tanh(√(2/π)(x + 0.044715 x³)))
//   kiln.SiLU   x * sigmoid(x)
//   kiln.Attention  softmax(Q·Kᵀ * scale + mask) · V
#include <cmath>
#include <functional>
#include <unordered_set>

#include "passes/graph_util.h"
#include "passes/pass.h"
#include "passes/pattern.h"

namespace kiln::passes {

namespace {

using Builder = std::function<ir::Value*(ir::Graph&, const Match&)>;

struct Rewrite {
  const char* name;
  const char* pattern;
  Builder build;
};

ir::Value* emit(ir::Graph& g, const Match& m, const std::string& op, std::vector<ir::Value*> ins, ir::Attributes attrs,
                const std::string& domain = "") {
  ir::Value* y = m.root->output(0);
  ir::Value* out = add_value_like(g, y, y->name());
  if (domain == "kiln") use_kiln_domain(g);
  g.add_node(op, std::move(ins), {out}, std::move(attrs), g.unique_name(m.root->name() + "_" + op), domain);
  return out;
}

bool is_float(const ir::Value* v, bool f32_only = false) {
  if (!v || !v->type.is_tensor()) return false;
  return f32_only ? v->type.dtype == DType::Float : dtype_is_float(v->type.dtype);
}

// ReduceMean over exactly the last axis, keeping it (axes as an attribute or, from opset 18,
// a constant input).
bool reduces_last_axis(const ir::Node* n, int rank) {
  if (n->attr_int("keepdims", 1) == 0) return false;
  std::optional<std::vector<int64_t>> axes = ir::reduction_axes(*n);
  return axes && axes->size() == 1 && ((*axes)[0] == -1 || (*axes)[0] == rank - 1);
}

// A [D] copy of a constant that broadcasts as a vector over the last axis.
ir::Value* as_vector(ir::Graph& g, const ir::Value* v, int64_t d, DType dtype) {
  const Tensor* t = const_of(v);
  if (!t || t->dtype() != dtype || t->numel() != d || t->rank() < 1 || t->dims().back() != d) return nullptr;
  return add_const(g, v->name() + "_vec", t->reshaped({d}));
}

ir::Value* layer_norm(ir::Graph& g, const Match& m, bool affine) {
  ir::Value* x = m.value("x");
  if (!is_float(x) || !x->type.rank_known || x->type.rank() < 1 || !x->type.dims.back().is_static()) return nullptr;
  const int r = x->type.rank();
  const int64_t d = x->type.dims.back().value;
  if (!reduces_last_axis(m.node("m1"), r) || !reduces_last_axis(m.node("m2"), r)) return nullptr;
  auto eps = uniform_const(m.value("eps"));
  if (!eps || *eps < 0) return nullptr;
  ir::Value *gamma, *beta;
  if (affine) {
    if (m.value("gamma")->type.rank() > r || m.value("beta")->type.rank() > r) return nullptr;
    gamma = as_vector(g, m.value("gamma"), d, x->type.dtype);
    beta = as_vector(g, m.value("beta"), d, x->type.dtype);
  } else {
    Tensor ones(x->type.dtype, {d}), zeros(x->type.dtype, {d});
    std::vector<float> one(d, 1.f);
    ones = floats_like(ones, one, {d});
    gamma = add_const(g, "ln_ones", ones);
    beta = add_const(g, "ln_zeros", zeros);
  }
  if (!gamma || !beta) return nullptr;
  return emit(g, m, "LayerNormalization", {x, gamma, beta},
              {{"axis", ir::Attribute::of_int(-1)}, {"epsilon", ir::Attribute::of_float(static_cast<float>(*eps))}});
}

ir::Value* gelu(ir::Graph& g, const Match& m, bool tanh) {
  ir::Value* x = m.value("x");
  if (!is_float(x)) return nullptr;
  ir::Attributes a;
  if (tanh) a["approximate"] = ir::Attribute::of_string("tanh");
  return emit(g, m, "Gelu", {x}, std::move(a));
}

ir::Value* silu(ir::Graph& g, const Match& m) {
  ir::Value* x = m.value("x");
  if (!is_float(x, true)) return nullptr;
  return emit(g, m, "SiLU", {x}, {}, "kiln");
}

// scale_op: how the scores are scaled ("Div", "Mul" or "" for none).
ir::Value* attention(ir::Graph& g, const Match& m, const std::string& scale_op, bool masked) {
  ir::Value *q = m.value("q"), *k = m.value("k"), *v = m.value("v");
  ir::Value* mask = masked ? m.value("mask") : nullptr;
  for (ir::Value* t : {q, k, v, mask})
    if (t && (!is_float(t, true) || !t->type.rank_known || (t != mask && t->type.rank() < 2))) return nullptr;
  const ir::Node* sm = m.node("sm");
  const int r = sm->input(0)->type.rank_known ? sm->input(0)->type.rank() : -1;
  if (r < 2) return nullptr;
  int64_t axis = sm->attr_int("axis", g.opset() >= 13 ? -1 : 1);
  if (axis != -1 && axis != r - 1) return nullptr;
  if (mask && mask->type.rank() > r) return nullptr;
  double scale = 1;
  if (!scale_op.empty()) {
    auto s = uniform_const(m.value("scale"));
    if (!s || *s == 0 || m.value("scale")->type.rank() > r) return nullptr;
    scale = scale_op == "Div" ? 1.0 / *s : *s;
  }
  std::vector<ir::Value*> ins{q, k, v};
  if (mask) ins.push_back(mask);
  return emit(g, m, "Attention", ins, {{"scale", ir::Attribute::of_float(static_cast<float>(scale))}}, "kiln");
}

#define ERF_DIV "(Add (Erf (Div $x 1.4142135)) 1)"
#define ERF_MUL "(Add (Erf (Mul $x 0.70710678)) 1)"
#define TANH_ARG "(Add (Tanh (Mul (Add $x (Mul (Pow $x 3) 0.044715)) 0.7978845608)) 1)"
#define LN_CORE "(Div (Sub:d $x (ReduceMean:m1 $x #a1?)) (Sqrt (Add (ReduceMean:m2 (Pow $d 2) #a2?) #eps)))"
#define LN_CORE_SQ "(Div (Sub:d $x (ReduceMean:m1 $x #a1?)) (Sqrt (Add (ReduceMean:m2 (Mul $d $d) #a2?) #eps)))"
#define SCORES "(MatMul $q $k)"

const std::vector<Rewrite>& table() {
  auto ln = [](bool affine) { return [affine](ir::Graph& g, const Match& m) { return layer_norm(g, m, affine); }; };
  auto ge = [](bool t) { return [t](ir::Graph& g, const Match& m) { return gelu(g, m, t); }; };
  auto at = [](std::string s, bool mask) {
    return [s, mask](ir::Graph& g, const Match& m) { return attention(g, m, s, mask); };
  };
  static const std::vector<Rewrite> rules = {
      {"layer_norm", "(Add (Mul " LN_CORE " #gamma) #beta)", ln(true)},
      {"layer_norm", "(Add (Mul " LN_CORE_SQ " #gamma) #beta)", ln(true)},
      {"layer_norm_plain", LN_CORE, ln(false)},
      {"layer_norm_plain", LN_CORE_SQ, ln(false)},
      {"gelu_erf", "(Mul (Mul $x " ERF_DIV ") 0.5)", ge(false)},
      {"gelu_erf", "(Mul (Mul $x 0.5) " ERF_DIV ")", ge(false)},
      {"gelu_erf", "(Mul $x (Mul " ERF_DIV " 0.5))", ge(false)},
      {"gelu_erf", "(Mul (Mul $x " ERF_MUL ") 0.5)", ge(false)},
      {"gelu_erf", "(Mul (Mul $x 0.5) " ERF_MUL ")", ge(false)},
      {"gelu_erf", "(Mul $x (Mul " ERF_MUL " 0.5))", ge(false)},
      {"gelu_tanh", "(Mul (Mul $x " TANH_ARG ") 0.5)", ge(true)},
      {"gelu_tanh", "(Mul (Mul $x 0.5) " TANH_ARG ")", ge(true)},
      {"gelu_tanh", "(Mul $x (Mul " TANH_ARG " 0.5))", ge(true)},
      {"silu", "(Mul $x (Sigmoid $x))", silu},
      {"attention", "(MatMul (Softmax:sm (Add (Div " SCORES " #scale) $mask)) $v)", at("Div", true)},
      {"attention", "(MatMul (Softmax:sm (Add (Mul " SCORES " #scale) $mask)) $v)", at("Mul", true)},
      {"attention", "(MatMul (Softmax:sm (Add " SCORES " $mask)) $v)", at("", true)},
      {"attention", "(MatMul (Softmax:sm (Div " SCORES " #scale)) $v)", at("Div", false)},
      {"attention", "(MatMul (Softmax:sm (Mul " SCORES " #scale)) $v)", at("Mul", false)},
      {"attention", "(MatMul (Softmax:sm " SCORES ") $v)", at("", false)},
  };
  return rules;
}

class PatternSubstitution : public Pass {
 public:
  PatternSubstitution() {
    for (const Rewrite& r : table()) compiled_.push_back({Pattern(r.pattern), &r});
  }
  std::string name() const override { return "pattern_substitution"; }

  // Consumers first, so the largest pattern (LayerNorm with its affine tail) wins over the
  // pattern of its core.
  bool run(ir::Graph& g) override {
    bool changed = false;
    std::unordered_set<ir::Node*> dead;
    std::vector<ir::Node*> nodes = g.nodes();
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      ir::Node* n = *it;
      if (dead.count(n)) continue;
      for (const auto& [pat, rule] : compiled_) {
        if (pat.root_op() != n->op_type()) continue;
        auto m = pat.match(g, n);
        if (!m) continue;
        ir::Value* out = rule->build(g, *m);
        if (!out) continue;
        g.replace_all_uses(n->output(0), out);
        dead.insert(m->matched.begin(), m->matched.end());
        changed = true;
        break;
      }
    }
    return changed;
  }

 private:
  std::vector<std::pair<Pattern, const Rewrite*>> compiled_;
};

}  // namespace

std::unique_ptr<Pass> make_pattern_substitution() { return std::make_unique<PatternSubstitution>(); }

}  // namespace kiln::passes
