// kiln.ChannelShuffle's CPU kernel against its reference kernel: the two-way interleave of
// NHWC, the general gather, and channel blocks of NCHW.
#include "kernel_check.h"

namespace kiln::kernel_check {
namespace {

ir::Attributes shuffle(int64_t axis, int64_t group, std::vector<int64_t> ranges) {
  return {{"axis", ir::Attribute::of_int(axis)}, {"group", ir::Attribute::of_int(group)},
          {"ranges", ir::Attribute::of_ints(std::move(ranges))}};
}

TEST(ChannelShuffle, NhwcTwoHalves) {
  check({"ChannelShuffle", "kiln", {{1, 7, 5, 58}, {1, 7, 5, 58}}, {false, false}, {{1, 7, 5, 58}, {1, 7, 5, 58}},
         shuffle(3, 2, {0, 58, 58, 116})});
  Case big{"ChannelShuffle", "kiln", {{1, 28, 28, 116}, {1, 28, 28, 116}}, {false, false},
           {{1, 28, 28, 116}, {1, 28, 28, 116}}, shuffle(3, 2, {0, 116, 116, 232})};
  big.threads = 2;
  check(big);
}

TEST(ChannelShuffle, GeneralGatherAndOddRanges) {
  // Three inputs of different widths, three groups, ranges that do not start at a pair.
  check({"ChannelShuffle", "kiln", {{2, 3, 4}, {2, 3, 5}, {2, 3, 3}}, {false, false, false}, {{2, 3, 5}, {2, 3, 7}},
         shuffle(2, 3, {1, 6, 5, 12})});
}

TEST(ChannelShuffle, NchwChannelBlocks) {
  check({"ChannelShuffle", "kiln", {{1, 4, 6, 5}, {1, 4, 6, 5}}, {false, false}, {{1, 8, 6, 5}}, shuffle(1, 2, {0, 8})});
  check({"ChannelShuffle", "kiln", {{2, 6, 3, 3}}, {false}, {{2, 3, 3, 3}, {2, 3, 3, 3}}, shuffle(1, 3, {0, 3, 3, 6})});
}

}  // namespace
}  // namespace kiln::kernel_check
