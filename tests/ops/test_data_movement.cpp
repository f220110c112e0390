#include <kiln/error.h>

#include <limits>

#include "op_test_util.h"

namespace kiln::testing {

namespace {
ir::Attributes A(std::initializer_list<std::pair<const std::string, ir::Attribute>> l) { return ir::Attributes(l); }
ir::Attribute Int(int64_t v) { return ir::Attribute::of_int(v); }
Tensor I64(std::vector<int64_t> v) { return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v); }
Tensor F(std::vector<int64_t> dims, std::vector<float> v) { return Tensor::from_vector<float>(dims, v); }
Tensor iota(std::vector<int64_t> dims) {
  Tensor t(DType::Float, dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
}  // namespace

TEST(Concat, NegativeAxis) {
  auto out = run_op({.op = "Concat", .inputs = {F({2, 1}, {1, 2}), F({2, 2}, {3, 4, 5, 6})}, .attrs = A({{"axis", Int(-1)}})});
  expect_near(out[0], F({2, 3}, {1, 3, 4, 2, 5, 6}));
  out = run_op({.op = "Concat", .inputs = {F({1, 2}, {1, 2}), F({0, 2}, {}), F({1, 2}, {3, 4})}, .attrs = A({{"axis", Int(0)}})});
  expect_near(out[0], F({2, 2}, {1, 2, 3, 4}));
  EXPECT_THROW(run_op({.op = "Concat", .inputs = {F({2, 1}, {1, 2}), F({1, 2}, {3, 4})}, .attrs = A({{"axis", Int(0)}})}), kiln::Error);
}

TEST(Concat, SymbolicInference) {
  auto t = infer_op("Concat", {T(DType::Float, {S("b"), 3}), T(DType::Float, {S("b"), 4})}, A({{"axis", Int(1)}}));
  EXPECT_EQ(t[0].str(), "float[b,7]");
  t = infer_op("Concat", {T(DType::Float, {S("b"), 3}), T(DType::Float, {S("c"), 3})}, A({{"axis", Int(0)}}));
  EXPECT_EQ(t[0].dims[1].value, 3);
  EXPECT_TRUE(t[0].dims[0].is_symbolic());
}

TEST(Split, EqualAttrAndInput) {
  Tensor x = iota({2, 6});
  auto out = run_op({.op = "Split", .inputs = {x}, .attrs = A({{"axis", Int(1)}}), .num_outputs = 3});
  expect_near(out[0], F({2, 2}, {0, 1, 6, 7}));
  expect_near(out[2], F({2, 2}, {4, 5, 10, 11}));
  out = run_op({.op = "Split", .inputs = {x, I64({1, 5})}, .attrs = A({{"axis", Int(-1)}}), .num_outputs = 2, .constant = {false, true}});
  expect_near(out[0], F({2, 1}, {0, 6}));
  expect_near(out[1], F({2, 5}, {1, 2, 3, 4, 5, 7, 8, 9, 10, 11}));
  out = run_op({.op = "Split", .inputs = {x}, .attrs = A({{"axis", Int(1)}, {"split", ir::Attribute::of_ints({4, 2})}}), .num_outputs = 2,
                .opset = 11});
  expect_near(out[1], F({2, 2}, {4, 5, 10, 11}));
  out = run_op({.op = "Split", .inputs = {iota({7})}, .attrs = A({{"num_outputs", Int(3)}}), .num_outputs = 3, .opset = 18});
  expect_near(out[2], F({1}, {6}));
  EXPECT_THROW(run_op({.op = "Split", .inputs = {iota({7})}, .num_outputs = 3}), kiln::Error);
  EXPECT_THROW(run_op({.op = "Split", .inputs = {x, I64({1, 4})}, .attrs = A({{"axis", Int(1)}}), .num_outputs = 2}), kiln::Error);
}

TEST(Slice, StepsAndClamping) {
  Tensor x = iota({3, 5, 7});
  auto out = run_op({.op = "Slice", .inputs = {x, I64({1, -1}), I64({kMax, kMin}), I64({0, 2}), I64({1, -3})}});
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{2, 5, 3}));
  // out[i][j][k] = x[1+i][j][6-3k]
  EXPECT_EQ(out[0].data<float>()[(1 * 5 + 2) * 3 + 2], 2 * 35 + 2 * 7 + 0);
  EXPECT_EQ(out[0].data<float>()[0], 35 + 6);
  out = run_op({.op = "Slice", .inputs = {x}, .attrs = A({{"starts", ir::Attribute::of_ints({0})}, {"ends", ir::Attribute::of_ints({1})},
                                                           {"axes", ir::Attribute::of_ints({1})}}), .opset = 9});
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{3, 1, 7}));
  out = run_op({.op = "Slice", .inputs = {x, I64({10}), I64({20})}});
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{0, 5, 7}));
  // Huge steps take one element (numpy's answer), without overflowing the count.
  out = run_op({.op = "Slice", .inputs = {x, I64({1, 4}), I64({kMax, kMin}), I64({0, 1}), I64({kMax, kMin})}});
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{1, 1, 7}));
  EXPECT_EQ(out[0].data<float>()[0], 35 + 4 * 7);
  EXPECT_THROW(run_op({.op = "Slice", .inputs = {x, I64({0}), I64({1}), I64({0}), I64({0})}}), kiln::Error);
  EXPECT_THROW(run_op({.op = "Slice", .inputs = {x, I64({0}), I64({1}), I64({3})}}), kiln::Error);
}

