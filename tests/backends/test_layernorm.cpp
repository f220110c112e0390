// The cpu backend's LayerNormalization and RMSNormalization against the reference kernels.
#include "kernel_check.h"

namespace kiln {
namespace {

using kernel_check::Case;
using kernel_check::check;

ir::Attributes ln(int64_t axis, float eps = 1e-5f) {
  return {{"axis", ir::Attribute::of_int(axis)}, {"epsilon", ir::Attribute::of_float(eps)}};
}

TEST(CpuLayerNorm, LastAxisWithAndWithoutBias) {
  check({"LayerNormalization", "", {{3, 5, 37}, {37}, {37}}, {false, true, true}, {{3, 5, 37}}, ln(-1)});
  Case no_bias{"LayerNormalization", "", {{3, 5, 37}, {37}}, {false, true}, {{3, 5, 37}}, ln(-1)};
  no_bias.concurrent = true;
  no_bias.in_place = true;
  check(no_bias);
  // Runtime scale and bias, tiny epsilon as in BERT.
  check({"LayerNormalization", "", {{7, 256}, {256}, {256}}, {false, false, false}, {{7, 256}}, ln(-1, 1e-12f)});
}

TEST(CpuLayerNorm, EarlierAxisAndStatistics) {
  check({"LayerNormalization", "", {{3, 5, 7}, {5, 7}, {1, 5, 7}}, {false, true, true}, {{3, 5, 7}}, ln(1)});
  check({"LayerNormalization", "", {{3, 5, 7}, {5, 7}, {5, 7}}, {false, true, true},
         {{3, 5, 7}, {3, 1, 1}, {3, 1, 1}}, ln(-2)});
  Case c{"LayerNormalization", "", {{41, 19}, {19}, {19}}, {false, true, true}, {{41, 19}, {41, 1}, {41, 1}}, ln(1)};
  c.threads = 2;
  c.fill = [](size_t i, Tensor& t) {  // rows offset far from zero: the variance must not cancel
    if (i == 0)
      for (int64_t k = 0; k < t.numel(); ++k) t.data<float>()[k] += 100.f;
  };
  c.tol = 1e-3f;
  check(c);
}

TEST(CpuLayerNorm, Declines) {
  // Scale broadcast from one value.
  check({"LayerNormalization", "", {{3, 5, 7}, {1}}, {false, true}, {{3, 5, 7}}, ln(-1)}, false);
  ir::Attributes stash = ln(-1);
  stash["stash_type"] = ir::Attribute::of_int(11);  // double statistics
  check({"LayerNormalization", "", {{3, 7}, {7}}, {false, true}, {{3, 7}}, stash}, false);
}

Case rms(std::vector<std::vector<int64_t>> dims, std::vector<bool> constant, std::vector<int64_t> out, int64_t axis,
         float eps = 1e-5f) {
  Case c{"RMSNormalization", "", std::move(dims), std::move(constant), {std::move(out)}, ln(axis, eps)};
  c.opset = 23;
  return c;
}

TEST(CpuRmsNorm, LastAndEarlierAxes) {
  check(rms({{3, 5, 37}, {37}}, {false, true}, {3, 5, 37}, -1));
  check(rms({{3, 5, 7}, {5, 7}}, {false, true}, {3, 5, 7}, 1));
  check(rms({{2, 3, 5, 7}, {1, 5, 7}}, {false, false}, {2, 3, 5, 7}, -2, 1e-6f));
  Case c = rms({{41, 300}, {300}}, {false, true}, {41, 300}, -1);
  c.threads = 2;
  c.concurrent = true;
  check(c);
}

TEST(CpuRmsNorm, Declines) {
  check(rms({{3, 5, 7}, {1}}, {false, true}, {3, 5, 7}, -1), false);  // a scale broadcast from one value
  Case stash = rms({{3, 7}, {7}}, {false, true}, {3, 7}, -1);
  stash.attrs["stash_type"] = ir::Attribute::of_int(11);
  check(stash, false);
}

}  // namespace
}  // namespace kiln
