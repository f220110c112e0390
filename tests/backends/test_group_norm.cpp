// The cpu backend's InstanceNormalization and GroupNormalization against the reference kernels:
// 1-D, 2-D and 3-D images, per-channel and per-group scale and bias, constant and run-time,
// planes offset far from zero, two threads; and the forms left to the reference kernel.
#include "kernel_check.h"

namespace kiln {
namespace {

using kernel_check::Case;
using kernel_check::check;

ir::Attributes eps(float e = 1e-5f) { return {{"epsilon", ir::Attribute::of_float(e)}}; }

ir::Attributes groups(int64_t g, float e = 1e-5f) {
  ir::Attributes a = eps(e);
  a["num_groups"] = ir::Attribute::of_int(g);
  return a;
}

TEST(CpuGroupNorm, InstanceNormEveryRank) {
  check({"InstanceNormalization", "", {{2, 5, 37}, {5}, {5}}, {false, true, true}, {{2, 5, 37}}, eps()});
  check({"InstanceNormalization", "", {{1, 13, 17, 19}, {13}, {13}}, {false, false, false}, {{1, 13, 17, 19}}, eps(1e-3f)});
  Case c{"InstanceNormalization", "", {{2, 6, 3, 5, 7}, {6}, {6}}, {false, true, true}, {{2, 6, 3, 5, 7}}, eps()};
  c.threads = 2;
  c.concurrent = true;
  c.in_place = true;
  check(c);
}

TEST(CpuGroupNorm, GroupsPerChannelAndPerGroup) {
  // Opset 21: scale and bias per channel; opset 18's per group.
  Case per_channel{"GroupNormalization", "", {{2, 12, 9, 11}, {12}, {12}}, {false, true, true}, {{2, 12, 9, 11}}, groups(4)};
  per_channel.opset = 21;
  per_channel.threads = 2;
  check(per_channel);
  Case per_group{"GroupNormalization", "", {{1, 12, 40}, {3}, {3}}, {false, true, true}, {{1, 12, 40}}, groups(3)};
  per_group.opset = 18;
  check(per_group);
  // One group (a LayerNorm over C and the image), planes far from zero: the variance must not cancel.
  Case one{"GroupNormalization", "", {{1, 8, 33, 31}, {8}, {8}}, {false, true, true}, {{1, 8, 33, 31}}, groups(1)};
  one.opset = 21;
  one.fill = [](size_t i, Tensor& t) {
    if (i == 0)
      for (int64_t k = 0; k < t.numel(); ++k) t.data<float>()[k] += 100.f;
  };
  one.tol = 1e-3f;
  check(one);
}

// The channels-last forms the layout assignment makes after a conv: two passes over each image's
// pixels split across the team, the groups formed from per-channel sums.
TEST(CpuGroupNorm, ChannelsLast) {
  Case in{"NhwcInstanceNormalization", "kiln", {{2, 17, 19, 13}, {13}, {13}}, {false, true, true}, {{2, 17, 19, 13}}, eps()};
  in.threads = 2;
  in.concurrent = true;
  in.in_place = true;
  check(in);
  Case gn{"NhwcGroupNormalization", "kiln", {{1, 9, 11, 24}, {24}, {24}}, {false, false, false}, {{1, 9, 11, 24}}, groups(6)};
  gn.opset = 21;
  gn.threads = 2;
  gn.fill = [](size_t i, Tensor& t) {
    if (i == 0)
      for (int64_t k = 0; k < t.numel(); ++k) t.data<float>()[k] += 100.f;
  };
  gn.tol = 1e-3f;
  check(gn);
  Case per_group{"NhwcGroupNormalization", "kiln", {{1, 1, 3, 12}, {4}, {4}}, {false, true, true}, {{1, 1, 3, 12}}, groups(4)};
  per_group.opset = 18;
  check(per_group);
}

TEST(CpuGroupNorm, Declines) {
  // Rank 2 (no image), scale and bias of different kinds, a double stash.
  check({"InstanceNormalization", "", {{3, 5}, {5}, {5}}, {false, true, true}, {{3, 5}}, eps()}, false);
  Case mixed{"GroupNormalization", "", {{1, 12, 5}, {12}, {3}}, {false, true, true}, {{1, 12, 5}}, groups(3)};
  mixed.opset = 18;
  check(mixed, false);
  Case stash{"GroupNormalization", "", {{1, 12, 5}, {12}, {12}}, {false, true, true}, {{1, 12, 5}}, groups(3)};
  stash.attrs["stash_type"] = ir::Attribute::of_int(11);
  stash.opset = 21;
  check(stash, false);
}

}  // namespace
}  // namespace kiln
