// Conv chains: which runs of channels-last FusedConvs become kiln.ConvChain, and the same
// numbers as before (the reference kernel runs the body node by node).
#include "lower/fuse_conv_chain.h"

#include "../passes/pass_test_util.h"

namespace kiln::passes::testing {
namespace {

ir::Attributes conv(int64_t k, int64_t stride = 1, int64_t group = 1, const char* act = "Clip") {
  const int64_t p = k / 2;
  ir::Attributes a{{"pads", Is({p, p, p, p})},
                   {"strides", Is({stride, stride})},
                   {"channels_last", ir::Attribute::of_int(1)}};
  if (group > 1) a["group"] = I(group);
  if (*act) a["activation"] = ir::Attribute::of_string(act);
  if (std::string(act) == "Clip") a["activation_params"] = ir::Attribute::of_floats({0.f, 6.f});
  return a;
}

void fuse_and_compare(const std::function<void(Builder&)>& build, int expect_chains, int64_t min_bytes = 0,
                      int64_t light_min_bytes = 0, int threads = 1, bool channels = false) {
  auto g = check_lowering(
      build,
      [&](ir::Graph& graph) {
        return lower::fuse_conv_chains(graph, min_bytes, light_min_bytes, true, threads, true, channels);
      },
      expect_chains);
  EXPECT_EQ(count(*g, "ConvChain"), expect_chains);
}

// mobilenet_v2's inverted residual: expand 1x1 -> depthwise 3x3 -> project 1x1 + the block's
// input, then a stride-2 block: one chain each.
TEST(FuseConvChain, InvertedResiduals) {
  fuse_and_compare(
      [](Builder& b) {
        ir::Value* x = b.in("x", {1, 9, 7, 6});
        ir::Value* e = b.op("FusedConv", {x, b.rand({18, 6, 1, 1}), b.rand({18})}, conv(1), "kiln");
        ir::Value* d = b.op("FusedConv", {e, b.rand({18, 1, 3, 3}), b.rand({18})}, conv(3, 1, 18), "kiln");
        ir::Value* p = b.op("FusedConv", {d, b.rand({6, 18, 1, 1}), b.rand({6}), x}, conv(1, 1, 1, ""), "kiln");
        ir::Value* e2 = b.op("FusedConv", {p, b.rand({12, 6, 1, 1}), b.rand({12})}, conv(1, 1, 1, "SiLU"), "kiln");
        ir::Value* d2 = b.op("FusedConv", {e2, b.rand({12, 1, 3, 3})}, conv(3, 2, 12, "SiLU"), "kiln");
        b.out(b.op("FusedConv", {d2, b.rand({5, 12, 1, 1}), b.rand({5})}, conv(1, 1, 1, ""), "kiln"));
      },
      1);  // p feeds e2 only (its residual use is inside): all six convs chain
}

// With two threads, a chain whose last output has 7 rows (shares of 4 and 3) is left to
// separate convs; 9 rows on three threads split evenly and chain.
TEST(FuseConvChain, UnevenRowSplitsStaySeparate) {
  auto block = [](int64_t rows) {
    return [rows](Builder& b) {
      ir::Value* x = b.in("x", {1, rows, 5, 6});
      ir::Value* e = b.op("FusedConv", {x, b.rand({18, 6, 1, 1})}, conv(1), "kiln");
      ir::Value* d = b.op("FusedConv", {e, b.rand({18, 1, 3, 3})}, conv(3, 1, 18), "kiln");
      b.out(b.op("FusedConv", {d, b.rand({6, 18, 1, 1})}, conv(1, 1, 1, ""), "kiln"));
    };
  };
  fuse_and_compare(block(7), 1, 0, 0, 1);
  fuse_and_compare(block(7), 0, 0, 0, 2);
  fuse_and_compare(block(8), 1, 0, 0, 2);
  fuse_and_compare(block(9), 1, 0, 0, 3);
}

// A wide block (64 -> 384 -> 64) on 7 rows: its rows split 4 and 3, its middle channels evenly,
// so with two threads (and a backend that splits channels) it is a chain marked to split its
// channels, even where its links are under the chain thresholds (7x7x384: 75 KiB); at one thread
// those links leave it separate convs.
TEST(FuseConvChain, WideBlocksOnFewRowsSplitTheirChannels) {
  auto block = [](Builder& b) {
    ir::Value* x = b.in("x", {1, 7, 7, 64});
    ir::Value* e = b.op("FusedConv", {x, b.rand({384, 64, 1, 1}), b.rand({384})}, conv(1), "kiln");
    ir::Value* d = b.op("FusedConv", {e, b.rand({384, 1, 3, 3}), b.rand({384})}, conv(3, 1, 384), "kiln");
    b.out(b.op("FusedConv", {d, b.rand({64, 384, 1, 1}), b.rand({64}), x}, conv(1, 1, 1, ""), "kiln"));
  };
  for (int threads : {1, 2}) {
    Builder b;
    b.g->opsets["kiln"] = 1;
    block(b);
    ops::ShapeInference().run(*b.g);
    EXPECT_EQ(lower::fuse_conv_chains(*b.g, lower::kConvChainMinBytes, lower::kConvChainLightMinBytes, true, threads,
                                      true, /*channels=*/true),
              threads == 2 ? 1 : 0);
    for (const ir::Node* n : b.g->nodes()) {
      if (n->op_type() == "ConvChain") {
        EXPECT_EQ(n->attr_int("split_channels", 0), 1);
      }
    }
  }
  fuse_and_compare(block, 1, 0, 0, 2, true);  // the same numbers
  fuse_and_compare(block, 1, 0, 0, 1, true);
  fuse_and_compare(block, 0, 0, 0, 2, false);  // a backend without the channel split: rows split 4 and 3
}

// efficientnet's block: expand -> depthwise, whose output a global average pool -> fc1 -> fc2
// turns into the project's channel scale. With a team and a backend that splits channels the six
// nodes are one chain marked `split_channels`.
TEST(FuseConvChain, SqueezeExcitationBlocksWithAChannelSplit) {
  auto block = [](Builder& b) {
    ir::Value* x = b.in("x", {1, 7, 7, 64});
    ir::Value* e = b.op("FusedConv", {x, b.rand({384, 64, 1, 1}), b.rand({384})}, conv(1, 1, 1, "SiLU"), "kiln");
    ir::Value* d = b.op("FusedConv", {e, b.rand({384, 1, 5, 5}), b.rand({384})}, conv(5, 1, 384, "SiLU"), "kiln");
    ir::Value* p = b.op("NhwcGlobalAveragePool", {d}, {}, "kiln");
    ir::Value* h = b.op("FusedConv", {p, b.rand({16, 384, 1, 1}), b.rand({16})}, conv(1, 1, 1, "SiLU"), "kiln");
    ir::Value* s = b.op("FusedConv", {h, b.rand({384, 16, 1, 1}), b.rand({384})}, conv(1, 1, 1, "Sigmoid"), "kiln");
    b.out(b.op("FusedConv", {d, b.rand({64, 384, 1, 1}), b.rand({64}), x, s}, conv(1, 1, 1, ""), "kiln"));
  };
  auto g = check_lowering(
      block, [](ir::Graph& graph) { return lower::fuse_conv_chains(graph, 0, 0, true, 2, true, true); }, 1);
  EXPECT_EQ(count(*g, "ConvChain"), 1);
  EXPECT_EQ(count(*g, "FusedConv"), 0);
  // One thread: [expand, depthwise] + pool and [fc1, fc2] (every link chains at threshold 0), the
  // project separate, nothing marked.
  auto separate = check_lowering(
      block, [](ir::Graph& graph) { return lower::fuse_conv_chains(graph, 0, 0, true, 1, true, true); }, 2);
  EXPECT_EQ(count(*separate, "FusedConv"), 1);
  for (const ir::Node* n : separate->nodes()) EXPECT_EQ(n->attr_int("split_channels", 0), 0);
}

// The rows around a share's edges are computed by both threads: inception's 1x1 -> 7x1 -> 1x7
// -> 7x1 -> 1x7 branch on 17 rows would have each of two threads compute 14-15 of the first
// layers' rows (an even share's work over the largest: 0.79), so only its last 7x1 -> 1x7 pair
// chains there (0.94: 9 rows and 8); on 64 rows the whole branch chains.
TEST(FuseConvChain, OverlappingSharesStaySeparate) {
  auto branch = [](int64_t rows) {
    return [rows](Builder& b) {
      auto k = [](int64_t kh, int64_t kw) {
        ir::Attributes a{{"pads", Is({kh / 2, kw / 2, kh / 2, kw / 2})}, {"channels_last", ir::Attribute::of_int(1)}};
        a["activation"] = ir::Attribute::of_string("Relu");
        return a;
      };
      ir::Value* v = b.in("x", {1, rows, 9, 8});
      v = b.op("FusedConv", {v, b.rand({6, 8, 1, 1})}, k(1, 1), "kiln");
      for (int i = 0; i < 2; ++i) {
        v = b.op("FusedConv", {v, b.rand({6, 6, 7, 1})}, k(7, 1), "kiln");
        v = b.op("FusedConv", {v, b.rand({6, 6, 1, 7})}, k(1, 7), "kiln");
      }
      b.out(v);
    };
  };
  fuse_and_compare(branch(17), 1, 0, 0, 1);
  fuse_and_compare(branch(64), 1, 0, 0, 2);
  Builder b;
  b.g->opsets["kiln"] = 1;
  branch(17)(b);
  ops::ShapeInference().run(*b.g);
  EXPECT_EQ(lower::fuse_conv_chains(*b.g, 0, 0, true, 2), 1);
  EXPECT_EQ(count(*b.g, "FusedConv"), 3);
}

// A single 5x5 depthwise conv and its pool form a chain from the light threshold (efficientnet's
// squeeze-excitation input, 14x14x672: 527 KiB); a single dense 3x3 conv needs the full one.
TEST(FuseConvChain, PooledDepthwiseFromTheLightThreshold) {
  auto block = [](bool depthwise) {
    return [depthwise](Builder& b) {
      ir::Value* x = b.in("x", {1, 14, 14, 24});
      ir::Value* d = depthwise ? b.op("FusedConv", {x, b.rand({24, 1, 5, 5})}, conv(5, 1, 24, "SiLU"), "kiln")
                               : b.op("FusedConv", {x, b.rand({24, 24, 3, 3})}, conv(3, 2, 1, "SiLU"), "kiln");
      b.out(b.op("Mul", {d, b.op("NhwcGlobalAveragePool", {d}, {}, "kiln")}));
    };
  };
  fuse_and_compare(block(true), 1, 1 << 20, 8192);
  fuse_and_compare(block(true), 0, 1 << 20, 1 << 20);
  fuse_and_compare(block(false), 0, 1 << 20, 1024);
}

// A global average pool of the chain's output joins it as a second output (efficientnet's
// squeeze-excitation reads the depthwise output twice: the pool and the scale); so does one of
// a single conv, which is then a chain of one.
TEST(FuseConvChain, GlobalPoolJoins) {
  fuse_and_compare(
      [](Builder& b) {
        ir::Value* x = b.in("x", {1, 9, 7, 6});
        ir::Value* e = b.op("FusedConv", {x, b.rand({18, 6, 1, 1})}, conv(1, 1, 1, "SiLU"), "kiln");
        ir::Value* d = b.op("FusedConv", {e, b.rand({18, 1, 3, 3})}, conv(3, 2, 18, "SiLU"), "kiln");
        ir::Value* p = b.op("NhwcGlobalAveragePool", {d}, {}, "kiln");
        b.out(b.op("Mul", {d, p}));
        ir::Value* single = b.op("FusedConv", {x, b.rand({6, 1, 3, 3})}, conv(3, 1, 6), "kiln");
        b.out(b.op("Mul", {single, b.op("NhwcGlobalAveragePool", {single}, {}, "kiln")}));
      },
      2);
}

TEST(FuseConvChain, StopsWhereAValueIsReadTwiceOrSmall) {
  // The expand output is also a graph output; the depthwise output feeds two convs; a 3x3
  // stride-1 dense conv (Winograd) is not a member; a link below the size threshold is not
  // formed.
  fuse_and_compare(
      [](Builder& b) {
        ir::Value* x = b.in("x", {1, 9, 7, 6});
        ir::Value* e = b.op("FusedConv", {x, b.rand({18, 6, 1, 1})}, conv(1), "kiln");
        b.out(e);
        ir::Value* d = b.op("FusedConv", {e, b.rand({18, 1, 3, 3})}, conv(3, 1, 18), "kiln");
        b.out(b.op("FusedConv", {d, b.rand({4, 18, 1, 1})}, conv(1), "kiln"));
        b.out(b.op("FusedConv", {d, b.rand({5, 18, 1, 1})}, conv(1), "kiln"));
        ir::Value* w = b.op("FusedConv", {x, b.rand({8, 6, 3, 3})}, conv(3), "kiln");
        b.out(b.op("FusedConv", {w, b.rand({4, 8, 1, 1})}, conv(1), "kiln"));
      },
      0);
  fuse_and_compare(
      [](Builder& b) {
        ir::Value* x = b.in("x", {1, 9, 7, 6});
        ir::Value* e = b.op("FusedConv", {x, b.rand({18, 6, 1, 1})}, conv(1), "kiln");
        b.out(b.op("FusedConv", {e, b.rand({18, 1, 3, 3})}, conv(3, 1, 18), "kiln"));
      },
      0, 9 * 7 * 18 * 4 + 1, 9 * 7 * 18 * 4 + 1);
}

// A max or average pool joins after a conv (squeezenet's and resnet18's stem -> max pool), in
// the middle of a chain or at its end; a pool never starts one.
TEST(FuseConvChain, PoolsJoinAfterAConv) {
  auto pool_attrs = [](int64_t k, int64_t stride, int64_t pad) {
    return ir::Attributes{{"kernel_shape", Is({k, k})}, {"strides", Is({stride, stride})}, {"pads", Is({pad, pad, pad, pad})}};
  };
  fuse_and_compare(
      [&](Builder& b) {
        ir::Value* x = b.in("x", {1, 19, 17, 3});
        ir::Value* s = b.op("FusedConv", {x, b.rand({8, 3, 3, 3}), b.rand({8})}, conv(3, 2, 1, "Relu"), "kiln");
        ir::Value* m = b.op("NhwcMaxPool", {s}, pool_attrs(3, 2, 1), "kiln");
        ir::Value* q = b.op("FusedConv", {m, b.rand({4, 8, 1, 1})}, conv(1, 1, 1, "Relu"), "kiln");
        b.out(b.op("NhwcAveragePool", {q}, pool_attrs(2, 1, 0), "kiln"));
        // A pool of the input, then a conv: no chain starts at the pool.
        ir::Value* p = b.op("NhwcMaxPool", {x}, pool_attrs(3, 1, 1), "kiln");
        b.out(b.op("FusedConv", {p, b.rand({4, 3, 1, 1})}, conv(1), "kiln"));
      },
      1);
}

// With a lower threshold between light layers (1x1 convs, depthwise convs and pools of at most
// 3x3 taps, stems), small links between them form; a 5x5 depthwise link, and a link into or out
// of a dense conv of more taps or channels (a 1x7, a 3x3 stride-2 reduction: compute-bound), still
// need the full size.
TEST(FuseConvChain, LightLinksBetweenLightLayers) {
  auto build = [](int64_t k) {
    return [k](Builder& b) {
      ir::Value* x = b.in("x", {1, 9, 7, 6});
      ir::Value* e = b.op("FusedConv", {x, b.rand({18, 6, 1, 1})}, conv(1), "kiln");
      b.out(b.op("FusedConv", {e, b.rand({18, 1, k, k})}, conv(k, 1, 18), "kiln"));
    };
  };
  const int64_t bytes = 9 * 7 * 18 * 4;
  fuse_and_compare(build(3), 1, bytes + 1, bytes);
  fuse_and_compare(build(5), 0, bytes + 1, bytes);
  fuse_and_compare(build(3), 0, bytes + 1, bytes + 1);
  auto dense = [](bool seven_taps) {
    return [seven_taps](Builder& b) {
      ir::Value* x = b.in("x", {1, 9, 7, 6});
      ir::Value* e = b.op("FusedConv", {x, b.rand({18, 6, 1, 1})}, conv(1), "kiln");
      ir::Attributes a{{"pads", Is({0, 3, 0, 3})}, {"channels_last", ir::Attribute::of_int(1)}};
      if (seven_taps) b.out(b.op("FusedConv", {e, b.rand({18, 18, 1, 7})}, a, "kiln"));
      else b.out(b.op("FusedConv", {e, b.rand({24, 18, 3, 3})}, conv(3, 2), "kiln"));
    };
  };
  for (bool seven_taps : {true, false}) {
    fuse_and_compare(dense(seven_taps), 0, bytes + 1, bytes);
    fuse_and_compare(dense(seven_taps), 1, bytes, bytes);
  }
}

// The layout's Transpose of the NCHW input joins a chain in front when only a stem (few input
// channels, at most 3x3) reads it; not when another node reads it too, nor before a conv on 16
// channels or a 5x5 stem.
TEST(FuseConvChain, InputTransposeJoinsBeforeAStem) {
  auto build = [](int64_t c, bool second_reader, int64_t k = 3) {
    return [c, second_reader, k](Builder& b) {
      ir::Value* x = b.in("x", {1, c, 12, 10});
      ir::Value* t = b.op("Transpose", {x}, {{"perm", Is({0, 2, 3, 1})}});
      ir::Value* s = b.op("FusedConv", {t, b.rand({16, c, k, k}), b.rand({16})}, conv(k, 2), "kiln");
      ir::Value* d = b.op("FusedConv", {s, b.rand({16, 1, 3, 3})}, conv(3, 1, 16), "kiln");
      b.out(b.op("FusedConv", {d, b.rand({8, 16, 1, 1})}, conv(1, 1, 1, ""), "kiln"));
      if (second_reader) b.out(t);
    };
  };
  auto transposes_left = [](const std::function<void(Builder&)>& f) {
    auto g = check_lowering(
        f, [](ir::Graph& graph) { return lower::fuse_conv_chains(graph, 0, 0, true, 1); }, 1);
    return count(*g, "Transpose");
  };
  EXPECT_EQ(transposes_left(build(3, false)), 0);
  EXPECT_EQ(transposes_left(build(3, true)), 1);
  EXPECT_EQ(transposes_left(build(16, false)), 1);
  EXPECT_EQ(transposes_left(build(3, false, 5)), 1);
}

}  // namespace
}  // namespace kiln::passes::testing
