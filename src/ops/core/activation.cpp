#include "ops/core/activation.h"

#include <limits>
#include <string>
#include <vector>

namespace kiln::ops {

namespace {

struct Row {
  Activation::Kind kind;
  const char* name;
  int params;
};

// Indexed by kind.
constexpr Row kRows[] = {
    {Activation::None, "", 0},           {Activation::Relu, "Relu", 0},
    {Activation::Clip, "Clip", 2},       {Activation::Sigmoid, "Sigmoid", 0},
    {Activation::Tanh, "Tanh", 0},       {Activation::SiLU, "SiLU", 0},
    {Activation::Gelu, "Gelu", 0},       {Activation::GeluTanh, "GeluTanh", 0},
    {Activation::HardSigmoid, "HardSigmoid", 2}, {Activation::HardSwish, "HardSwish", 0},
    {Activation::LeakyRelu, "LeakyRelu", 1}};

constexpr bool rows_in_kind_order() {
  for (size_t i = 0; i < std::size(kRows); ++i)
    if (kRows[i].kind != static_cast<Activation::Kind>(i)) return false;
  return std::size(kRows) == Activation::LeakyRelu + 1;
}
static_assert(rows_in_kind_order(), "kRows must list every kind, in enum order");

// A constant scalar input's value.
std::optional<float> scalar_const(const ir::Value* v) {
  if (!v || !v->is_constant()) return std::nullopt;
  const Tensor& t = v->constant();
  if (t.numel() != 1 || t.kind() != ValueKind::Tensor) return std::nullopt;
  return static_cast<float>(t.as_double(0));
}

}  // namespace

const char* activation_name(Activation::Kind kind) { return kRows[kind].name; }

int activation_param_count(Activation::Kind kind) { return kRows[kind].params; }

Activation activation_of(const ir::Node& n) {
  const std::string s = n.attr_string("activation", "");
  const std::vector<float> p = n.attr_floats("activation_params");
  if (s.empty()) {
    if (!p.empty()) throw Error(n.describe() + ": activation_params without an activation");
    return Activation{Activation::None};
  }
  for (const Row& r : kRows) {
    if (r.kind == Activation::None || s != r.name) continue;
    if (p.size() != static_cast<size_t>(r.params))
      throw Error(n.describe() + ": activation " + s + " takes " + std::to_string(r.params) +
                  " activation_params, got " + std::to_string(p.size()));
    Activation a{r.kind};
    if (r.params >= 1) a.a = p[0];
    if (r.params >= 2) a.b = p[1];
    return a;
  }
  throw Error(n.describe() + ": unknown activation '" + s + "'");
}

void set_activation(ir::Attributes& attrs, const Activation& act) {
  if (act.kind == Activation::None) return;
  attrs["activation"] = ir::Attribute::of_string(activation_name(act.kind));
  const int np = activation_param_count(act.kind);
  if (np == 1) attrs["activation_params"] = ir::Attribute::of_floats({act.a});
  if (np == 2) attrs["activation_params"] = ir::Attribute::of_floats({act.a, act.b});
}

std::optional<Activation> activation_op(const ir::Node& n) {
  using A = Activation;
  const std::string& op = n.op_type();
  if (n.domain() == "kiln") return op == "SiLU" ? std::optional(A{A::SiLU}) : std::nullopt;
  if (n.domain() == "com.microsoft") return op == "Gelu" ? std::optional(A{A::Gelu}) : std::nullopt;
  if (!n.domain().empty() || n.num_inputs() < 1) return std::nullopt;
  if (op == "Clip") {
    float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
    if (n.owner() && n.owner()->opset() < 11) {
      lo = n.attr_float("min", lo);
      hi = n.attr_float("max", hi);
    } else {
      for (int i = 1; i <= 2; ++i) {
        if (!n.has_input(i)) continue;
        const std::optional<float> v = scalar_const(n.input(i));
        if (!v) return std::nullopt;
        (i == 1 ? lo : hi) = *v;
      }
    }
    return A{A::Clip, lo, hi};
  }
  if (n.num_inputs() != 1) return std::nullopt;
  if (op == "Relu") return A{A::Relu};
  if (op == "Sigmoid") return A{A::Sigmoid};
  if (op == "Tanh") return A{A::Tanh};
  if (op == "HardSwish") return A{A::HardSwish};
  if (op == "Gelu") return A{n.attr_string("approximate", "none") == "tanh" ? A::GeluTanh : A::Gelu};
  if (op == "LeakyRelu") return A{A::LeakyRelu, n.attr_float("alpha", 0.01f)};
  if (op == "HardSigmoid") return A{A::HardSigmoid, n.attr_float("alpha", 0.2f), n.attr_float("beta", 0.5f)};
  return std::nullopt;
}

}  // namespace kiln::ops
