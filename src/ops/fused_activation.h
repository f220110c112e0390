// The activation epilogue of kiln.FusedConv / FusedGemm / FusedMatMul: its `activation` and
// `activation_params` attributes parsed once, and the scalar function. Shared by the reference
// kernels (src/ops/kiln_fused.cpp) and CPU kernels that apply the epilogue themselves.
#pragma once
#include <kiln/error.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace kiln::ops {

struct Activation {
  enum Kind { None, Relu, Clip, Sigmoid, Tanh, SiLU, Gelu, GeluTanh, HardSigmoid, HardSwish, LeakyRelu } kind;
  float a = 0, b = 0;
};

inline Activation activation_of(const ir::Node& n) {
  static const std::pair<const char*, Activation::Kind> names[] = {
      {"Relu", Activation::Relu}, {"Clip", Activation::Clip}, {"Sigmoid", Activation::Sigmoid},
      {"Tanh", Activation::Tanh}, {"SiLU", Activation::SiLU}, {"Gelu", Activation::Gelu},
      {"GeluTanh", Activation::GeluTanh}, {"HardSigmoid", Activation::HardSigmoid},
      {"HardSwish", Activation::HardSwish}, {"LeakyRelu", Activation::LeakyRelu}};
  std::string s = n.attr_string("activation", "");
  std::vector<float> p = n.attr_floats("activation_params");
  if (s.empty()) {
    if (!p.empty()) throw Error(n.describe() + ": activation_params without an activation");
    return Activation{Activation::None};
  }
  for (const auto& [name, kind] : names) {
    if (s != name) continue;
    Activation a{kind};
    size_t want = kind == Activation::Clip || kind == Activation::HardSigmoid ? 2 : kind == Activation::LeakyRelu ? 1 : 0;
    if (p.size() != want)
      throw Error(n.describe() + ": activation " + s + " takes " + std::to_string(want) + " activation_params, got " +
                  std::to_string(p.size()));
    if (want >= 1) a.a = p[0];
    if (want >= 2) a.b = p[1];
    return a;
  }
  throw Error(n.describe() + ": unknown activation '" + s + "'");
}

inline float apply(const Activation& a, float x) {
  switch (a.kind) {
    case Activation::None: return x;
    case Activation::Relu: return x > 0 ? x : 0.f;
    case Activation::Clip: return std::min(std::max(x, a.a), a.b);
    case Activation::Sigmoid: return 1.f / (1.f + std::exp(-x));
    case Activation::Tanh: return std::tanh(x);
    case Activation::SiLU: return x / (1.f + std::exp(-x));
    case Activation::Gelu: return 0.5f * x * (1.f + std::erf(x * 0.70710678118654752f));
    case Activation::GeluTanh:
      return 0.5f * x * (1.f + std::tanh(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    case Activation::HardSigmoid: return std::max(0.f, std::min(1.f, a.a * x + a.b));
    case Activation::HardSwish: return x * std::max(0.f, std::min(1.f, x / 6.f + 0.5f));
    case Activation::LeakyRelu: return x >= 0 ? x : a.a * x;
  }
  return x;
}

}  // namespace kiln::ops
