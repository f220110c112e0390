// The TensorFlow frontend's op mappings, each run end to end (GraphDef -> kiln Session) against
// hand-computed values.
#include <gtest/gtest.h>
#include <kiln/error.h>

#include "tf_graph_builder.h"

namespace kiln::testing {

namespace {

// x = arange(24).reshape(2,3,4) through one StridedSlice.
std::vector<float> strided(const std::vector<int32_t>& b, const std::vector<int32_t>& e, const std::vector<int32_t>& s,
                           int bm, int em, int elm, int nam, int sam, std::vector<int64_t>* dims) {
  TfGraph t;
  t.placeholder("x", tfpb::DT_FLOAT, {2, 3, 4});
  const int64_t n = static_cast<int64_t>(b.size());
  t.ints("b", {n}, b);
  t.ints("e", {n}, e);
  t.ints("s", {n}, s);
  auto* ss = t.node("StridedSlice", "y", {"x", "b", "e", "s"});
  TfGraph::set_int(ss, "begin_mask", bm);
  TfGraph::set_int(ss, "end_mask", em);
  TfGraph::set_int(ss, "ellipsis_mask", elm);
  TfGraph::set_int(ss, "new_axis_mask", nam);
  TfGraph::set_int(ss, "shrink_axis_mask", sam);
  auto s_ = t.session("strided");
  auto out = s_->run({ramp({2, 3, 4})});
  *dims = out[0].dims();
  return values(out[0]);
}

}  // namespace

TEST(TfOps, StridedSliceShrinkAndStep) {  // x[1, :, ::2]
  std::vector<int64_t> dims;
  auto v = strided({1, 0, 0}, {2, 0, 0}, {1, 1, 2}, 0b110, 0b110, 0, 0, 0b001, &dims);
  EXPECT_EQ(dims, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(v, (std::vector<float>{12, 14, 16, 18, 20, 22}));
}

TEST(TfOps, StridedSliceEllipsisShrinkLast) {  // x[..., -1]
  std::vector<int64_t> dims;
  auto v = strided({0, -1}, {0, 0}, {1, 1}, 0, 0, 0b01, 0, 0b10, &dims);
  EXPECT_EQ(dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(v, (std::vector<float>{3, 7, 11, 15, 19, 23}));
}

TEST(TfOps, StridedSliceNewAxisAndReverse) {  // x[:, tf.newaxis, 1:3, ::-1]
  std::vector<int64_t> dims;
  auto v = strided({0, 0, 1, 0}, {0, 0, 3, 0}, {1, 1, 1, -1}, 0b1001, 0b1001, 0, 0b0010, 0, &dims);
  EXPECT_EQ(dims, (std::vector<int64_t>{2, 1, 2, 4}));
  EXPECT_EQ(v, (std::vector<float>{7, 6, 5, 4, 11, 10, 9, 8, 19, 18, 17, 16, 23, 22, 21, 20}));
}

TEST(TfOps, Conv2DSamePaddingStride2PadsAtTheEnd) {
  // 4x4 ramp, 3x3 ones, stride 2, SAME: one padding row/column, after (bottom/right).
  TfGraph t;
  t.placeholder("x", tfpb::DT_FLOAT, {1, 4, 4, 1});
  t.floats("w", {3, 3, 1, 1}, std::vector<float>(9, 1.0f));
  auto* c = t.node("Conv2D", "y", {"x", "w"});
  TfGraph::set_ints(c, "strides", {1, 2, 2, 1});
  TfGraph::set_str(c, "padding", "SAME");
  TfGraph::set_str(c, "data_format", "NHWC");
  auto s = t.session("conv_same");
  auto out = s->run({ramp({1, 4, 4, 1})});
  EXPECT_EQ(out[0].dims(), (std::vector<int64_t>{1, 2, 2, 1}));
  EXPECT_EQ(values(out[0]), (std::vector<float>{45, 39, 66, 50}));
}

TEST(TfOps, FusedConvBiasRelu6AndDepthwise) {
  // Depthwise 1x1 with multiplier 2 on 2 channels: out channel c*2+m = x[c] * w[c][m].
  TfGraph t;
  t.placeholder("x", tfpb::DT_FLOAT, {1, 1, 2, 2});
  t.floats("w", {1, 1, 2, 2}, {1, 2, 3, 4});
  t.floats("b", {4}, {0, 0, 0, -10});
  auto* c = t.node("FusedDepthwiseConv2dNative", "y", {"x", "w", "b"});
  TfGraph::set_ints(c, "strides", {1, 1, 1, 1});
  TfGraph::set_str(c, "padding", "VALID");
  TfGraph::set_strs(c, "fused_ops", {"BiasAdd", "Relu6"});
  TfGraph::set_int(c, "num_args", 1);
  auto s = t.session("depthwise");
  Tensor x = Tensor::from_vector<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  auto out = s->run({x});
  // pixel 0: x = (1, 2): (1*1, 1*2, 2*3, 2*4 - 10) -> relu6 (1, 2, 6, 0)
  // pixel 1: x = (3, 4): (3, 6, 12, 16 - 10) -> (3, 6, 6, 6)
  EXPECT_EQ(values(out[0]), (std::vector<float>{1, 2, 6, 0, 3, 6, 6, 6}));
}

TEST(TfOps, ResizeBilinearModes) {
  struct Mode {
    bool align, half;
    std::vector<float> expect;
  };
  for (const Mode& m : {Mode{false, false, {1, 1.5f, 2, 2}}, Mode{false, true, {1, 1.25f, 1.75f, 2}},
                        Mode{true, false, {1, 4.0f / 3, 5.0f / 3, 2}}}) {
    TfGraph t;
    t.placeholder("x", tfpb::DT_FLOAT, {1, 1, 2, 1});
    t.ints("size", {2}, {1, 4});
    auto* r = t.node("ResizeBilinear", "y", {"x", "size"});
    TfGraph::set_bool(r, "align_corners", m.align);
    TfGraph::set_bool(r, "half_pixel_centers", m.half);
    auto s = t.session("resize");
    auto out = s->run({Tensor::from_vector<float>({1, 1, 2, 1}, {1, 2})});
    ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{1, 1, 4, 1}));
    auto v = values(out[0]);
    for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(v[i], m.expect[i], 1e-6) << "align " << m.align << " half " << m.half;
  }
}

TEST(TfOps, ResizeNearestHalfPixel) {
  // 3 -> 2 pixels: TF takes floor((x + 0.5) * 1.5) = 0, 2.
  TfGraph t;
  t.placeholder("x", tfpb::DT_FLOAT, {1, 1, 3, 1});
  t.ints("size", {2}, {1, 2});
  auto* r = t.node("ResizeNearestNeighbor", "y", {"x", "size"});
  TfGraph::set_bool(r, "half_pixel_centers", true);
  auto s = t.session("nearest");
  auto out = s->run({Tensor::from_vector<float>({1, 1, 3, 1}, {10, 20, 30})});
  EXPECT_EQ(values(out[0]), (std::vector<float>{10, 30}));
}

TEST(TfOps, FloorDivAndFloorModOnIntegers) {
  TfGraph t;
  t.placeholder("x", tfpb::DT_INT32, {4});
  t.ints("y", {4}, {2, 2, -2, -2});
  t.node("FloorDiv", "q", {"x", "y"});
  t.node("FloorMod", "r", {"x", "y"});
  auto s = t.session("floordiv");
  auto out = s->run({Tensor::from_vector<int32_t>({4}, {-7, 7, -7, 7})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(s->outputs()[0].name, "q:0");
  EXPECT_EQ(values(out[0]), (std::vector<float>{-4, 3, 3, -4}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{1, 1, -1, -1}));
}

TEST(TfOps, ShapeArithmeticPackReshape) {
  // Shape -> StridedSlice(shrink) -> Pack -> Reshape, as facedetect's graph does.
  TfGraph t;
  t.placeholder("x", tfpb::DT_FLOAT, {-1, 2, 3});
  t.node("Shape", "shape", {"x"});
  t.ints("b", {1}, {0});
  t.ints("e", {1}, {1});
  t.ints("s", {1}, {1});
  auto* ss = t.node("StridedSlice", "batch", {"shape", "b", "e", "s"});
  TfGraph::set_int(ss, "shrink_axis_mask", 1);
  t.ints("minus1", {}, {-1});
  auto* pack = t.node("Pack", "newshape", {"batch", "minus1"});
  TfGraph::set_int(pack, "N", 2);
  t.node("Reshape", "y", {"x", "newshape"});
  auto s = t.session("pack");
  auto out = s->run({ramp({2, 2, 3})});
  EXPECT_EQ(out[0].dims(), (std::vector<int64_t>{2, 6}));
}

TEST(TfOps, ConstFormsRepeatTheLastValue) {
  // float_val with fewer values than elements fills with the last one; half_val holds bits.
  TfGraph t;
  t.placeholder("x", tfpb::DT_FLOAT, {3});
  t.floats("c", {3}, {2.0f});
  auto* h = t.constant("h", tfpb::DT_HALF, {3});
  for (int bits : {0x3c00, 0x4000, 0xc200}) h->add_half_val(bits);  // 1, 2, -3
  auto* cast = t.node("Cast", "hf", {"h"});
  TfGraph::set_type(cast, "DstT", tfpb::DT_FLOAT);
  t.node("Mul", "m", {"x", "c"});
  t.node("AddV2", "y", {"m", "hf"});
  auto s = t.session("consts");
  auto out = s->run({Tensor::from_vector<float>({3}, {1, 2, 3})});
  EXPECT_EQ(values(out[0]), (std::vector<float>{3, 6, 3}));
}

TEST(TfOps, TopKSortedWithInt32Indices) {
  TfGraph t;
  t.placeholder("x", tfpb::DT_FLOAT, {5});
  t.ints("k", {}, {2});
  t.node("TopKV2", "top", {"x", "k"});
  auto s = t.session("topk");
  auto out = s->run({Tensor::from_vector<float>({5}, {3, 9, 1, 7, 5})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(values(out[0]), (std::vector<float>{9, 7}));
  EXPECT_EQ(out[1].dtype(), DType::Int32);
  EXPECT_EQ(values(out[1]), (std::vector<float>{1, 3}));
}

TEST(TfOps, FusedBatchNormNhwcAtInference) {
  TfGraph t;
  t.placeholder("x", tfpb::DT_FLOAT, {1, 1, 1, 2});
  t.floats("scale", {2}, {1, 2});
  t.floats("offset", {2}, {0, 1});
  t.floats("mean", {2}, {1, 1});
  t.floats("var", {2}, {4, 0.25f});
  auto* bn = t.node("FusedBatchNormV3", "bn", {"x", "scale", "offset", "mean", "var"});
  TfGraph::set_bool(bn, "is_training", false);
  (*bn->mutable_attr())["epsilon"].set_f(0);
  t.node("Identity", "y", {"bn"});
  auto s = t.session("bn");
  auto out = s->run({Tensor::from_vector<float>({1, 1, 1, 2}, {5, 3})});
  // (5 - 1) / 2 * 1 + 0 = 2; (3 - 1) / 0.5 * 2 + 1 = 9
  EXPECT_EQ(s->outputs().size(), 1u);
  EXPECT_EQ(values(out[0]), (std::vector<float>{2, 9}));
}

TEST(TfOps, Conv2DBackpropInputSameStride2) {
  // 2x2 ones -> 4x4 by a 3x3 ones filter, stride 2, SAME: the forward conv pads 0 before.
  TfGraph t;
  t.placeholder("x", tfpb::DT_FLOAT, {1, 2, 2, 1});
  t.ints("sizes", {4}, {1, 4, 4, 1});
  t.floats("w", {3, 3, 1, 1}, std::vector<float>(9, 1.0f));
  auto* c = t.node("Conv2DBackpropInput", "y", {"sizes", "w", "x"});
  TfGraph::set_ints(c, "strides", {1, 2, 2, 1});
  TfGraph::set_str(c, "padding", "SAME");
  auto s = t.session("deconv");
  auto out = s->run({Tensor::from_vector<float>({1, 2, 2, 1}, {1, 1, 1, 1})});
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{1, 4, 4, 1}));
  // Each input pixel (i, j) spreads to rows 2i..2i+2, cols 2j..2j+2 (cropped at 4).
  EXPECT_EQ(values(out[0]), (std::vector<float>{1, 1, 2, 1, 1, 1, 2, 1, 2, 2, 4, 2, 1, 1, 2, 1}));
}

TEST(TfOps, NonMaxSuppressionV4Padded) {
  TfGraph t;
  t.placeholder("boxes", tfpb::DT_FLOAT, {3, 4});
  t.placeholder("scores", tfpb::DT_FLOAT, {3});
  t.ints("max", {}, {4});
  t.floats("iou", {}, {0.5f});
  t.floats("score", {}, {0.0f});
  auto* n = t.node("NonMaxSuppressionV4", "nms", {"boxes", "scores", "max", "iou", "score"});
  TfGraph::set_bool(n, "pad_to_max_output_size", true);
  auto s = t.session("nms");
  // Box 1 overlaps box 0 with IoU 0.9 / 1.1: suppressed.
  auto out = s->run(std::vector<Tensor>{Tensor::from_vector<float>({3, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 2, 1, 3}),
                                        Tensor::from_vector<float>({3}, {0.9f, 0.8f, 0.7f})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].dtype(), DType::Int32);
  EXPECT_EQ(values(out[0]), (std::vector<float>{0, 2, 0, 0}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{2}));
}

TEST(TfOps, SpaceToBatchAndBack) {
  TfGraph t;
  t.placeholder("x", tfpb::DT_FLOAT, {1, 4, 4, 1});
  t.ints("block", {2}, {2, 2});
  t.ints("pads", {2, 2}, {0, 0, 0, 0});
  t.node("SpaceToBatchND", "s2b", {"x", "block", "pads"});
  t.node("BatchToSpaceND", "b2s", {"s2b", "block", "pads"});
  t.node("Identity", "mid", {"s2b"});
  auto s = t.session("s2b");
  auto out = s->run({ramp({1, 4, 4, 1})});
  ASSERT_EQ(out.size(), 2u);  // b2s:0, mid:0
  EXPECT_EQ(values(out[0]), values(ramp({1, 4, 4, 1})));
  EXPECT_EQ(out[1].dims(), (std::vector<int64_t>{4, 2, 2, 1}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{0, 2, 8, 10, 1, 3, 9, 11, 4, 6, 12, 14, 5, 7, 13, 15}));
}

TEST(TfOps, SliceWithSizeToTheEndKnownAndAtRunTime) {
  // x[1:, 0:2] of a 3x4 ramp, begin and size constant, then fed at run time.
  for (bool fed : {false, true}) {
    TfGraph t;
    t.placeholder("x", tfpb::DT_FLOAT, {3, 4});
    if (fed) {
      t.placeholder("b", tfpb::DT_INT32, {2});
    } else {
      t.ints("b", {2}, {1, 0});
    }
    t.ints("s", {2}, {-1, 2});
    t.node("Slice", "y", {"x", "b", "s"});
    auto sess = t.session(fed ? "slice_fed" : "slice");
    std::vector<Tensor> ins{ramp({3, 4})};
    if (fed) ins.push_back(Tensor::from_vector<int32_t>({2}, {1, 0}));
    auto out = sess->run(ins);
    EXPECT_EQ(out[0].dims(), (std::vector<int64_t>{2, 2})) << fed;
    EXPECT_EQ(values(out[0]), (std::vector<float>{4, 5, 8, 9})) << fed;
  }
}

TEST(TfOps, UnknownOpNamesTheNode) {
  TfGraph t;
  t.placeholder("x", tfpb::DT_FLOAT, {1});
  t.node("NoSuchOp", "weird", {"x"});
  try {
    t.session("unknown");
    FAIL() << "no error";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("'weird' (NoSuchOp)"), std::string::npos) << e.what();
  }
}

TEST(TfOps, CycleAndDanglingInputNameTheNode) {
  TfGraph t;
  t.placeholder("x", tfpb::DT_FLOAT, {1});
  t.node("AddV2", "a", {"x", "b"});
  t.node("AddV2", "b", {"x", "a"});
  try {
    t.session("cycle");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'a'"), std::string::npos) << e.what();
  }
  TfGraph d;
  d.placeholder("x", tfpb::DT_FLOAT, {1});
  d.node("Relu", "r", {"nowhere:0"});
  try {
    d.session("dangling");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'r' (Relu): input 'nowhere:0' names no node"), std::string::npos) << e.what();
  }
}

}  // namespace kiln::testing
