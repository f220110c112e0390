#include "pass_test_util.h"

namespace kiln::passes::testing {

TEST(ConvTransposeToConv, KernelEqualToStrideBecomes1x1ConvAndDepthToSpace) {
  for (int64_t k : {2, 3}) {
    auto g = check_rewrite(
        [k](Builder& b) {
          ir::Value* x = b.in("x", {2, 5, 3, 4});
          b.out(b.op("ConvTranspose", {x, b.rand({5, 7, k, k}), b.rand({7})}, {{"strides", Is({k, k})}}));
        },
        passes_of(make_convtranspose_to_conv()), 1e-5);
    EXPECT_EQ(count(*g, "ConvTranspose"), 0);
    EXPECT_EQ(count(*g, "Conv"), 1);
    EXPECT_EQ(count(*g, "DepthToSpace"), 1);
  }
}

TEST(ConvTransposeToConv, OverlappingOrPaddedKernelsStay) {
  for (int variant = 0; variant < 3; ++variant) {
    auto g = check_rewrite(
        [variant](Builder& b) {
          ir::Value* x = b.in("x", {1, 4, 3, 3});
          ir::Attributes a{{"strides", Is({2, 2})}};
          if (variant == 1) a["pads"] = Is({1, 1, 1, 1});
          if (variant == 2) a["group"] = I(2);
          const int64_t k = variant == 0 ? 3 : 2;
          b.out(b.op("ConvTranspose", {x, b.rand({4, variant == 2 ? 3 : 6, k, k})}, a));
        },
        passes_of(make_convtranspose_to_conv()), 1e-5);
    EXPECT_EQ(count(*g, "ConvTranspose"), 1) << variant;
  }
}

}  // namespace kiln::passes::testing
