#include "pass_test_util.h"

namespace kiln::passes::testing {

TEST(FoldPad, ZeroPadBeforeConvBecomesItsPadding) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {1, 3, 6, 5});
        ir::Value* p = b.op("Pad", {x, b.ints({0, 0, 1, 0, 0, 0, 2, 1})});
        b.out(b.op("Conv", {p, b.rand({4, 3, 3, 3}), b.rand({4})}, {{"pads", Is({1, 1, 0, 0})}, {"strides", Is({2, 2})}}));
      },
      passes_of(make_fold_pad()), 1e-5);
  EXPECT_EQ(count(*g, "Pad"), 0);
  for (const ir::Node* n : g->nodes()) {
    if (n->op_type() == "Conv") {
      EXPECT_EQ(n->attr_ints("pads"), (std::vector<int64_t>{2, 1, 2, 1}));
    }
  }
}

TEST(FoldPad, ChannelsLastPadThroughTheLayoutTranspose) {
  // TensorFlow's ZeroPadding2D in NHWC, then the NHWC -> NCHW Transpose in front of a VALID conv.
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {1, 5, 6, 3});
        ir::Value* p = b.op("Pad", {x, b.ints({0, 1, 0, 0, 0, 2, 1, 0})});
        ir::Value* t = b.op("Transpose", {p}, {{"perm", Is({0, 3, 1, 2})}});
        b.out(b.op("Conv", {t, b.rand({2, 3, 3, 3})}, {{"auto_pad", S("VALID")}}));
      },
      passes_of(make_fold_pad()), 1e-5);
  EXPECT_EQ(count(*g, "Pad"), 0);
}

TEST(FoldPad, ZeroPadBeforeAveragePoolBecomesItsCountedPadding) {
  // PyTorch's avg_pool2d(3, stride 1, padding 1) as exported: Pad, then an unpadded pool; and a
  // pool that counts its own padding already, on an odd shape with a stride.
  for (int variant = 0; variant < 2; ++variant) {
    auto g = check_rewrite(
        [variant](Builder& b) {
          ir::Value* x = b.in("x", {2, 3, 7, 6});
          ir::Value* p = b.op("Pad", {x, b.ints({0, 0, 1, 2, 0, 0, 1, 0})});
          ir::Attributes a = {{"kernel_shape", Is({3, 3})}};
          if (variant == 1) {
            a["pads"] = Is({0, 1, 1, 0});
            a["strides"] = Is({2, 2});
            a["count_include_pad"] = ir::Attribute::of_int(1);
          }
          b.out(b.op("AveragePool", {p}, a));
        },
        passes_of(make_fold_pad()), 1e-5);
    EXPECT_EQ(count(*g, "Pad"), 0) << variant;
    for (const ir::Node* n : g->nodes())
      if (n->op_type() == "AveragePool") {
        EXPECT_EQ(n->attr_ints("pads"), variant == 0 ? (std::vector<int64_t>{1, 2, 1, 0}) : (std::vector<int64_t>{1, 3, 2, 0}));
        EXPECT_EQ(n->attr_int("count_include_pad", 0), 1);
      }
  }
}

TEST(FoldPad, PadsBeforeAPoolThatCannotFoldStay) {
  for (int variant = 0; variant < 4; ++variant) {
    auto g = check_rewrite(
        [variant](Builder& b) {
          ir::Value* x = b.in("x", {1, 2, 5, 5});
          // 0: own padding not counted; 1: ceil_mode; 2: channels padded; 3: a MaxPool
          std::vector<int64_t> pads = variant == 2 ? std::vector<int64_t>{0, 1, 1, 1, 0, 0, 1, 1}
                                                   : std::vector<int64_t>{0, 0, 1, 1, 0, 0, 1, 1};
          ir::Value* p = b.op("Pad", {x, b.ints(pads)});
          ir::Attributes a = {{"kernel_shape", Is({2, 2})}};
          if (variant == 0) a["pads"] = Is({1, 1, 1, 1});
          if (variant == 1) {
            a["ceil_mode"] = ir::Attribute::of_int(1);
            a["strides"] = Is({2, 2});
          }
          b.out(b.op(variant == 3 ? "MaxPool" : "AveragePool", {p}, a));
        },
        passes_of(make_fold_pad()));
    EXPECT_EQ(count(*g, "Pad"), 1) << variant;
  }
}

TEST(FoldPad, PadsThatCannotFoldStay) {
  for (int variant = 0; variant < 3; ++variant) {
    auto g = check_rewrite(
        [variant](Builder& b) {
          ir::Value* x = b.in("x", {1, 2, 4, 4});
          // 0: channels padded; 1: reflect mode; 2: nonzero fill
          std::vector<int64_t> pads = variant == 0 ? std::vector<int64_t>{0, 1, 0, 0, 0, 0, 0, 0}
                                                   : std::vector<int64_t>{0, 0, 1, 1, 0, 0, 1, 1};
          ir::Attributes a;
          if (variant == 1) a["mode"] = S("reflect");
          std::vector<ir::Value*> ins{x, b.ints(pads)};
          if (variant == 2) ins.push_back(b.scalar(1.0f));
          ir::Value* p = b.op("Pad", ins, a);
          b.out(b.op("Conv", {p, b.rand({2, variant == 0 ? 3 : 2, 1, 1})}));
        },
        passes_of(make_fold_pad()));
    EXPECT_EQ(count(*g, "Pad"), 1) << variant;
  }
}

}  // namespace kiln::passes::testing
