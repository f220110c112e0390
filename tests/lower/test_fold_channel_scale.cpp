// Squeeze-excitation scales folded into the next conv's weights: which Muls go, and the same
// numbers as before (the reference FusedConv scales X's channels by its fifth input).
#include "lower/fold_channel_scale.h"

#include "../passes/pass_test_util.h"

namespace kiln::passes::testing {
namespace {

ir::Attributes conv(int64_t k = 1, int64_t group = 1) {
  ir::Attributes a{{"pads", Is({k / 2, k / 2, k / 2, k / 2})}, {"channels_last", I(1)}};
  if (group > 1) a["group"] = I(group);
  return a;
}

void fold_and_compare(const std::function<void(Builder&)>& build, int expect, int64_t free_pixels = 0) {
  Builder ref;
  build(ref);
  auto g = check_lowering(build, [&](ir::Graph& graph) { return lower::fold_channel_scales(graph, free_pixels); }, expect);
  EXPECT_EQ(count(*g, "Mul"), count(*ref.g, "Mul") - expect);
}

// x -> GlobalAveragePool -> 1x1 convs -> Sigmoid = s; Mul(x, s) -> project: efficientnet's
// block, once with the Mul's operands the other way round into a 3x3 conv with a residual.
TEST(FoldChannelScale, SqueezeExcitation) {
  fold_and_compare(
      [](Builder& b) {
        ir::Value* x = b.in("x", {1, 9, 7, 12});
        ir::Value* p = b.op("NhwcGlobalAveragePool", {x}, {}, "kiln");
        ir::Attributes fc = conv();
        fc["activation"] = S("Sigmoid");
        ir::Value* s = b.op("FusedConv", {p, b.rand({12, 12, 1, 1}), b.rand({12})}, fc, "kiln");
        ir::Value* m = b.op("Mul", {x, s});
        ir::Value* y = b.op("FusedConv", {m, b.rand({5, 12, 1, 1}), b.rand({5})}, conv(), "kiln");
        ir::Value* m2 = b.op("Mul", {s, x});
        ir::Value* r = b.in("r", {1, 9, 7, 2});
        b.out(b.op("Relu", {b.op("FusedConv", {m2, b.rand({2, 12, 3, 3}), b.rand({2}), r}, conv(3), "kiln")}));
        b.out(b.op("Relu", {y}));
      },
      2);
}

TEST(FoldChannelScale, LeavesWhatDoesNotFit) {
  // The product read twice; a grouped conv; a scale per pixel, not per channel; weights with
  // more elements than half the activation.
  fold_and_compare(
      [](Builder& b) {
        ir::Value* x = b.in("x", {1, 5, 4, 8});
        ir::Value* s = b.in("s", {1, 1, 1, 8});
        ir::Value* m = b.op("Mul", {x, s});
        b.out(b.op("FusedConv", {m, b.rand({4, 8, 1, 1})}, conv(), "kiln"));
        b.out(m);
        ir::Value* g = b.op("Mul", {x, s});
        b.out(b.op("FusedConv", {g, b.rand({8, 2, 1, 1})}, conv(1, 4), "kiln"));
        ir::Value* px = b.in("px", {1, 5, 4, 1});
        b.out(b.op("FusedConv", {b.op("Mul", {x, px}), b.rand({4, 8, 1, 1})}, conv(), "kiln"));
        b.out(b.op("FusedConv", {b.op("Mul", {x, s}), b.rand({24, 8, 1, 1})}, conv(), "kiln"));
      },
      0);
}

// 1x1 convs of few pixels take the scale whatever their weights (the cpu backend's
// kiln_pointwise_scaled multiplies each weight vector as it loads it); a 3x3 conv, or a 1x1 conv
// of more pixels, still needs the activation to outweigh its weights.
TEST(FoldChannelScale, FreeForFewPixels) {
  auto build = [](Builder& b) {
    ir::Value* x = b.in("x", {1, 5, 4, 8});
    ir::Value* s = b.in("s", {1, 1, 1, 8});
    ir::Value* s2 = b.in("s2", {1, 1, 1, 8});
    b.out(b.op("Relu", {b.op("FusedConv", {b.op("Mul", {x, s}), b.rand({24, 8, 1, 1})}, conv(), "kiln")}));
    b.out(b.op("Relu", {b.op("FusedConv", {b.op("Mul", {x, s2}), b.rand({24, 8, 3, 3})}, conv(3), "kiln")}));
  };
  fold_and_compare(build, 1, 20);
  fold_and_compare(build, 0, 19);
}

}  // namespace
}  // namespace kiln::passes::testing