TEST(Slice, SymbolicInference) {
  auto t = infer_op("Slice", {T(DType::Float, {S("b"), 10}), T(DType::Int64, {2}), T(DType::Int64, {2})}, {}, 1, 17,
                    {Tensor(), I64({0, 2}), I64({kMax, -2})});
  EXPECT_EQ(t[0].str(), "float[b,6]");
  t = infer_op("Slice", {T(DType::Float, {S("b"), 10}), T(DType::Int64, {1}), T(DType::Int64, {1}), T(DType::Int64, {1})}, {}, 1, 17,
               {Tensor(), Tensor(), Tensor(), I64({1})});
  EXPECT_EQ(t[0].dims[0].symbol, "b");
  EXPECT_FALSE(t[0].dims[1].is_static());
}

TEST(Tile, Repeats) {
  auto out = run_op({.op = "Tile", .inputs = {F({2, 2}, {1, 2, 3, 4}), I64({2, 3})}});
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{4, 6}));
  expect_near(out[0], F({4, 6}, {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4}));
  EXPECT_THROW(run_op({.op = "Tile", .inputs = {F({2}, {1, 2}), I64({2, 3})}}), kiln::Error);
  auto t = infer_op("Tile", {T(DType::Float, {S("b"), 3}), T(DType::Int64, {2})}, {}, 1, 17, {Tensor(), I64({1, 2})});
  EXPECT_EQ(t[0].str(), "float[b,6]");
}

TEST(Pad, Modes) {
  Tensor x = F({1, 3}, {1, 2, 3});
  Tensor pads = I64({0, 2, 0, 1});
  expect_near(run_op({.op = "Pad", .inputs = {x, pads, Tensor::scalar<float>(9)}})[0], F({1, 6}, {9, 9, 1, 2, 3, 9}));
  expect_near(run_op({.op = "Pad", .inputs = {x, pads}, .attrs = A({{"mode", ir::Attribute::of_string("reflect")}})})[0],
              F({1, 6}, {3, 2, 1, 2, 3, 2}));
  expect_near(run_op({.op = "Pad", .inputs = {x, pads}, .attrs = A({{"mode", ir::Attribute::of_string("edge")}})})[0],
              F({1, 6}, {1, 1, 1, 2, 3, 3}));
  // Negative pads crop; pads before opset 11 are an attribute.
  expect_near(run_op({.op = "Pad", .inputs = {x}, .attrs = A({{"pads", ir::Attribute::of_ints({1, -1, 0, 0})}, {"value", ir::Attribute::of_float(5)}}),
                      .opset = 2})[0],
              F({2, 2}, {5, 5, 2, 3}));
  // axes input (opset 18)
  expect_near(run_op({.op = "Pad", .inputs = {x, I64({1, 1}), Tensor(), I64({-1})}, .opset = 18})[0], F({1, 5}, {0, 1, 2, 3, 0}));
  EXPECT_THROW(run_op({.op = "Pad", .inputs = {x, I64({0, -4, 0, 0})}}), kiln::Error);
  EXPECT_THROW(run_op({.op = "Pad", .inputs = {x, I64({0, 1})}}), kiln::Error);
}

TEST(Pad, Reflect2D) {
  Tensor x = iota({3, 5});
  auto out = run_op({.op = "Pad", .inputs = {x, I64({1, 2, 1, 2})}, .attrs = A({{"mode", ir::Attribute::of_string("reflect")}})});
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{5, 9}));
  // out row 0 = x row 1 reflected: cols -2..6 -> 2,1,0,1,2,3,4,3,2
  expect_near(out[0].reshaped({45}), out[0].reshaped({45}));
  std::vector<float> row0 = {7, 6, 5, 6, 7, 8, 9, 8, 7};
  for (int j = 0; j < 9; ++j) EXPECT_EQ(out[0].data<float>()[j], row0[j]);
  auto t = infer_op("Pad", {T(DType::Float, {S("b"), 3}), T(DType::Int64, {4})}, {}, 1, 17, {Tensor(), I64({0, 1, 0, 1})});
  EXPECT_EQ(t[0].str(), "float[b,5]");
}

