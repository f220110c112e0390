#include <kiln/error.h>

#include <cmath>

#include "op_test_util.h"

namespace kiln::testing {

namespace {

using ir::Attribute;

Tensor iota(std::vector<int64_t> dims, float start = 1) {
  Tensor t(DType::Float, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + static_cast<float>(i);
  return t;
}

}  // namespace

TEST(MaxPool, Basic2D) {
  // 4x4 iota, 2x2 window stride 2.
  auto out = run_op({.op = "MaxPool", .inputs = {iota({1, 1, 4, 4})},
                     .attrs = {{"kernel_shape", Attribute::of_ints({2, 2})}, {"strides", Attribute::of_ints({2, 2})}}});
  expect_near(out[0], Tensor::from_vector<float>({1, 1, 2, 2}, {6, 8, 14, 16}));
}

TEST(MaxPool, PadsAndIndices) {
  // 5x5 iota, 5x5 window, pads 2: the ONNX precomputed_pads case.
  auto out = run_op({.op = "MaxPool", .inputs = {iota({1, 1, 5, 5})},
                     .attrs = {{"kernel_shape", Attribute::of_ints({5, 5})}, {"pads", Attribute::of_ints({2, 2, 2, 2})}},
                     .num_outputs = 2});
  expect_near(out[0], Tensor::from_vector<float>({1, 1, 5, 5}, {13, 14, 15, 15, 15, 18, 19, 20, 20, 20, 23, 24, 25, 25, 25,
                                                                23, 24, 25, 25, 25, 23, 24, 25, 25, 25}));
  EXPECT_EQ(out[1].to_int64_vector(), (std::vector<int64_t>{12, 13, 14, 14, 14, 17, 18, 19, 19, 19, 22, 23, 24, 24, 24,
                                                            22, 23, 24, 24, 24, 22, 23, 24, 24, 24}));
}

TEST(MaxPool, ColumnMajorIndicesAcrossBatch) {
  // Two planes; indices count over the whole tensor, column-major inside a plane.
  auto out = run_op({.op = "MaxPool", .inputs = {iota({1, 2, 5, 5})},
                     .attrs = {{"kernel_shape", Attribute::of_ints({2, 2})},
                               {"strides", Attribute::of_ints({2, 2})},
                               {"storage_order", Attribute::of_int(1)}},
                     .num_outputs = 2});
  expect_near(out[0], Tensor::from_vector<float>({1, 2, 2, 2}, {7, 9, 17, 19, 32, 34, 42, 44}));
  EXPECT_EQ(out[1].to_int64_vector(), (std::vector<int64_t>{6, 16, 8, 18, 31, 41, 33, 43}));
}

TEST(MaxPool, CeilModeDilationsAutoPad) {
  // 1-D [1..5], k=2 s=2 ceil_mode: windows [1,2],[3,4],[5] -> 3 outputs.
  auto c = run_op({.op = "MaxPool", .inputs = {iota({1, 1, 5})},
                   .attrs = {{"kernel_shape", Attribute::of_ints({2})}, {"strides", Attribute::of_ints({2})},
                             {"ceil_mode", Attribute::of_int(1)}}});
  expect_near(c[0], Tensor::from_vector<float>({1, 1, 3}, {2, 4, 5}));
  // ceil_mode must not start a window entirely in the right padding: in 4, k 2, s 2, pad 1,1
  // -> floor((6-2)/2)+1 = 3 either way.
  auto c2 = run_op({.op = "MaxPool", .inputs = {iota({1, 1, 4})},
                    .attrs = {{"kernel_shape", Attribute::of_ints({2})}, {"strides", Attribute::of_ints({2})},
                              {"pads", Attribute::of_ints({1, 1})}, {"ceil_mode", Attribute::of_int(1)}}});
  expect_near(c2[0], Tensor::from_vector<float>({1, 1, 3}, {1, 3, 4}));
  // Dilation 2 on 4x4: window taps (0,0),(0,2),(2,0),(2,2) -> 2x2 output.
  auto d = run_op({.op = "MaxPool", .inputs = {iota({1, 1, 4, 4})},
                   .attrs = {{"kernel_shape", Attribute::of_ints({2, 2})}, {"dilations", Attribute::of_ints({2, 2})}}});
  expect_near(d[0], Tensor::from_vector<float>({1, 1, 2, 2}, {11, 12, 15, 16}));
  // SAME_LOWER k=2 on [1..3]: pads (1,0) -> [1,2,3].
  auto s = run_op({.op = "MaxPool", .inputs = {iota({1, 1, 3})},
                   .attrs = {{"kernel_shape", Attribute::of_ints({2})}, {"auto_pad", Attribute::of_string("SAME_LOWER")}}});
  expect_near(s[0], Tensor::from_vector<float>({1, 1, 3}, {1, 2, 3}));
  auto su = run_op({.op = "MaxPool", .inputs = {iota({1, 1, 3})},
                    .attrs = {{"kernel_shape", Attribute::of_ints({2})}, {"auto_pad", Attribute::of_string("SAME_UPPER")}}});
  expect_near(su[0], Tensor::from_vector<float>({1, 1, 3}, {2, 3, 3}));
  // k=2 with dilation 3 (extent 4) on [1..7]: total 3, pads (2,1) LOWER, (1,2) UPPER; output i
  // takes the max of x[i - pad] and x[i - pad + 3].
  ir::Attributes dil = {{"kernel_shape", Attribute::of_ints({2})}, {"dilations", Attribute::of_ints({3})}};
  dil["auto_pad"] = Attribute::of_string("SAME_LOWER");
  auto dl = run_op({.op = "MaxPool", .inputs = {iota({1, 1, 7})}, .attrs = dil});
  expect_near(dl[0], Tensor::from_vector<float>({1, 1, 7}, {2, 3, 4, 5, 6, 7, 5}));
  dil["auto_pad"] = Attribute::of_string("SAME_UPPER");
  auto du = run_op({.op = "MaxPool", .inputs = {iota({1, 1, 7})}, .attrs = dil});
  expect_near(du[0], Tensor::from_vector<float>({1, 1, 7}, {3, 4, 5, 6, 7, 5, 6}));
}

TEST(MaxPool, IntegerAnd3D) {
  Tensor u = Tensor::from_vector<uint8_t>({1, 1, 2, 3}, {1, 200, 3, 4, 5, 255});
  auto o = run_op({.op = "MaxPool", .inputs = {u}, .attrs = {{"kernel_shape", Attribute::of_ints({2, 2})}}});
  EXPECT_EQ(o[0].to_int64_vector(), (std::vector<int64_t>{200, 255}));
  auto o3 = run_op({.op = "MaxPool", .inputs = {iota({1, 1, 3, 3, 3})},
                    .attrs = {{"kernel_shape", Attribute::of_ints({2, 2, 2})}}});
  ASSERT_EQ(o3[0].dims(), (std::vector<int64_t>{1, 1, 2, 2, 2}));
  EXPECT_EQ(o3[0].as_double(0), 14);
  EXPECT_EQ(o3[0].as_double(7), 27);
}

TEST(MaxPool, InferenceAndErrors) {
  auto t = infer_op("MaxPool", {T(DType::Float, {S("batch"), 64, 112, 112})},
                    {{"kernel_shape", Attribute::of_ints({3, 3})}, {"strides", Attribute::of_ints({2, 2})},
                     {"pads", Attribute::of_ints({1, 1, 1, 1})}},
                    2);
  EXPECT_EQ(t[0].str(), "float[batch,64,56,56]");
  EXPECT_EQ(t[1].str(), "int64[batch,64,56,56]");
  auto t2 = infer_op("MaxPool", {T(DType::Float, {1, 3, S("h"), 9})}, {{"kernel_shape", Attribute::of_ints({3, 3})}});
  EXPECT_TRUE(t2[0].dims[2].is_symbolic());
  EXPECT_EQ(t2[0].dims[3].value, 7);
  EXPECT_THROW(infer_op("MaxPool", {T(DType::Float, {1, 3, 9, 9})}), kiln::Error);  // no kernel_shape
  EXPECT_THROW(infer_op("MaxPool", {T(DType::Float, {1, 3, 9, 9})}, {{"kernel_shape", Attribute::of_ints({3})}}),
               kiln::Error);
  EXPECT_THROW(infer_op("MaxPool", {T(DType::Float, {1, 3, 2, 2})}, {{"kernel_shape", Attribute::of_ints({3, 3})}}),
               kiln::Error);
  EXPECT_THROW(infer_op("MaxPool", {T(DType::Float, {3, 9})}, {{"kernel_shape", Attribute::of_ints({3})}}), kiln::Error);
  EXPECT_THROW(run_op({.op = "MaxPool", .inputs = {iota({1, 1, 4, 4})},
                       .attrs = {{"kernel_shape", Attribute::of_ints({2, 2})}, {"strides", Attribute::of_ints({0, 1})}}}),
               kiln::Error);
}

TEST(AveragePool, PadsAndCountIncludePad) {
  // 3x3 iota, 2x2 window, pads 1 on the top-left only -> 3x3 output.
  ir::Attributes a = {{"kernel_shape", Attribute::of_ints({2, 2})}, {"pads", Attribute::of_ints({1, 1, 0, 0})}};
  auto ex = run_op({.op = "AveragePool", .inputs = {iota({1, 1, 3, 3})}, .attrs = a});
  expect_near(ex[0], Tensor::from_vector<float>({1, 1, 3, 3}, {1, 1.5f, 2.5f, 2.5f, 3, 4, 5.5f, 6, 7}));
  a["count_include_pad"] = Attribute::of_int(1);
  auto in = run_op({.op = "AveragePool", .inputs = {iota({1, 1, 3, 3})}, .attrs = a});
  expect_near(in[0], Tensor::from_vector<float>({1, 1, 3, 3}, {0.25f, 0.75f, 1.25f, 1.25f, 3, 4, 2.75f, 6, 7}));
}

TEST(AveragePool, CeilModeClipsWindow) {
  // ONNX test_averagepool_2d_ceil: 4x4 iota, k3 s2 ceil -> [[6,7.5],[12,13.5]].
  auto out = run_op({.op = "AveragePool", .inputs = {iota({1, 1, 4, 4})},
                     .attrs = {{"kernel_shape", Attribute::of_ints({3, 3})}, {"strides", Attribute::of_ints({2, 2})},
                               {"ceil_mode", Attribute::of_int(1)}}});
  expect_near(out[0], Tensor::from_vector<float>({1, 1, 2, 2}, {6, 7.5f, 12, 13.5f}));
}

TEST(LpPool, P2AndP1) {
  Tensor x = Tensor::from_vector<float>({1, 1, 4}, {3, -4, 1, 2});
  auto o = run_op({.op = "LpPool", .inputs = {x},
                   .attrs = {{"kernel_shape", Attribute::of_ints({2})}, {"strides", Attribute::of_ints({2})}}});
  expect_near(o[0], Tensor::from_vector<float>({1, 1, 2}, {5, std::sqrt(5.f)}));
  auto o1 = run_op({.op = "LpPool", .inputs = {x},
                    .attrs = {{"kernel_shape", Attribute::of_ints({3})}, {"p", Attribute::of_int(1)}}});
  expect_near(o1[0], Tensor::from_vector<float>({1, 1, 2}, {8, 7}));
}

TEST(GlobalPools, AllKinds) {
  Tensor x = Tensor::from_vector<float>({1, 2, 2, 2}, {1, 2, 3, 4, -1, -5, 2, 2});
  expect_near(run_op({.op = "GlobalAveragePool", .inputs = {x}})[0],
              Tensor::from_vector<float>({1, 2, 1, 1}, {2.5f, -0.5f}));
  expect_near(run_op({.op = "GlobalMaxPool", .inputs = {x}})[0], Tensor::from_vector<float>({1, 2, 1, 1}, {4, 2}));
  expect_near(run_op({.op = "GlobalLpPool", .inputs = {x}})[0],
              Tensor::from_vector<float>({1, 2, 1, 1}, {std::sqrt(30.f), std::sqrt(34.f)}));
  Tensor x1 = Tensor::from_vector<float>({1, 1, 3}, {1, 2, 6});
  expect_near(run_op({.op = "GlobalAveragePool", .inputs = {x1}})[0], Tensor::from_vector<float>({1, 1, 1}, {3}));
  auto t = infer_op("GlobalAveragePool", {T(DType::Float, {S("batch"), 512, 7, 7})});
  EXPECT_EQ(t[0].str(), "float[batch,512,1,1]");
  auto t2 = infer_op("GlobalMaxPool", {T(DType::Float, {S("n"), 3, S("d"), S("h"), 7})});
  EXPECT_EQ(t2[0].str(), "float[n,3,1,1,1]");
  EXPECT_THROW(infer_op("GlobalAveragePool", {T(DType::Float, {3})}), kiln::Error);
}

TEST(MaxUnpool, DefaultAndExplicitShape) {
  Tensor x = Tensor::from_vector<float>({1, 1, 2, 2}, {5, 6, 7, 8});
  Tensor i = Tensor::from_vector<int64_t>({1, 1, 2, 2}, {5, 7, 13, 15});
  ir::Attributes a = {{"kernel_shape", Attribute::of_ints({2, 2})}, {"strides", Attribute::of_ints({2, 2})}};
  auto d = run_op({.op = "MaxUnpool", .inputs = {x, i}, .attrs = a});
  expect_near(d[0], Tensor::from_vector<float>({1, 1, 4, 4}, {0, 0, 0, 0, 0, 5, 0, 6, 0, 0, 0, 0, 0, 7, 0, 8}));
  Tensor shape = Tensor::from_vector<int64_t>({4}, {1, 1, 5, 5});
  auto e = run_op({.op = "MaxUnpool", .inputs = {x, i, shape}, .attrs = a, .constant = {false, false, true}});
  Tensor want(DType::Float, {1, 1, 5, 5});
  want.data<float>()[6] = 5;
  want.data<float>()[8] = 6;
  want.data<float>()[16] = 7;
  want.data<float>()[18] = 8;
  expect_near(e[0], want);
  auto t = infer_op("MaxUnpool", {T(DType::Float, {S("n"), 4, 3, 3}), T(DType::Int64, {S("n"), 4, 3, 3})}, a);
  EXPECT_EQ(t[0].str(), "float[n,4,6,6]");
  Tensor bad = Tensor::from_vector<int64_t>({1, 1, 2, 2}, {5, 7, 13, 16});
  EXPECT_THROW(run_op({.op = "MaxUnpool", .inputs = {x, bad}, .attrs = a}), kiln::Error);
  EXPECT_THROW(run_op({.op = "MaxUnpool", .inputs = {x, i, Tensor::from_vector<int64_t>({4}, {1, 1, 3, 3})}, .attrs = a}),
               kiln::Error);
}

TEST(MaxRoiPool, WholeAndPartialRegion) {
  Tensor x = iota({1, 1, 4, 4});
  // Whole map pooled to 2x2; then the region (1,1)-(2,2) (x1,y1,x2,y2) pooled to 1x1.
  Tensor rois = Tensor::from_vector<float>({2, 5}, {0, 0, 0, 3, 3, 0, 1, 1, 2, 2});
  auto o = run_op({.op = "MaxRoiPool", .inputs = {x, rois}, .attrs = {{"pooled_shape", Attribute::of_ints({2, 2})}}});
  ASSERT_EQ(o[0].dims(), (std::vector<int64_t>{2, 1, 2, 2}));
  EXPECT_EQ(o[0].as_double(0), 6);
  EXPECT_EQ(o[0].as_double(3), 16);
  EXPECT_EQ(o[0].as_double(4), 6);   // roi 2, bin (0,0) covers (1,1) only
  EXPECT_EQ(o[0].as_double(7), 11);  // bin (1,1) covers (2,2)
  EXPECT_THROW(run_op({.op = "MaxRoiPool", .inputs = {x, Tensor::from_vector<float>({1, 5}, {3, 0, 0, 1, 1})},
                       .attrs = {{"pooled_shape", Attribute::of_ints({2, 2})}}}),
               kiln::Error);
}

// Opset 19 gave AveragePool dilations; the window's taps are `dilations` apart.
TEST(AveragePool, DilationsFromOpset19) {
  auto out = run_op({.op = "AveragePool", .inputs = {iota({1, 1, 4, 4})},
                     .attrs = {{"kernel_shape", Attribute::of_ints({2, 2})}, {"dilations", Attribute::of_ints({2, 2})}},
                     .opset = 19});
  expect_near(out[0], Tensor::from_vector<float>({1, 1, 2, 2}, {6, 7, 10, 11}));
  // Padding counted or not: the corner window of a padded input holds one real tap.
  out = run_op({.op = "AveragePool", .inputs = {iota({1, 1, 3, 3})},
                .attrs = {{"kernel_shape", Attribute::of_ints({2, 2})}, {"dilations", Attribute::of_ints({2, 2})},
                          {"pads", Attribute::of_ints({1, 1, 1, 1})}, {"count_include_pad", Attribute::of_int(1)}},
                .opset = 19});
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{1, 1, 3, 3}));
  EXPECT_FLOAT_EQ(out[0].data<float>()[0], 5.f / 4.f);  // taps (-1,-1) (-1,1) (1,-1) (1,1): only x[1][1] = 5
}

}  // namespace kiln::testing
