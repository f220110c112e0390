// oneDNN MatMul / Gemm / FusedMatMul / FusedGemm kernels against the reference kernels.
#include "kernel_check.h"

namespace kiln {
namespace {

using kernel_check::Case;
using kernel_check::check;

ir::Attributes gemm_attrs(int64_t ta, int64_t tb, float alpha = 1.f, float beta = 1.f) {
  return {{"transA", ir::Attribute::of_int(ta)},
          {"transB", ir::Attribute::of_int(tb)},
          {"alpha", ir::Attribute::of_float(alpha)},
          {"beta", ir::Attribute::of_float(beta)}};
}

TEST(OnednnMatMul, Plain2D) {
  check({"MatMul", "", {{7, 13}, {13, 5}}, {false, true}, {{7, 5}}});
  check({"MatMul", "", {{7, 13}, {13, 5}}, {false, false}, {{7, 5}}});
}

TEST(OnednnMatMul, BatchedAWithMatrixB) {
  check({"MatMul", "", {{2, 3, 7, 13}, {13, 5}}, {false, true}, {{2, 3, 7, 5}}});
}

TEST(OnednnMatMul, BatchedBothAndBroadcast) {
  check({"MatMul", "", {{2, 3, 7, 13}, {2, 3, 13, 5}}, {false, false}, {{2, 3, 7, 5}}});
  check({"MatMul", "", {{2, 1, 7, 13}, {3, 13, 5}}, {false, false}, {{2, 3, 7, 5}}});
  check({"MatMul", "", {{7, 13}, {2, 3, 13, 5}}, {false, true}, {{2, 3, 7, 5}}});
}

TEST(OnednnMatMul, VectorOperands) {
  check({"MatMul", "", {{13}, {13, 5}}, {false, true}, {{5}}});
  check({"MatMul", "", {{2, 7, 13}, {13}}, {false, true}, {{2, 7}}});
  check({"MatMul", "", {{13}, {2, 13, 5}}, {false, false}, {{2, 5}}});
}

TEST(OnednnMatMul, TwoThreads) {
  Case c{"MatMul", "", {{3, 37, 29}, {29, 41}}, {false, true}, {{3, 37, 41}}};
  c.threads = 2;
  c.concurrent = true;
  check(c);
}

TEST(OnednnGemm, Transposes) {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (bool constant_b : {true, false}) {
        SCOPED_TRACE(std::to_string(ta) + std::to_string(tb) + (constant_b ? " const" : ""));
        std::vector<int64_t> a = ta ? std::vector<int64_t>{13, 7} : std::vector<int64_t>{7, 13};
        std::vector<int64_t> b = tb ? std::vector<int64_t>{5, 13} : std::vector<int64_t>{13, 5};
        check({"Gemm", "", {a, b, {5}}, {false, constant_b, true}, {{7, 5}}, gemm_attrs(ta, tb)});
      }
}

TEST(OnednnGemm, BiasShapesAlphaBeta) {
  for (std::vector<int64_t> c : {std::vector<int64_t>{5}, {1, 5}, {7, 1}, {7, 5}, {1}, {}})
    for (bool constant_c : {true, false}) {
      SCOPED_TRACE(std::to_string(c.size()) + (constant_c ? " const" : ""));
      check({"Gemm", "", {{7, 13}, {13, 5}, c}, {false, true, constant_c}, {{7, 5}}, gemm_attrs(0, 0, 0.5f, 2.f)},
            constant_c);  // beta != 1 on a runtime C is left to the reference
      check({"Gemm", "", {{7, 13}, {13, 5}, c}, {false, true, constant_c}, {{7, 5}}, gemm_attrs(0, 0, 0.5f, 1.f)});
    }
  check({"Gemm", "", {{7, 13}, {5, 13}}, {false, true}, {{7, 5}}, gemm_attrs(0, 1, 1.5f)});
  // alpha on runtime weights: output scales when there is no C ...
  check({"Gemm", "", {{7, 13}, {5, 13}}, {false, false}, {{7, 5}}, gemm_attrs(0, 1, 1.5f)});
  // ... and a constant C prescaled to cancel them (oneDNN scales the bias too) ...
  check({"Gemm", "", {{7, 13}, {5, 13}, {5}}, {false, false, true}, {{7, 5}}, gemm_attrs(0, 1, 1.5f, 0.7f)});
  // ... but a runtime C is declined.
  check({"Gemm", "", {{7, 13}, {5, 13}, {5}}, {false, false, false}, {{7, 5}}, gemm_attrs(0, 1, 1.5f)}, false);
}

TEST(OnednnFused, Activations) {
  const std::vector<std::pair<std::string, std::vector<float>>> acts = {
      {"", {}},          {"Relu", {}}, {"Clip", {-0.3f, 0.4f}}, {"Sigmoid", {}},
      {"Tanh", {}},      {"SiLU", {}}, {"Gelu", {}},            {"GeluTanh", {}},
      {"HardSigmoid", {0.3f, 0.4f}},   {"HardSwish", {}},       {"LeakyRelu", {0.07f}}};
  for (const auto& [act, params] : acts) {
    SCOPED_TRACE(act);
    ir::Attributes a = gemm_attrs(0, 1);
    ir::Attributes m;
    if (!act.empty()) {
      a["activation"] = m["activation"] = ir::Attribute::of_string(act);
      if (!params.empty()) a["activation_params"] = m["activation_params"] = ir::Attribute::of_floats(params);
    }
    check({"FusedGemm", "kiln", {{7, 13}, {5, 13}, {5}}, {false, true, true}, {{7, 5}}, a});
    check({"FusedMatMul", "kiln", {{2, 7, 13}, {13, 5}}, {false, true}, {{2, 7, 5}}, m});
  }
}

TEST(OnednnMatMul, Declines) {
  // Empty results go to the reference.
  check({"MatMul", "", {{0, 13}, {13, 5}}, {false, true}, {{0, 5}}}, false);
  check({"Gemm", "", {{7, 0}, {0, 5}}, {false, true}, {{7, 5}}, gemm_attrs(0, 0)}, false);
}

}  // namespace
}  // namespace kiln
