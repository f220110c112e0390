// The cpu backend's Resize (backends/cpu/resize.cpp on kernels/resize.h) against the reference
// kernel: nearest, linear and cubic, one and two resized axes, up and down, several coordinate
// modes, antialiased downscales (wider tap tables), odd extents; forms it leaves to the reference kernel decline.
#include <gtest/gtest.h>

#include "one_node.h"

namespace kiln {
namespace {

using one_node::In;
using one_node::OneNode;

Tensor floats(const std::vector<float>& v) { return Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v); }

ir::Attributes attrs(const std::string& mode, const std::string& coord) {
  ir::Attributes a;
  a["mode"] = ir::Attribute::of_string(mode);
  a["coordinate_transformation_mode"] = ir::Attribute::of_string(coord);
  return a;
}

TEST(CpuResize, MatchesTheReferenceKernel) {
  const Tensor x = one_node::random(DType::Float, {2, 3, 7, 9}, 11);
  const std::vector<std::vector<float>> scales = {{1, 1, 2, 2}, {1, 1, 0.5f, 1.5f}, {1, 1, 1, 3}, {1, 1, 1.7f, 1}};
  for (const char* mode : {"nearest", "linear", "cubic"})
    for (const char* coord : {"half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel"})
      for (const auto& s : scales) {
        OneNode n("Resize", {{x}, {Tensor()}, {floats(s), true}}, 1, attrs(mode, coord), 13);
        SCOPED_TRACE(std::string(mode) + " " + coord + " scales " + std::to_string(s[2]) + "," + std::to_string(s[3]));
        one_node::check(n, true, 1e-4f, 2);
      }
}

TEST(CpuResize, UpscalesAlongTheFirstAxisInEveryLayout) {
  // The b-first order (each source row resized along b once, output rows blended from those),
  // with the channels inside (inner > 1) and outside, edge rows clamped, several outer blocks.
  const Tensor nhwc = one_node::random(DType::Float, {2, 5, 6, 3}, 17);
  const Tensor nchw = one_node::random(DType::Float, {2, 3, 4, 5}, 18);
  for (const char* mode : {"nearest", "linear", "cubic"})
    for (const char* coord : {"half_pixel", "align_corners"}) {
      SCOPED_TRACE(std::string(mode) + " " + coord);
      OneNode a("Resize", {{nhwc}, {Tensor()}, {floats({1, 2.5f, 3, 1}), true}}, 1, attrs(mode, coord), 13);
      one_node::check(a, true, 1e-4f, 2);
      OneNode b("Resize", {{nchw}, {Tensor()}, {floats({1, 1, 8, 0.6f}), true}}, 1, attrs(mode, coord), 13);
      one_node::check(b, true, 1e-4f, 1);
    }
}

TEST(CpuResize, AntialiasedDownscalesRunTheWideTaps) {
  const Tensor x = one_node::random(DType::Float, {2, 3, 11, 13}, 13);
  for (const char* mode : {"linear", "cubic"})
    for (const std::vector<float>& s : std::vector<std::vector<float>>{{1, 1, 0.3f, 0.55f}, {1, 1, 1, 0.4f}, {1, 1, 0.45f, 2}}) {
      ir::Attributes a = attrs(mode, "half_pixel");
      a["antialias"] = ir::Attribute::of_int(1);
      OneNode n("Resize", {{x}, {Tensor()}, {floats(s), true}}, 1, a, 18);
      SCOPED_TRACE(std::string(mode) + " scales " + std::to_string(s[2]) + "," + std::to_string(s[3]));
      one_node::check(n, true, 1e-4f, 2);
    }
}

TEST(CpuResize, SizesAndThreeAxesAndComputedScales) {
  const Tensor x = one_node::random(DType::Float, {1, 4, 5, 6}, 12);
  OneNode sized("Resize", {{x}, {Tensor()}, {Tensor()}, {one_node::ints({1, 4, 11, 13}), true}}, 1,
                attrs("linear", "half_pixel"), 13);
  one_node::check(sized, true, 1e-4f);
  // Three resized axes: the reference kernel's.
  OneNode three("Resize", {{x}, {Tensor()}, {floats({1, 2, 2, 2}), true}}, 1, attrs("linear", "half_pixel"), 13);
  one_node::check(three, false);
  // Scales computed at run time: the reference kernel's.
  OneNode computed("Resize", {{x}, {Tensor()}, {floats({1, 1, 2, 2})}}, 1, attrs("linear", "half_pixel"), 13);
  EXPECT_EQ(computed.kernel(), nullptr);
}

}  // namespace
}  // namespace kiln
