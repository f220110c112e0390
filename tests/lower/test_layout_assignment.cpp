// Layout assignment on small graphs: where the layout changes end up, and the same numbers as
// before (the channels-last ops' reference kernels compute through NCHW).
#include "lower/layout_assignment.h"

#include "../passes/pass_test_util.h"
#include "ir/verifier.h"

namespace kiln::passes::testing {
namespace {

// Builds the graph twice, assigns layouts in one, checks both give the same outputs; returns
// the rewritten graph.
std::unique_ptr<ir::Graph> assign(const std::function<void(Builder&)>& build, lower::LayoutStats* stats = nullptr) {
  Builder ref, opt;
  build(ref);
  build(opt);
  ops::ShapeInference().run(*ref.g);
  ops::ShapeInference().run(*opt.g);
  lower::LayoutStats st = lower::assign_channels_last(*opt.g);
  ops::ShapeInference().run(*opt.g);
  ir::verify(*opt.g);
  if (stats) *stats = st;
  for (size_t i = 0; i < ref.g->outputs().size(); ++i) {
    EXPECT_EQ(opt.g->outputs()[i]->name(), ref.g->outputs()[i]->name());
    EXPECT_EQ(opt.g->outputs()[i]->type.str(), ref.g->outputs()[i]->type.str());
  }
  std::vector<Tensor> ins = random_inputs(*ref.g);
  std::vector<Tensor> a = run(*ref.g, ins), b = run(*opt.g, ins);
  EXPECT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) expect_close(b[i], a[i], 1e-5);
  return std::move(opt.g);
}

ir::Attributes pad1() { return {{"pads", Is({1, 1, 1, 1})}}; }

TEST(LayoutAssignment, ResidualBlockKeepsNhwcInside) {
  lower::LayoutStats st;
  auto g = assign(
      [](Builder& b) {
        ir::Value* x = b.in("x", {1, 3, 8, 8});
        ir::Value* c0 = b.op("Relu", {b.op("Conv", {x, b.rand({4, 3, 3, 3}), b.rand({4})}, pad1())});
        ir::Value* c1 = b.op("Relu", {b.op("Conv", {c0, b.rand({4, 4, 3, 3})}, pad1())});
        ir::Value* c2 = b.op("Conv", {c1, b.rand({4, 4, 3, 3})}, pad1());
        ir::Value* p = b.op("MaxPool", {b.op("Relu", {b.op("Add", {c2, c0})})},
                            {{"kernel_shape", Is({2, 2})}, {"strides", Is({2, 2})}});
        b.out(p);
      },
      &st);
  EXPECT_EQ(st.channels_last_ops, 4);
  // One change after the input and one before the output; everything between stays NHWC.
  EXPECT_EQ(st.transposes, 2);
  EXPECT_EQ(count(*g, "Transpose"), 2);
  EXPECT_EQ(count(*g, "NhwcMaxPool"), 1);
  for (const ir::Node* n : g->nodes())
    if (n->op_type() == "FusedConv") { EXPECT_EQ(n->attr_int("channels_last", 0), 1); }
}

TEST(LayoutAssignment, ConcatAndSplitMoveTheirAxis) {
  auto g = assign([](Builder& b) {
    ir::Value* x = b.in("x", {1, 4, 6, 5});
    ir::Value* s = b.op("Conv", {x, b.rand({3, 4, 1, 1})});
    ir::Value* e1 = b.op("Conv", {s, b.rand({5, 3, 1, 1})});
    ir::Value* e3 = b.op("Conv", {s, b.rand({6, 3, 3, 3})}, pad1());
    ir::Value* cat = b.op("Concat", {e1, e3}, {{"axis", I(1)}});
    ir::Node* split = b.g->add_node("Split", {cat, b.ints({7, 4})}, {b.g->add_value("s0"), b.g->add_value("s1")},
                                    {{"axis", I(1)}}, "split");
    b.out(b.op("Conv", {split->output(0), b.rand({2, 7, 1, 1})}));
    b.out(b.op("Conv", {split->output(1), b.rand({2, 4, 1, 1})}));
  });
  EXPECT_EQ(count(*g, "Transpose"), 3);  // the input's, and one per output
  for (const ir::Node* n : g->nodes()) {
    if (n->op_type() == "Concat") { EXPECT_EQ(n->attr_int("axis", 0), 3); }
    if (n->op_type() == "Split") { EXPECT_EQ(n->attr_int("axis", 0), 3); }
  }
}

TEST(LayoutAssignment, ConstantsArePermutedAndGlobalPoolIsAView) {
  auto g = assign([](Builder& b) {
    ir::Value* x = b.in("x", {2, 4, 5, 5});
    ir::Value* c = b.op("Conv", {x, b.rand({6, 4, 3, 3})}, pad1());
    ir::Value* m = b.op("Add", {b.op("Mul", {c, b.rand({6, 1, 1})}), b.rand({6, 5, 1})});  // per-channel, per-row
    ir::Value* gap = b.op("GlobalAveragePool", {b.op("Sigmoid", {m})});
    b.out(b.op("Flatten", {gap}));
  });
  EXPECT_EQ(count(*g, "Transpose"), 1);  // only the input's: [2,6,1,1] is a reshape of [2,1,1,6]
  EXPECT_EQ(count(*g, "NhwcGlobalAveragePool"), 1);
}

// ReduceMean / ReduceMax over H and W (axes as an attribute, negative; and as an opset-18
// input) after a conv: the NHWC global pool and a view, with and without the kept dims; over
// another axis set the reduction stays NCHW.
TEST(LayoutAssignment, SpatialReduceIsAGlobalPool) {
  auto g = assign([](Builder& b) {
    ir::Value* x = b.in("x", {2, 4, 5, 6});
    ir::Value* c = b.op("Relu", {b.op("Conv", {x, b.rand({6, 4, 3, 3})}, pad1())});
    b.out(b.op("Gemm", {b.op("ReduceMean", {c}, {{"axes", Is({-2, -1})}, {"keepdims", I(0)}}), b.rand({3, 6})},
               {{"transB", I(1)}}));
    b.out(b.op("Sigmoid", {b.op("ReduceMax", {c}, {{"axes", Is({3, 2})}})}));
  });
  EXPECT_EQ(count(*g, "Transpose"), 1);  // the input's
  EXPECT_EQ(count(*g, "NhwcGlobalAveragePool"), 1);
  EXPECT_EQ(count(*g, "NhwcGlobalMaxPool"), 1);
  EXPECT_EQ(count(*g, "ReduceMean") + count(*g, "ReduceMax"), 0);
  auto g18 = assign([](Builder& b) {
    b.g->opsets[""] = 18;
    ir::Value* c = b.op("Conv", {b.in("x", {1, 4, 5, 5}), b.rand({6, 4, 1, 1})});
    b.out(b.op("Relu", {b.op("ReduceMean", {c, b.ints({2, 3})}, {{"keepdims", I(0)}})}));
  });
  EXPECT_EQ(count(*g18, "NhwcGlobalAveragePool"), 1);
  auto other = assign([](Builder& b) {
    ir::Value* c = b.op("Conv", {b.in("x", {1, 4, 5, 5}), b.rand({6, 4, 1, 1})});
    b.out(b.op("ReduceMean", {c}, {{"axes", Is({1, 2, 3})}}));
  });
  EXPECT_EQ(count(*other, "NhwcGlobalAveragePool"), 0);
  EXPECT_EQ(count(*other, "ReduceMean"), 1);
}

TEST(LayoutAssignment, LayoutSensitiveOpsGetNchw) {
  auto g = assign([](Builder& b) {
    ir::Value* x = b.in("x", {1, 4, 6, 6});
    ir::Value* c = b.op("Conv", {x, b.rand({4, 4, 1, 1})});
    // Softmax over axis 1 (channels) cares about the layout: it must see NCHW.
    b.out(b.op("Softmax", {c}, {{"axis", I(1)}}));
  });
  EXPECT_EQ(count(*g, "Transpose"), 2);
}

TEST(LayoutAssignment, ChannelShuffleAndSliceStayNhwc) {
  auto g = assign([](Builder& b) {
    ir::Value* x = b.in("x", {1, 4, 5, 6});
    ir::Value* c = b.op("Conv", {x, b.rand({6, 4, 1, 1})});
    ir::Value* r = b.op("Reshape", {c, b.ints({1, 2, 3, 5, 6})});
    ir::Value* t = b.op("Transpose", {r}, {{"perm", Is({0, 2, 1, 3, 4})}});
    ir::Value* s = b.op("Reshape", {t, b.ints({1, 6, 5, 6})});
    ir::Value* half = b.op("Slice", {s, b.ints({3}), b.ints({6}), b.ints({1})});
    b.out(b.op("Conv", {half, b.rand({2, 3, 1, 1})}));
  });
  // The input's and the output's layout changes, and the shuffle's own transpose (now of NHWC).
  EXPECT_EQ(count(*g, "Transpose"), 3);
  for (const ir::Node* n : g->nodes()) {
    if (n->op_type() == "Transpose" && n->input(0)->type.rank() == 5) {
      EXPECT_EQ(n->attr_ints("perm"), (std::vector<int64_t>{0, 1, 2, 4, 3}));
    }
  }
}

TEST(LayoutAssignment, BatchNormStaysNchw) {
  // Unfolded BatchNormalization (optimizer level 0) reads per-channel vectors along axis 1.
  auto g = assign([](Builder& b) {
    ir::Value* x = b.in("x", {1, 3, 5, 5});
    ir::Value* c = b.op("Conv", {x, b.rand({4, 3, 3, 3})}, pad1());
    b.out(b.op("BatchNormalization", {c, b.rand({4}, 0.5f, 1.5f), b.rand({4}), b.rand({4}), b.rand({4}, 0.5f, 1.5f)}));
  });
  EXPECT_EQ(count(*g, "BatchNormalization"), 1);
}

TEST(LayoutAssignment, DepthToSpaceAndConvTransposeAfterAConvStayChannelsLast) {
  // conv -> DepthToSpace -> ConvTranspose -> Relu: one layout change in, one out.
  lower::LayoutStats st;
  auto g = assign(
      [](Builder& b) {
        ir::Value* x = b.in("x", {1, 3, 5, 6});
        ir::Value* c = b.op("Conv", {x, b.rand({8, 3, 3, 3})}, pad1());
        ir::Value* d = b.op("DepthToSpace", {c}, {{"blocksize", I(2)}, {"mode", S("CRD")}});
        ir::Value* t = b.op("ConvTranspose", {d, b.rand({2, 3, 2, 2})}, {{"strides", Is({2, 2})}});
        b.out(b.op("Relu", {t}));
      },
      &st);
  EXPECT_EQ(count(*g, "NhwcDepthToSpace"), 1);
  EXPECT_EQ(count(*g, "NhwcConvTranspose"), 1);
  EXPECT_EQ(st.transposes, 2);
}

TEST(LayoutAssignment, DepthToSpaceOnTheModelInputStaysAsItIs) {
  auto g = assign([](Builder& b) {
    ir::Value* x = b.in("x", {1, 8, 5, 6});
    ir::Value* d = b.op("DepthToSpace", {x}, {{"blocksize", I(2)}});
    b.out(b.op("Conv", {d, b.rand({4, 2, 3, 3})}, pad1()));
  });
  EXPECT_EQ(count(*g, "DepthToSpace"), 1);
  EXPECT_EQ(count(*g, "NhwcDepthToSpace"), 0);
}

TEST(LayoutAssignment, PadAndAFlattenedHeadFollowTheLayout) {
  // conv -> Pad -> conv -> Reshape [N,C,HW] -> Transpose [0,2,1]: only the input's change left.
  lower::LayoutStats st;
  auto g = assign(
      [](Builder& b) {
        ir::Value* x = b.in("x", {1, 3, 6, 5});
        ir::Value* c = b.op("Conv", {x, b.rand({4, 3, 3, 3})}, pad1());
        ir::Value* p = b.op("Pad", {c, b.ints({0, 0, 1, 0, 0, 0, 0, 1})});
        ir::Value* d = b.op("Conv", {p, b.rand({6, 4, 3, 3})});
        ir::Value* r = b.op("Reshape", {d, b.ints({1, 6, -1})});
        b.out(b.op("Transpose", {r}, {{"perm", Is({0, 2, 1})}}));
      },
      &st);
  EXPECT_EQ(st.transposes, 1);
}

// A Resize between convs follows the layout, its sizes, scales and roi moved with the axes: a
// segmentation head's pooled branch (global pool -> conv -> upsampled to the feature map ->
// Concat with the other branches -> conv) and an upsampling between two convs keep no layout
// change. The model's last upsampling stays NCHW: its output is the model's, and a layout
// change before it moves fewer bytes than one after it.
TEST(LayoutAssignment, ResizeBetweenConvsFollowsTheLayout) {
  auto g = assign([](Builder& b) {
    ir::Value* x = b.in("x", {1, 3, 6, 5});
    ir::Value* f = b.op("Relu", {b.op("Conv", {x, b.rand({4, 3, 3, 3})}, pad1())});
    ir::Value* pooled = b.op("Conv", {b.op("GlobalAveragePool", {f}), b.rand({4, 4, 1, 1})});
    ir::Value* spread = b.op("Resize", {pooled, nullptr, nullptr, b.ints({1, 4, 6, 5})}, {{"mode", S("linear")}});
    ir::Value* joined = b.op("Concat", {f, spread}, {{"axis", I(1)}});
    ir::Value* head = b.op("Conv", {joined, b.rand({2, 8, 1, 1})});
    // Upsampled by scales (nearest), then another conv.
    ir::Value* up = b.op("Resize", {head, nullptr, b.c(Tensor::from_vector<float>({4}, {1.f, 1.f, 2.f, 3.f}))});
    ir::Value* again = b.op("Conv", {up, b.rand({3, 2, 3, 3})}, pad1());
    // The model's output, upsampled by sizes with a roi (crop-and-resize) from a conv.
    ir::Value* roi = b.c(Tensor::from_vector<float>({8}, {0.f, 0.f, 0.1f, 0.2f, 1.f, 1.f, 0.9f, 0.7f}));
    b.out(b.op("Resize", {again, roi, nullptr, b.ints({1, 3, 20, 25})},
               {{"mode", S("linear")}, {"coordinate_transformation_mode", S("tf_crop_and_resize")}}));
  });
  EXPECT_EQ(count(*g, "Transpose"), 2);  // the input's, and the one before the last Resize
  int nhwc_resizes = 0;
  for (const ir::Node* n : g->nodes()) {
    if (n->op_type() == "Concat") { EXPECT_EQ(n->attr_int("axis", 0), 3); }
    if (n->op_type() == "Resize" && n->input(0)->producer() && n->input(0)->producer()->op_type() != "Transpose")
      ++nhwc_resizes;
  }
  EXPECT_EQ(nhwc_resizes, 2);
  // Opset 18's axes: the listed axes move instead of the sizes.
  auto g18 = assign([](Builder& b) {
    b.g->opsets[""] = 18;
    ir::Value* c = b.op("Conv", {b.in("x", {1, 4, 5, 5}), b.rand({6, 4, 1, 1})});
    ir::Value* up = b.op("Resize", {c, nullptr, nullptr, b.ints({10, 15})}, {{"axes", Is({2, 3})}});
    b.out(b.op("Conv", {up, b.rand({2, 6, 1, 1})}));
  });
  EXPECT_EQ(count(*g18, "Transpose"), 2);  // the input's and the output's
  for (const ir::Node* n : g18->nodes())
    if (n->op_type() == "Resize") { EXPECT_EQ(n->attr_ints("axes"), (std::vector<int64_t>{1, 2})); }
}

// A style-transfer block: reflection pad -> conv -> InstanceNorm -> Relu -> pad -> conv ->
// GroupNorm (opset 21, per-channel scale) plus the residual -> conv: the norms follow the
// layout, so only the input's and the output's layout changes remain.
TEST(LayoutAssignment, NormalizationsFollowTheLayout) {
  auto g = assign([](Builder& b) {
    b.g->opsets[""] = 21;
    ir::Value* x = b.in("x", {1, 3, 9, 8});
    auto reflect = [&](ir::Value* v) {
      return b.op("Pad", {v, b.ints({0, 0, 1, 1, 0, 0, 1, 1})}, {{"mode", S("reflect")}});
    };
    ir::Value* c1 = b.op("Conv", {reflect(x), b.rand({8, 3, 3, 3})});
    ir::Value* n1 = b.op("Relu", {b.op("InstanceNormalization", {c1, b.rand({8}), b.rand({8})})});
    ir::Value* c2 = b.op("Conv", {reflect(n1), b.rand({8, 8, 3, 3})});
    ir::Value* n2 = b.op("GroupNormalization", {c2, b.rand({8}), b.rand({8})}, {{"num_groups", I(2)}});
    b.out(b.op("Conv", {b.op("Add", {n2, n1}), b.rand({3, 8, 1, 1})}));
  });
  EXPECT_EQ(count(*g, "Transpose"), 2);
  EXPECT_EQ(count(*g, "NhwcInstanceNormalization"), 1);
  EXPECT_EQ(count(*g, "NhwcGroupNormalization"), 1);
}

// A segmentation head's class map: ArgMax over the channels after a conv reads the NHWC data
// (as a graph output without the kept dim, and with it before another op), ArgMin likewise;
// no layout change is left but the input's.
TEST(LayoutAssignment, ChannelArgMaxFollowsTheLayout) {
  auto g = assign([](Builder& b) {
    ir::Value* x = b.in("x", {2, 3, 7, 6});
    ir::Value* logits = b.op("Conv", {x, b.rand({5, 3, 3, 3}), b.rand({5})}, pad1());
    b.out(b.op("ArgMax", {logits}, {{"axis", I(1)}, {"keepdims", I(0)}}));
    ir::Value* kept = b.op("ArgMin", {logits}, {{"axis", I(-3)}, {"select_last_index", I(1)}});
    b.out(b.op("Cast", {kept}, {{"to", I(1)}}));
  });
  EXPECT_EQ(count(*g, "Transpose"), 1);
  for (const ir::Node* n : g->nodes())
    if (n->op_type() == "ArgMax" || n->op_type() == "ArgMin") { EXPECT_EQ(n->attr_int("axis", 0), 3) << n->op_type(); }
}

TEST(LayoutAssignment, NothingToDoWithoutConvs) {
  lower::LayoutStats st;
  assign([](Builder& b) { b.out(b.op("Relu", {b.in("x", {1, 4, 6, 6})})); }, &st);
  EXPECT_EQ(st.channels_last_ops, 0);
  EXPECT_EQ(st.transposes, 0);
}

}  // namespace
}  // namespace kiln::passes::testing
