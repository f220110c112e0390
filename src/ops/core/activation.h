// The activation vocabulary: the elementwise activations kiln applies as a producer's epilogue,
// in one table that every layer reads (activation.cpp).
//
//   kind         epilogue       params (a, b)   graph ops it stands for
//   Relu         "Relu"         -               Relu
//   Clip         "Clip"         min, max        Clip: attributes before opset 11, constant
//                                               scalar inputs from 11 (absent: -inf / +inf)
//   Sigmoid      "Sigmoid"      -               Sigmoid
//   Tanh         "Tanh"         -               Tanh
//   SiLU         "SiLU"         -               kiln.SiLU
//   Gelu         "Gelu"         -               Gelu (approximate "none"), com.microsoft.Gelu
//   GeluTanh     "GeluTanh"     -               Gelu (approximate "tanh")
//   HardSigmoid  "HardSigmoid"  alpha, beta     HardSigmoid (alpha 0.2, beta 0.5 by default)
//   HardSwish    "HardSwish"    -               HardSwish
//   LeakyRelu    "LeakyRelu"    alpha           LeakyRelu (alpha 0.01 by default)
//
// An epilogue is written on kiln.FusedConv / FusedGemm / FusedMatMul as `activation` (the name)
// and `activation_params` (the params, in order). The optimizer recognizes the graph ops
// (activation_op), the reference kernels apply the scalar form (apply), and the CPU backend maps
// kinds onto its vector loops and oneDNN post-ops.
#pragma once
#include <kiln/error.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "ir/graph.h"

namespace kiln::ops {

struct Activation {
  enum Kind { None, Relu, Clip, Sigmoid, Tanh, SiLU, Gelu, GeluTanh, HardSigmoid, HardSwish, LeakyRelu } kind;
  float a = 0, b = 0;
};

// The epilogue name of `kind` ("" for None) and how many activation_params it takes.
const char* activation_name(Activation::Kind kind);
int activation_param_count(Activation::Kind kind);

// n's epilogue attributes: None when `activation` is absent. Throws kiln::Error naming n for an
// unknown name, a wrong number of activation_params, or params without a name.
Activation activation_of(const ir::Node& n);

// Writes `act` as epilogue attributes (what activation_of reads back); nothing for None.
void set_activation(ir::Attributes& attrs, const Activation& act);

// The activation graph node n computes (a row of the table above) with its parameters; nullopt
// for any other node, and for a Clip whose bounds are not constant scalars.
std::optional<Activation> activation_op(const ir::Node& n);

// The scalar form, as the reference kernels apply it.
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
