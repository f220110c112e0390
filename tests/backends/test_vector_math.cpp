// The vectorizable math of src/kernels/vector_math.h (the CPU backend's elementwise loops and
// the emitted activation epilogues) against libm in double: relative error, small arguments
// included, where a formula that cancels would lose digits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/vector_math.h"

namespace kiln {
namespace {

// Every 4099th positive float below infinity, and its negation.
template <typename F>
void sweep(F&& f) {
  for (uint32_t bits = 0; bits < 0x7f800000u; bits += 4099) {
    float x;
    std::memcpy(&x, &bits, sizeof x);
    f(x);
    f(-x);
  }
}

TEST(VectorMath, TanhIsRelativelyAccurateEverywhere) {
  double worst = 0, at = 0;
  sweep([&](float x) {
    const double want = std::tanh(static_cast<double>(x));
    const double got = kiln_kernels::math::tanh(x);
    const double rel = want == 0 ? std::fabs(got) : std::fabs(got - want) / std::fabs(want);
    if (rel > worst) worst = rel, at = x;
  });
  EXPECT_LT(worst, 4e-7) << "at x = " << at;
  // Mish's tanh(softplus(-10)): a tiny argument keeps its digits.
  const float tiny = 4.5398899e-5f;
  EXPECT_NEAR(kiln_kernels::math::tanh(tiny), std::tanh(static_cast<double>(tiny)), 1e-7 * tiny);
  EXPECT_EQ(kiln_kernels::math::tanh(30.f), 1.f);
  EXPECT_EQ(kiln_kernels::math::tanh(-30.f), -1.f);
  EXPECT_TRUE(std::isnan(kiln_kernels::math::tanh(NAN)));
}

}  // namespace
}  // namespace kiln
