// kiln's Winograd conv (winograd_conv.cpp), F(2x2, 3x3) and F(4x4, 3x3), against the reference
// kernel: input channels off and on the 16-lane vectors, outputs off the 64-wide blocks, odd and
// even images (partial tiles), no, symmetric and asymmetric padding, each kind of activation, two images,
// one and two threads; and the forms it leaves to oneDNN.
#include "kernel_check.h"

#include "backends/cpu/simd.h"

namespace kiln {
namespace {

using kernel_check::Case;
using kernel_check::check;

ir::Attributes winograd_attrs(std::vector<int64_t> pads, const std::string& act) {
  ir::Attributes a = {{"channels_last", ir::Attribute::of_int(1)}, {"pads", ir::Attribute::of_ints(pads)}};
  if (!act.empty()) a["activation"] = ir::Attribute::of_string(act);
  if (act == "Clip") a["activation_params"] = ir::Attribute::of_floats({-0.2f, 0.3f});
  return a;
}

std::string chosen(std::vector<int64_t> x, std::vector<int64_t> w, ir::Attributes a) {
  return kernel_check::first_fused_conv_kernel(x, w, a);
}

TEST(WinogradConv, MatchesTheReference) {
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "kiln_winograd needs AVX-512";
  struct Shape {
    int64_t h, w, c, oc;
    std::vector<int64_t> pads;
  };
  // Images under 20 pixels a side take 2x2 output tiles, the others 4x4 (partial at the edges).
  const Shape shapes[] = {{7, 9, 16, 64, {1, 1, 1, 1}},   {6, 5, 3, 5, {1, 1, 1, 1}},   {13, 13, 20, 70, {1, 1, 1, 1}},
                          {5, 8, 33, 16, {0, 0, 0, 0}},   {4, 4, 1, 17, {1, 0, 0, 1}},   {3, 3, 48, 130, {1, 1, 1, 1}},
                          {21, 23, 16, 64, {1, 1, 1, 1}}, {24, 22, 19, 33, {0, 1, 1, 0}}, {20, 20, 64, 16, {1, 1, 1, 1}}};
  for (const Shape& s : shapes)
    for (const char* act : {"", "Relu", "Clip", "SiLU", "Sigmoid"})
      for (int threads : {1, 2}) {
        SCOPED_TRACE(std::to_string(s.h) + "x" + std::to_string(s.w) + " " + std::to_string(s.c) + " -> " +
                     std::to_string(s.oc) + " " + act + " threads " + std::to_string(threads));
        const int64_t oh = s.h + s.pads[0] + s.pads[2] - 2, ow = s.w + s.pads[1] + s.pads[3] - 2;
        Case c{"FusedConv", "kiln", {{2, s.h, s.w, s.c}, {s.oc, s.c, 3, 3}, {s.oc}}, {false, true, true},
               {{2, oh, ow, s.oc}}, winograd_attrs(s.pads, act)};
        c.threads = threads;
        c.tol = 2e-4f;  // the transforms round differently from the direct sums
        c.concurrent = s.h == 21 && threads == 2;  // two callers at once: each its own scratch
        ASSERT_EQ(chosen({2, s.h, s.w, s.c}, {s.oc, s.c, 3, 3}, c.attrs), "kiln_winograd");
        check(c);
      }
}

TEST(WinogradConv, LeavesOtherFormsToOneDnn) {
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "kiln_winograd needs AVX-512";
  ir::Attributes strided = winograd_attrs({1, 1, 1, 1}, "Relu");
  strided["strides"] = ir::Attribute::of_ints({2, 2});
  EXPECT_NE(chosen({1, 9, 9, 16}, {32, 16, 3, 3}, strided), "kiln_winograd");
  ir::Attributes grouped = winograd_attrs({1, 1, 1, 1}, "Relu");
  grouped["group"] = ir::Attribute::of_int(2);
  EXPECT_NE(chosen({1, 9, 9, 16}, {32, 8, 3, 3}, grouped), "kiln_winograd");
  EXPECT_NE(chosen({1, 9, 9, 16}, {32, 16, 5, 5}, winograd_attrs({2, 2, 2, 2}, "")), "kiln_winograd");
  ir::Attributes blocked = winograd_attrs({1, 1, 1, 1}, "Relu");
  blocked["x_blocked"] = ir::Attribute::of_int(1);
  EXPECT_NE(chosen({1, 9, 9, 16}, {32, 16, 3, 3}, blocked), "kiln_winograd");
}

}  // namespace
}  // namespace kiln
