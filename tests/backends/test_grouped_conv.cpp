// kiln's narrow-group conv (grouped_conv.cpp) against the reference kernel: groups of 2, 4, 8
// and 16 channels, channels a multiple of 16 or not (a last vector of 8, 4 or 12 lanes), strides
// 1 and 2, no, symmetric and asymmetric padding, widths that leave every partial segment, each
// kind of activation, two images, one and two threads; and the forms it leaves to oneDNN.
#include "kernel_check.h"

#include "backends/cpu/simd.h"

namespace kiln {
namespace {

using kernel_check::Case;
using kernel_check::check;

ir::Attributes grouped_attrs(int64_t groups, int64_t stride, std::vector<int64_t> pads, const std::string& act) {
  ir::Attributes a = {{"channels_last", ir::Attribute::of_int(1)},
                      {"group", ir::Attribute::of_int(groups)},
                      {"strides", ir::Attribute::of_ints({stride, stride})},
                      {"pads", ir::Attribute::of_ints(pads)}};
  if (!act.empty()) a["activation"] = ir::Attribute::of_string(act);
  if (act == "Clip") a["activation_params"] = ir::Attribute::of_floats({-0.2f, 0.3f});
  if (act == "LeakyRelu") a["activation_params"] = ir::Attribute::of_floats({0.07f});
  return a;
}

int64_t out_size(int64_t in, int64_t stride, int64_t pad_begin, int64_t pad_end) {
  return (in + pad_begin + pad_end - 3) / stride + 1;
}

TEST(GroupedConv, MatchesTheReference) {
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "kiln_grouped needs AVX-512";
  struct Shape {
    int64_t h, w, c, groups, stride;
    std::vector<int64_t> pads;
  };
  const Shape shapes[] = {{9, 13, 32, 8, 1, {1, 1, 1, 1}},  {7, 17, 64, 32, 1, {1, 1, 1, 1}}, {6, 11, 48, 6, 2, {1, 1, 1, 1}},
                          {10, 9, 32, 2, 2, {0, 1, 1, 0}},  {5, 20, 16, 4, 1, {0, 0, 0, 0}},  {12, 15, 64, 16, 2, {1, 1, 0, 0}},
                          {4, 3, 16, 8, 1, {1, 1, 1, 1}},   {8, 10, 32, 4, 1, {1, 1, 1, 1}},  {7, 9, 32, 2, 1, {1, 0, 1, 2}},
                          // RegNet's 104 and 440 channels in groups of 8, and 4- and 12-lane last vectors.
                          {9, 7, 104, 13, 2, {1, 1, 1, 1}}, {7, 7, 40, 5, 1, {1, 1, 1, 1}},   {5, 11, 24, 6, 1, {1, 1, 1, 1}},
                          {6, 9, 20, 5, 2, {1, 1, 1, 1}},   {4, 6, 44, 22, 1, {0, 1, 1, 0}}};
  for (const Shape& s : shapes)
    for (const char* act : {"", "Relu", "Clip", "SiLU", "HardSwish", "LeakyRelu", "Tanh"})
      for (int threads : {1, 2}) {
        const int64_t oh = out_size(s.h, s.stride, s.pads[0], s.pads[2]), ow = out_size(s.w, s.stride, s.pads[1], s.pads[3]);
        SCOPED_TRACE(std::to_string(s.h) + "x" + std::to_string(s.w) + " " + std::to_string(s.c) + " in " +
                     std::to_string(s.groups) + " groups, stride " + std::to_string(s.stride) + " " + act + " threads " +
                     std::to_string(threads));
        Case c{"FusedConv", "kiln", {{2, s.h, s.w, s.c}, {s.c, s.c / s.groups, 3, 3}, {s.c}}, {false, true, true},
               {{2, oh, ow, s.c}}, grouped_attrs(s.groups, s.stride, s.pads, act)};
        c.threads = threads;
        c.concurrent = s.h == 7 && threads == 2;
        ASSERT_EQ(kernel_check::first_fused_conv_kernel({2, s.h, s.w, s.c}, {s.c, s.c / s.groups, 3, 3}, c.attrs),
                  "kiln_grouped");
        check(c);
      }
}

TEST(GroupedConv, LeavesOtherFormsToOneDnn) {
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "kiln_grouped needs AVX-512";
  auto chosen = [](std::vector<int64_t> x, std::vector<int64_t> w, const ir::Attributes& a) {
    return kernel_check::first_fused_conv_kernel(x, w, a);
  };
  const auto pads = std::vector<int64_t>{1, 1, 1, 1};
  EXPECT_NE(chosen({1, 8, 8, 64}, {64, 32, 3, 3}, grouped_attrs(2, 1, pads, "Relu")), "kiln_grouped");  // 32 wide
  EXPECT_NE(chosen({1, 8, 8, 32}, {64, 4, 3, 3}, grouped_attrs(8, 1, pads, "Relu")), "kiln_grouped");   // 8 outputs a group
  EXPECT_NE(chosen({1, 8, 8, 32}, {32, 4, 5, 5}, grouped_attrs(8, 1, {2, 2, 2, 2}, "")), "kiln_grouped");
  EXPECT_NE(chosen({1, 9, 9, 32}, {32, 4, 3, 3}, grouped_attrs(8, 3, pads, "")), "kiln_grouped");
  EXPECT_NE(chosen({1, 8, 8, 32}, {32, 32, 3, 3}, grouped_attrs(1, 1, pads, "Relu")), "kiln_grouped");
}

}  // namespace
}  // namespace kiln
