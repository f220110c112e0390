// The elementwise evaluator (src/backends/cpu/elementwise_program.cpp) against the reference
// kernels: broadcasting in every position, constants, parameters, and tensors large enough to
// run on two threads.
#include "kernel_check.h"

namespace kiln::kernel_check {
namespace {

using A = ir::Attribute;

TEST(Elementwise, BinaryBroadcasts) {
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min", "PRelu"}) {
    SCOPED_TRACE(op);
    auto fill = [&](size_t i, Tensor& t) {  // Div: keep divisors away from 0
      if (std::string(op) == "Div" && i == 1)
        for (int64_t k = 0; k < t.numel(); ++k) t.data<float>()[k] = 0.5f + std::fabs(t.data<float>()[k]);
    };
    check({op, "", {{3, 5, 7}, {3, 5, 7}}, {false, false}, {{3, 5, 7}}, {}, 17, 1, 1e-5f, fill});
    check({op, "", {{3, 5, 7}, {7}}, {false, false}, {{3, 5, 7}}, {}, 17, 1, 1e-5f, fill});  // inner run
    check({op, "", {{3, 5, 7}, {5, 1}}, {false, true}, {{3, 5, 7}}, {}, 17, 1, 1e-5f, fill});  // constant, middle
    if (std::string(op) != "PRelu") {  // PRelu broadcasts its slope one way only
      check({op, "", {{3, 1, 7}, {1, 5, 1}}, {false, false}, {{3, 5, 7}}, {}, 17, 1, 1e-5f, fill});
      check({op, "", {{1}, {2, 3, 4, 5}}, {false, false}, {{2, 3, 4, 5}}, {}, 17, 1, 1e-5f, fill});
    }
  }
}

TEST(Elementwise, NhwcChannelBroadcastOnTwoThreads) {
  // The squeeze-excitation Mul of a channels-last model: [1,H,W,C] * [1,1,1,C], big enough to split.
  check({"Mul", "", {{1, 57, 61, 40}, {1, 1, 1, 40}}, {false, false}, {{1, 57, 61, 40}}, {}, 17, 2});
  check({"Add", "", {{2, 300, 301}, {2, 300, 301}}, {false, false}, {{2, 300, 301}}, {}, 17, 2});
}

TEST(Elementwise, ShortRowsWidenedAroundARepeatingOperand) {
  // Rows of 20 merged m at a time with the [20] operand read as a repeated pattern: m = 12
  // divides 144 rows; 7 x 13 rows take m = 7; the second input on the left; a third operand
  // that splats per row keeps the rows as they are.
  check({"Mul", "", {{1, 12, 12, 20}, {1, 1, 1, 20}}, {false, false}, {{1, 12, 12, 20}}});
  check({"Sub", "", {{1, 1, 1, 20}, {2, 7, 13, 20}}, {false, true}, {{2, 7, 13, 20}}});
  check({"Sum", "", {{3, 11, 20}, {20}, {3, 11, 1}}, {false, false, false}, {{3, 11, 20}}});
  check({"Div", "", {{1, 97, 5}, {5}}, {false, false}, {{1, 97, 5}}, {}, 17, 1, 1e-5f, [](size_t i, Tensor& t) {
           if (i == 1)
             for (int64_t k = 0; k < t.numel(); ++k) t.data<float>()[k] = 0.5f + std::fabs(t.data<float>()[k]);
         }});
}

TEST(Elementwise, Unary) {
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Exp", "Neg", "Abs", "Erf", "HardSwish"}) {
    SCOPED_TRACE(op);
    check({op, "", {{3, 5, 300}}, {false}, {{3, 5, 300}}, {}, 17, 1, 2e-6f});
  }
  auto positive = [](size_t, Tensor& t) {
    for (int64_t k = 0; k < t.numel(); ++k) t.data<float>()[k] = 0.1f + std::fabs(t.data<float>()[k]);
  };
  for (const char* op : {"Sqrt", "Reciprocal"}) check({op, "", {{7, 13}}, {false}, {{7, 13}}, {}, 17, 1, 1e-6f, positive});
  check({"SiLU", "kiln", {{4, 77}}, {false}, {{4, 77}}, {}, 17, 1, 2e-6f});
  check({"LeakyRelu", "", {{4, 77}}, {false}, {{4, 77}}, {{"alpha", A::of_float(0.07f)}}});
  check({"HardSigmoid", "", {{4, 77}}, {false}, {{4, 77}}, {{"alpha", A::of_float(0.3f)}, {"beta", A::of_float(0.4f)}}});
}

TEST(Elementwise, ParametersFromConstants) {
  // Clip's bounds and Pow's exponent are constant scalars read when the kernel is made.
  auto scalar = [](float v) { return [v](size_t i, Tensor& t) { if (i > 0) t.data<float>()[0] = v; }; };
  check({"Clip", "", {{5, 9}, {}, {}}, {false, true, true}, {{5, 9}}, {}, 17, 1, 1e-6f,
         [](size_t i, Tensor& t) { if (i > 0) t.data<float>()[0] = i == 1 ? -0.25f : 0.5f; }});
  check({"Pow", "", {{5, 9}, {}}, {false, true}, {{5, 9}}, {}, 17, 1, 1e-6f, scalar(2.f)});
  check({"Pow", "", {{5, 9}, {}}, {false, true}, {{5, 9}}, {}, 17, 1, 1e-6f, scalar(3.f)});
  // Any other exponent, or a runtime exponent, stays on the reference kernel.
  check({"Pow", "", {{5, 9}, {}}, {false, true}, {{5, 9}}, {}, 17, 1, 1e-6f, scalar(1.7f)}, false);
  check({"Pow", "", {{5, 9}, {}}, {false, false}, {{5, 9}}, {}, 17, 1}, false);
}

TEST(Elementwise, VariadicAndInPlace) {
  check({"Sum", "", {{3, 4, 5}, {4, 5}, {5}}, {false, false, false}, {{3, 4, 5}}});
  check({"Max", "", {{3, 4, 5}, {3, 1, 5}, {1}}, {false, false, true}, {{3, 4, 5}}});
  Case c{"Add", "", {{6, 70}, {70}}, {false, false}, {{6, 70}}};
  c.in_place = true;
  check(c);
}

}  // namespace
}  // namespace kiln::kernel_check
