// The auto_pad rule of src/ops/core/conv_geometry.h on hand-worked axes.
#include "ops/core/conv_geometry.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace kiln::ops {
namespace {

using P = AxisPads;

TEST(ConvGeometry, ParsesTheFourModes) {
  EXPECT_EQ(parse_auto_pad("NOTSET"), AutoPad::NotSet);
  EXPECT_EQ(parse_auto_pad("VALID"), AutoPad::Valid);
  EXPECT_EQ(parse_auto_pad("SAME_UPPER"), AutoPad::SameUpper);
  EXPECT_EQ(parse_auto_pad("SAME_LOWER"), AutoPad::SameLower);
  EXPECT_EQ(parse_auto_pad("same_upper"), std::nullopt);
  EXPECT_EQ(parse_auto_pad(""), std::nullopt);
  EXPECT_EQ(auto_pad_error("BOGUS"), "auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got 'BOGUS'");
}

TEST(ConvGeometry, ReadsTheAttribute) {
  ir::Graph g;
  ir::Value* x = g.add_input("x", {});
  ir::Value* y = g.add_value("y");
  ir::Node* none = g.add_node("MaxPool", {x}, {y}, {}, "none");
  EXPECT_EQ(auto_pad_of(*none), AutoPad::NotSet);
  ir::Value* z = g.add_value("z");
  ir::Node* lower = g.add_node("MaxPool", {x}, {z}, {{"auto_pad", ir::Attribute::of_string("SAME_LOWER")}}, "lower");
  EXPECT_EQ(auto_pad_of(*lower), AutoPad::SameLower);
  ir::Value* w = g.add_value("w");
  ir::Node* bad = g.add_node("MaxPool", {x}, {w}, {{"auto_pad", ir::Attribute::of_string("SAME")}}, "bad");
  EXPECT_EQ(auto_pad_of(*bad), std::nullopt);
}

// The op contexts' node() and fail() (a std::runtime_error here).
struct FakeCtx {
  const ir::Node& n;
  const ir::Node& node() const { return n; }
  [[noreturn]] void fail(const std::string& m) const { throw std::runtime_error(m); }
};

TEST(ConvGeometry, ReadsPadsAndAutoPad) {
  ir::Graph g;
  ir::Value* x = g.add_input("x", {});
  auto node = [&](ir::Attributes a) {
    return g.add_node("MaxPool", {x}, {g.add_value(g.unique_name("y"))}, std::move(a), g.unique_name("n"));
  };
  WindowGeom geom;
  geom.in = {9, 7};
  geom.read_pads(FakeCtx{*node({{"pads", ir::Attribute::of_ints({1, 2, 3, 4})}})});
  EXPECT_EQ(geom.pad_begin, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(geom.pad_end, (std::vector<int64_t>{3, 4}));
  geom.read_pads(FakeCtx{*node({})});
  EXPECT_EQ(geom.pad_begin, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(geom.pad_end, (std::vector<int64_t>{0, 0}));
  EXPECT_THROW(geom.read_pads(FakeCtx{*node({{"pads", ir::Attribute::of_ints({1, 2})}})}), std::runtime_error);
  EXPECT_THROW(geom.read_pads(FakeCtx{*node({{"pads", ir::Attribute::of_ints({0, -1, 0, 0})}})}), std::runtime_error);
  EXPECT_EQ(auto_pad_or_fail(FakeCtx{*node({{"auto_pad", ir::Attribute::of_string("VALID")}})}), AutoPad::Valid);
  EXPECT_THROW(auto_pad_or_fail(FakeCtx{*node({{"auto_pad", ir::Attribute::of_string("SAME")}})}), std::runtime_error);
}

TEST(ConvGeometry, SameSplitsOddTotalsByMode) {
  // in 5, kernel 2, stride 1: 5 outputs need 5 + 2 - 1 = 6 inputs, a total of 1.
  EXPECT_EQ(window_pads(AutoPad::SameUpper, 5, 2, 1, 1, {}), (P{0, 1}));
  EXPECT_EQ(window_pads(AutoPad::SameLower, 5, 2, 1, 1, {}), (P{1, 0}));
  // in 224, kernel 3, stride 2 (a stem conv): out 112, total 111 * 2 + 3 - 224 = 1.
  EXPECT_EQ(window_pads(AutoPad::SameUpper, 224, 3, 2, 1, {}), (P{0, 1}));
  EXPECT_EQ(window_pads(AutoPad::SameLower, 224, 3, 2, 1, {}), (P{1, 0}));
  // in 7, kernel 4, stride 1: total 3, the odd element after (UPPER) or before (LOWER).
  EXPECT_EQ(window_pads(AutoPad::SameUpper, 7, 4, 1, 1, {}), (P{1, 2}));
  EXPECT_EQ(window_pads(AutoPad::SameLower, 7, 4, 1, 1, {}), (P{2, 1}));
  // An even total splits evenly either way: in 7, kernel 3, stride 2, out 4, total 3 * 2 + 3 - 7.
  EXPECT_EQ(window_pads(AutoPad::SameUpper, 7, 3, 2, 1, {}), (P{1, 1}));
  EXPECT_EQ(window_pads(AutoPad::SameLower, 7, 3, 2, 1, {}), (P{1, 1}));
}

TEST(ConvGeometry, SameWithDilations) {
  // kernel 3, dilation 2: extent 5. in 7, stride 2: out 4, total 3 * 2 + 5 - 7 = 4.
  EXPECT_EQ(dilated_extent(3, 2), 5);
  EXPECT_EQ(window_pads(AutoPad::SameUpper, 7, 3, 2, 2, {}), (P{2, 2}));
  // kernel 2, dilation 3: extent 4. in 9, stride 1: total 3.
  EXPECT_EQ(window_pads(AutoPad::SameUpper, 9, 2, 1, 3, {}), (P{1, 2}));
  EXPECT_EQ(window_pads(AutoPad::SameLower, 9, 2, 1, 3, {}), (P{2, 1}));
  // kernel 3, dilation 4: extent 9. in 10, stride 3: out 4, total 3 * 3 + 9 - 10 = 8.
  EXPECT_EQ(window_pads(AutoPad::SameUpper, 10, 3, 3, 4, {}), (P{4, 4}));
  // kernel 3, dilation 3: extent 7. in 11, stride 2: out 6, total 5 * 2 + 7 - 11 = 6.
  EXPECT_EQ(window_pads(AutoPad::SameLower, 11, 3, 2, 3, {}), (P{3, 3}));
}

TEST(ConvGeometry, SameNeverPadsNegatively) {
  // in 10, kernel 1, stride 3: out 4 windows end at 9, inside the input.
  EXPECT_EQ(same_out_extent(10, 3), 4);
  EXPECT_EQ(window_pads(AutoPad::SameUpper, 10, 1, 3, 1, {}), (P{0, 0}));
  EXPECT_EQ(same_pads(AutoPad::SameLower, 10, 4, 1, 3), (P{0, 0}));
  // The output extent is ceil(in / stride).
  EXPECT_EQ(same_out_extent(7, 2), 4);
  EXPECT_EQ(same_out_extent(8, 2), 4);
  EXPECT_EQ(same_out_extent(1, 5), 1);
  EXPECT_EQ(same_out_extent(0, 2), 0);
}

TEST(ConvGeometry, ValidAndNotSet) {
  EXPECT_EQ(window_pads(AutoPad::Valid, 7, 3, 2, 1, {1, 2}), (P{0, 0}));
  EXPECT_EQ(window_pads(AutoPad::NotSet, 7, 3, 2, 1, {1, 2}), (P{1, 2}));
  EXPECT_EQ(window_pads(AutoPad::NotSet, 7, 3, 2, 1, {}), (P{0, 0}));
}

TEST(ConvGeometry, ResolvesAPadsAttribute) {
  // 2-D, [begin_h, begin_w, end_h, end_w]: 9x7 input, kernel 3x2, strides 2x1, dilations 2x3.
  const int64_t in[2] = {9, 7}, k[2] = {3, 2}, s[2] = {2, 1}, d[2] = {2, 3};
  std::vector<int64_t> pads = {1, 0, 0, 1};
  resolve_pads(AutoPad::NotSet, in, k, s, d, pads);
  EXPECT_EQ(pads, (std::vector<int64_t>{1, 0, 0, 1}));
  resolve_pads(AutoPad::SameUpper, in, k, s, d, pads);
  EXPECT_EQ(pads, (std::vector<int64_t>{2, 1, 2, 2}));
  resolve_pads(AutoPad::SameLower, in, k, s, d, pads);
  EXPECT_EQ(pads, (std::vector<int64_t>{2, 2, 2, 1}));
  resolve_pads(AutoPad::Valid, in, k, s, d, pads);
  EXPECT_EQ(pads, (std::vector<int64_t>{0, 0, 0, 0}));
}

TEST(ConvGeometry, WindowAxisOutputExtents) {
  // NOTSET, in 7 + pads (1, 1), kernel 3, stride 2: floor((9 - 3) / 2) + 1 = 4.
  WindowAxis a = window_axis(AutoPad::NotSet, 7, 3, 2, 1, {1, 1});
  EXPECT_EQ(a.pads, (P{1, 1}));
  EXPECT_EQ(a.extent, 3);
  EXPECT_EQ(a.padded, 9);
  EXPECT_EQ(a.out, 4);
  EXPECT_TRUE(a.fits);
  // VALID drops the given pads: in 7, kernel 3 dilated by 2 (extent 5): floor(2 / 2) + 1 = 2.
  a = window_axis(AutoPad::Valid, 7, 3, 2, 2, {1, 1});
  EXPECT_EQ(a.pads, (P{0, 0}));
  EXPECT_EQ(a.out, 2);
  // ceil_mode: in 5, kernel 2, stride 2: floor 2, ceil 3.
  EXPECT_EQ(window_axis(AutoPad::NotSet, 5, 2, 2, 1, {}).out, 2);
  EXPECT_EQ(window_axis(AutoPad::NotSet, 5, 2, 2, 1, {}, true).out, 3);
  // ...but a last window that would start in the end padding is dropped: in 4, pads (0, 1).
  EXPECT_EQ(window_axis(AutoPad::NotSet, 4, 2, 2, 1, {0, 1}, true).out, 2);
  // SAME ignores ceil_mode and the given pads: in 7, stride 2 -> 4.
  a = window_axis(AutoPad::SameLower, 7, 4, 2, 1, {3, 3}, true);
  EXPECT_EQ(a.out, 4);
  EXPECT_EQ(a.pads, (P{2, 1}));  // total 3 * 2 + 4 - 7 = 3
  // A window longer than the padded input does not fit (out 0); under SAME an empty input
  // gives no outputs.
  a = window_axis(AutoPad::NotSet, 2, 5, 1, 1, {1, 1});
  EXPECT_FALSE(a.fits);
  EXPECT_EQ(a.padded, 4);
  EXPECT_EQ(a.out, 0);
  a = window_axis(AutoPad::SameUpper, 0, 5, 2, 1, {});
  EXPECT_TRUE(a.fits);
  EXPECT_EQ(a.out, 0);
}

TEST(ConvGeometry, WindowGeomSetsEachAxis) {
  // A 2-D pool, 9x8, kernel 3x2, strides 2x1, dilations 2x3, SAME_LOWER: H out 5 (total 4),
  // W out 8 (total 3).
  WindowGeom g;
  g.nsp = 2;
  g.in = {9, 8};
  g.kernel = {3, 2};
  g.strides = {2, 1};
  g.dilations = {2, 3};
  g.pad_begin = {0, 0};
  g.pad_end = {0, 0};
  g.out = {-1, -1};
  for (int i = 0; i < 2; ++i) g.set(i, g.axis(i, AutoPad::SameLower));
  EXPECT_EQ(g.out, (std::vector<int64_t>{5, 8}));
  EXPECT_EQ(g.pad_begin, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(g.pad_end, (std::vector<int64_t>{2, 1}));
}

TEST(ConvGeometry, SplitRoundsTowardMinusInfinity) {
  EXPECT_EQ(split_pad(AutoPad::SameUpper, 5), (P{2, 3}));
  EXPECT_EQ(split_pad(AutoPad::SameLower, 5), (P{3, 2}));
  EXPECT_EQ(split_pad(AutoPad::NotSet, 5), (P{3, 2}));
  EXPECT_EQ(split_pad(AutoPad::SameUpper, 0), (P{0, 0}));
  // -3 // 2 = -2 in Python.
  EXPECT_EQ(split_pad(AutoPad::SameUpper, -3), (P{-2, -1}));
  EXPECT_EQ(split_pad(AutoPad::SameLower, -3), (P{-1, -2}));
  EXPECT_EQ(split_pad(AutoPad::SameUpper, -1), (P{-1, 0}));
  EXPECT_EQ(split_pad(AutoPad::NotSet, -1), (P{0, -1}));
}

TEST(ConvGeometry, ConvTransposePads) {
  // in 3, kernel 3, stride 2, SAME: out 6; total 2 * 2 + 3 - 6 = 1.
  EXPECT_EQ(conv_transpose_pads(AutoPad::SameUpper, 3, 6, 3, 2, 1, 0), (P{0, 1}));
  EXPECT_EQ(conv_transpose_pads(AutoPad::SameLower, 3, 6, 3, 2, 1, 0), (P{1, 0}));
  // output_padding 1 adds to the total: 2.
  EXPECT_EQ(conv_transpose_pads(AutoPad::SameUpper, 3, 6, 3, 2, 1, 1), (P{1, 1}));
  // kernel 3, dilation 2 (extent 5), in 4, stride 1, out 4: total 3 + 5 - 4 = 4.
  EXPECT_EQ(conv_transpose_pads(AutoPad::SameLower, 4, 4, 3, 1, 2, 0), (P{2, 2}));
  // An output_shape beyond the natural extent 7: out 8 gives total -1 under NOTSET.
  EXPECT_EQ(conv_transpose_pads(AutoPad::NotSet, 3, 8, 3, 2, 1, 0), (P{0, -1}));
}

}  // namespace
}  // namespace kiln::ops
