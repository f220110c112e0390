// The CPU backend's vector activation epilogues (activation_apply.cpp, simd.h) against the
// reference kernels' scalar forms (ops::apply), over values from the saturated tails to zero,
// at lengths off the vector width, and split across threads.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backends/cpu/activation_apply.h"

namespace kiln {
namespace {

std::vector<float> test_values(int64_t n) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> wide(-120.f, 120.f), narrow(-6.f, 6.f);
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = i % 3 == 0 ? wide(rng) : narrow(rng);
  const float special[] = {0.f, -0.f, 1e-30f, -1e-30f, 1e-8f, 88.f, -88.f, 1e4f, -1e4f};
  for (size_t i = 0; i < std::size(special) && i < v.size(); ++i) v[i * 5 % v.size()] = special[i];
  return v;
}

TEST(ActivationApply, MatchesTheReferenceForms) {
  using A = ops::Activation;
  const std::vector<A> acts = {{A::Relu}, {A::Sigmoid}, {A::SiLU}, {A::Tanh}, {A::Clip, -0.3f, 0.4f},
                               {A::Gelu}, {A::HardSwish}, {A::LeakyRelu, 0.07f}};
  for (const A& act : acts)
    for (int64_t n : {1, 15, 17, 1000, 40000})
      for (int threads : {1, 2}) {
        SCOPED_TRACE("kind " + std::to_string(act.kind) + " n " + std::to_string(n) + " threads " +
                     std::to_string(threads));
        const std::vector<float> x = test_values(n);
        std::vector<float> y = x;
        backends::cpu::apply_activation_parallel(act, y.data(), n, threads);
        for (int64_t i = 0; i < n; ++i) {
          const float want = ops::apply(act, x[i]);
          ASSERT_NEAR(y[i], want, 2e-6f * std::max(1.f, std::fabs(want))) << "x = " << x[i];
        }
      }
}

}  // namespace
}  // namespace kiln