TEST(DepthToSpace, DCRandCRD) {
  Tensor x = iota({1, 8, 1, 1});
  auto out = run_op({.op = "DepthToSpace", .inputs = {x}, .attrs = A({{"blocksize", Int(2)}})});
  // DCR: out[0][c][i][j] = x[(i*2+j)*2 + c]
  expect_near(out[0], F({1, 2, 2, 2}, {0, 2, 4, 6, 1, 3, 5, 7}));
  out = run_op({.op = "DepthToSpace", .inputs = {x}, .attrs = A({{"blocksize", Int(2)}, {"mode", ir::Attribute::of_string("CRD")}})});
  expect_near(out[0], F({1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_THROW(run_op({.op = "DepthToSpace", .inputs = {iota({1, 6, 1, 1})}, .attrs = A({{"blocksize", Int(2)}})}), kiln::Error);
}

TEST(SpaceToDepth, RoundTrip) {
  Tensor x = iota({2, 3, 4, 6});
  auto s2d = run_op({.op = "SpaceToDepth", .inputs = {x}, .attrs = A({{"blocksize", Int(2)}})});
  ASSERT_EQ(s2d[0].dims(), (std::vector<int64_t>{2, 12, 2, 3}));
  auto back = run_op({.op = "DepthToSpace", .inputs = {s2d[0]}, .attrs = A({{"blocksize", Int(2)}})});
  expect_near(back[0], x);
  auto t = infer_op("SpaceToDepth", {T(DType::Float, {S("n"), 3, 4, 6})}, A({{"blocksize", Int(2)}}));
  EXPECT_EQ(t[0].str(), "float[n,12,2,3]");
}

TEST(Trilu, UpperLowerK) {
  Tensor x = iota({3, 4});
  expect_near(run_op({.op = "Trilu", .inputs = {x}})[0], F({3, 4}, {0, 1, 2, 3, 0, 5, 6, 7, 0, 0, 10, 11}));
  expect_near(run_op({.op = "Trilu", .inputs = {x, Tensor::scalar<int64_t>(-1)}, .attrs = A({{"upper", Int(0)}})})[0],
              F({3, 4}, {0, 0, 0, 0, 4, 0, 0, 0, 8, 9, 0, 0}));
}

TEST(ReverseSequence, BatchAxis) {
  Tensor x = iota({4, 2});  // time major: [T=4, B=2]
  auto out = run_op({.op = "ReverseSequence", .inputs = {x, I64({4, 2})}});
  expect_near(out[0], F({4, 2}, {6, 3, 4, 1, 2, 5, 0, 7}));
  EXPECT_THROW(run_op({.op = "ReverseSequence", .inputs = {x, I64({5, 1})}}), kiln::Error);
}

TEST(EyeLike, OffsetAndDtype) {
  auto out = run_op({.op = "EyeLike", .inputs = {iota({2, 3})}, .attrs = A({{"k", Int(1)}, {"dtype", Int(7)}})});
  expect_near(out[0], Tensor::from_vector<int64_t>({2, 3}, {0, 1, 0, 0, 0, 1}));
}

}  // namespace kiln::testing

namespace kiln::testing {

// CenterCropPad (opset 18): crop or zero-pad each listed axis around its centre; an odd
// difference puts the extra element at the end.
TEST(CenterCropPad, CropPadAndAxes) {
  Tensor x = Tensor::from_vector<float>({5}, {1, 2, 3, 4, 5});
  auto out = run_op({.op = "CenterCropPad", .inputs = {x, Tensor::from_vector<int64_t>({1}, {2})}, .opset = 18,
                     .constant = {false, true}});
  expect_near(out[0], Tensor::from_vector<float>({2}, {2, 3}));  // drops 1 at the start, 2 at the end
  out = run_op({.op = "CenterCropPad", .inputs = {x, Tensor::from_vector<int64_t>({1}, {8})}, .opset = 18,
                .constant = {false, true}});
  expect_near(out[0], Tensor::from_vector<float>({8}, {0, 1, 2, 3, 4, 5, 0, 0}));
  // [2, 3] -> axes [-1]: the last axis padded to 4, the first untouched.
  Tensor m = Tensor::from_vector<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  out = run_op({.op = "CenterCropPad", .inputs = {m, Tensor::from_vector<int64_t>({1}, {4})},
                .attrs = {{"axes", ir::Attribute::of_ints({-1})}}, .opset = 18, .constant = {false, true}});
  expect_near(out[0], Tensor::from_vector<int32_t>({2, 4}, {1, 2, 3, 0, 4, 5, 6, 0}));
  EXPECT_THROW(run_op({.op = "CenterCropPad", .inputs = {m, Tensor::from_vector<int64_t>({1}, {4})}, .opset = 18}),
               kiln::Error);  // one extent for two axes
}

}  // namespace kiln::testing

namespace kiln::testing {

// Pad mode "wrap" (opset 19): the cells outside repeat the input circularly.
TEST(Pad, WrapFromOpset19) {
  Tensor x = Tensor::from_vector<float>({3}, {1, 2, 3});
  auto out = run_op({.op = "Pad", .inputs = {x, Tensor::from_vector<int64_t>({2}, {2, 1})},
                     .attrs = {{"mode", ir::Attribute::of_string("wrap")}}, .opset = 19, .constant = {false, true}});
  expect_near(out[0], Tensor::from_vector<float>({6}, {2, 3, 1, 2, 3, 1}));
  EXPECT_THROW(run_op({.op = "Pad", .inputs = {x, Tensor::from_vector<int64_t>({2}, {2, 1})},
                       .attrs = {{"mode", ir::Attribute::of_string("wrap")}}, .opset = 18, .constant = {false, true}}),
               kiln::UnsupportedError);
}

}  // namespace kiln::testing
