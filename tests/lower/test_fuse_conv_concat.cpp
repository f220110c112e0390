// Concat elimination for channels-last convs: which Concats become kiln.ConvConcat, and the same
// numbers as before (the reference kernel runs the body node by node).
#include "lower/fuse_conv_concat.h"

#include "../passes/pass_test_util.h"

namespace kiln::passes::testing {
namespace {

ir::Attributes conv(int64_t pad, const char* act = "Relu") {
  ir::Attributes a{{"pads", Is({pad, pad, pad, pad})}, {"channels_last", ir::Attribute::of_int(1)}};
  if (*act) a["activation"] = ir::Attribute::of_string(act);
  return a;
}

// x -> squeeze (1x1) -> expand1x1, expand3x3 -> Concat(axis 3) -> a 1x1 conv: squeezenet's fire
// module, with odd channel counts.
void fuse_and_compare(const std::function<void(Builder&)>& build, int expect_fused) {
  auto g = check_lowering(build, lower::fuse_conv_concat, expect_fused);
  EXPECT_EQ(count(*g, "ConvConcat"), expect_fused);
}

TEST(FuseConvConcat, FireModule) {
  fuse_and_compare(
      [](Builder& b) {
        ir::Value* x = b.in("x", {1, 7, 6, 8});
        ir::Value* s = b.op("FusedConv", {x, b.rand({6, 8, 1, 1}), b.rand({6})}, conv(0), "kiln");
        ir::Value* e1 = b.op("FusedConv", {s, b.rand({5, 6, 1, 1}), b.rand({5})}, conv(0), "kiln");
        ir::Value* e3 = b.op("FusedConv", {s, b.rand({7, 6, 3, 3}), b.rand({7})}, conv(1), "kiln");
        ir::Value* c = b.op("Concat", {e1, e3}, {{"axis", I(3)}});
        b.out(b.op("FusedConv", {c, b.rand({4, 12, 1, 1})}, conv(0), "kiln"));
      },
      1);
}

TEST(FuseConvConcat, LeavesWhatCannotWriteASlice) {
  // A piece also used elsewhere, a SiLU conv (applied after the primitive over a dense block),
  // a residual conv, a concat along another axis: none fused.
  fuse_and_compare(
      [](Builder& b) {
        ir::Value* x = b.in("x", {1, 5, 5, 4});
        ir::Value* a = b.op("FusedConv", {x, b.rand({3, 4, 1, 1})}, conv(0), "kiln");
        ir::Value* c = b.op("FusedConv", {x, b.rand({3, 4, 1, 1})}, conv(0), "kiln");
        b.out(b.op("Concat", {a, c}, {{"axis", I(3)}}));
        b.out(a);
        ir::Value* d = b.op("FusedConv", {x, b.rand({3, 4, 1, 1})}, conv(0, "SiLU"), "kiln");
        ir::Value* e = b.op("FusedConv", {x, b.rand({3, 4, 1, 1})}, conv(0), "kiln");
        b.out(b.op("Concat", {d, e}, {{"axis", I(3)}}));
        ir::Value* f = b.op("FusedConv", {x, b.rand({4, 4, 1, 1}), b.rand({4}), x}, conv(0), "kiln");
        ir::Value* h = b.op("FusedConv", {x, b.rand({4, 4, 1, 1})}, conv(0), "kiln");
        b.out(b.op("Concat", {f, h}, {{"axis", I(3)}}));
        ir::Value* i = b.op("FusedConv", {x, b.rand({4, 4, 1, 1})}, conv(0), "kiln");
        ir::Value* j = b.op("FusedConv", {x, b.rand({4, 4, 1, 1})}, conv(0), "kiln");
        b.out(b.op("Concat", {i, j}, {{"axis", I(1)}}));
      },
      0);
}

}  // namespace
}  // namespace kiln::passes::testing
