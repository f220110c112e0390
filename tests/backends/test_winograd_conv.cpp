// kiln's Winograd conv (winograd_conv.cpp), F(2x2, 3x3) and F(4x4, 3x3), against the reference
// kernel: input channels off and on the 16-lane vectors, outputs off the 64-wide blocks, odd and
// even images (partial tiles), no, symmetric and asymmetric padding, each kind of activation, two images,
// one and two threads; and the forms it leaves to oneDNN.
#include "kernel_check.h"

#include "backends/cpu/cache_size.h"
#include "backends/cpu/simd.h"
#include "backends/cpu/winograd_conv.h"

namespace kiln {
namespace {

using kernel_check::Case;
using kernel_check::check;

ir::Attributes winograd_attrs(std::vector<int64_t> pads, const std::string& act) {
  ir::Attributes a = {{"channels_last", ir::Attribute::of_int(1)}, {"pads", ir::Attribute::of_ints(pads)}};
  if (!act.empty()) a["activation"] = ir::Attribute::of_string(act);
  if (act == "Clip") a["activation_params"] = ir::Attribute::of_floats({-0.2f, 0.3f});
  if (act == "HardSigmoid") a["activation_params"] = ir::Attribute::of_floats({0.3f, 0.4f});
  if (act == "LeakyRelu") a["activation_params"] = ir::Attribute::of_floats({0.07f});
  return a;
}

std::string chosen(std::vector<int64_t> x, std::vector<int64_t> w, ir::Attributes a) {
  return kernel_check::first_fused_conv_kernel(x, w, a);
}

TEST(WinogradConv, MatchesTheReference) {
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "kiln_winograd needs AVX-512";
  struct Shape {
    int64_t h, w, c, oc;
    std::vector<int64_t> pads;
  };
  // Images under 20 pixels a side take 2x2 output tiles, the others 4x4 (partial at the edges).
  const Shape shapes[] = {{7, 9, 16, 64, {1, 1, 1, 1}},   {6, 5, 9, 5, {1, 1, 1, 1}},   {13, 13, 20, 70, {1, 1, 1, 1}},
                          {5, 8, 33, 16, {0, 0, 0, 0}},   {4, 4, 10, 17, {1, 0, 0, 1}},   {3, 3, 16, 130, {1, 1, 1, 1}},
                          {21, 23, 16, 64, {1, 1, 1, 1}}, {24, 22, 19, 33, {0, 1, 1, 0}}, {20, 20, 64, 16, {1, 1, 1, 1}}};
  for (const Shape& s : shapes)
    for (const char* act : {"", "Relu", "Clip", "SiLU", "Sigmoid", "HardSwish", "HardSigmoid", "LeakyRelu", "Gelu", "GeluTanh"})
      for (int threads : {1, 2}) {
        SCOPED_TRACE(std::to_string(s.h) + "x" + std::to_string(s.w) + " " + std::to_string(s.c) + " -> " +
                     std::to_string(s.oc) + " " + act + " threads " + std::to_string(threads));
        const int64_t oh = s.h + s.pads[0] + s.pads[2] - 2, ow = s.w + s.pads[1] + s.pads[3] - 2;
        Case c{"FusedConv", "kiln", {{2, s.h, s.w, s.c}, {s.oc, s.c, 3, 3}, {s.oc}}, {false, true, true},
               {{2, oh, ow, s.oc}}, winograd_attrs(s.pads, act)};
        c.threads = threads;
        c.tol = 2e-4f;  // the transforms round differently from the direct sums
        c.concurrent = s.h == 21 && threads == 2;  // two callers at once: each its own scratch
        ASSERT_EQ(chosen({2, s.h, s.w, s.c}, {s.oc, s.c, 3, 3}, c.attrs), "kiln_winograd");
        check(c);
      }
}

// A residual Z (ResNet's skip connection) is added before the activation, in registers and
// after the store; both tile sizes, odd images, outputs off the 16-lane vectors, two threads;
// also with the output written over Z (the plan's in-place residual).
TEST(WinogradConv, AddsTheResidual) {
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "kiln_winograd needs AVX-512";
  struct Shape {
    int64_t h, w, c, oc;
  };
  for (const Shape s : {Shape{7, 9, 16, 64}, Shape{21, 23, 19, 33}, Shape{5, 5, 32, 130}})
    for (const char* act : {"", "Relu", "SiLU"})
      for (int threads : {1, 2}) {
        SCOPED_TRACE(std::to_string(s.h) + "x" + std::to_string(s.w) + " " + std::to_string(s.c) + " -> " +
                     std::to_string(s.oc) + " " + act + " threads " + std::to_string(threads));
        Case c{"FusedConv", "kiln", {{2, s.h, s.w, s.c}, {s.oc, s.c, 3, 3}, {s.oc}, {2, s.h, s.w, s.oc}},
               {false, true, true, false}, {{2, s.h, s.w, s.oc}}, winograd_attrs({1, 1, 1, 1}, act)};
        c.threads = threads;
        c.tol = 2e-4f;
        c.written_over = 3;
        ASSERT_TRUE(check(c));
      }
  ir::Graph g;
  g.opsets["kiln"] = 1;
  ir::Value* x = g.add_input("x", ir::TensorType::from_dims(DType::Float, {1, 9, 9, 16}));
  ir::Value* z = g.add_input("z", ir::TensorType::from_dims(DType::Float, {1, 9, 9, 32}));
  ir::Value* y = g.add_value("y");
  ir::Node* n = g.add_node("FusedConv", {x, g.add_constant("w", Tensor(DType::Float, {32, 16, 3, 3})), nullptr, z},
                           {y}, winograd_attrs({1, 1, 1, 1}, "Relu"), "n", "kiln");
  g.add_output(y);
  ops::ShapeInference().run(g);
  std::string first;
  const auto one_thread = backends::make_cpu_backend(1);  // the candidates build on it
  for (const auto& k : one_thread->candidates(*n))
    if (first.empty() && k.make()) first = k.spec.impl;
  EXPECT_EQ(first, "kiln_winograd");
  EXPECT_TRUE(backends::cpu::kiln_winograd_accepts(*n));
  // The CPU backend runs none of its Winograd convs blocked, so the layout pass leaves them NHWC;
  // without kiln's Winograd, oneDNN's runs this one (16 input channels) blocked.
  auto backend = backends::make_cpu_backend(1);
  EXPECT_FALSE(backend->runs_blocked(*n));
  backend->set_disabled_kernels({"kiln_winograd"});
  EXPECT_TRUE(backend->runs_blocked(*n));
  ir::Value* x8 = g.add_input("x8", ir::TensorType::from_dims(DType::Float, {1, 9, 9, 8}));
  ir::Value* y8 = g.add_value("y8");
  ir::Node* n8 = g.add_node("FusedConv", {x8, g.add_constant("w8", Tensor(DType::Float, {32, 8, 3, 3}))}, {y8},
                            winograd_attrs({1, 1, 1, 1}, "Relu"), "n8", "kiln");
  ops::ShapeInference().run(g);
  EXPECT_FALSE(backend->runs_blocked(*n8));  // under oneDNN's 16-channel blocks: direct, NHWC
}

TEST(WinogradConv, LeavesOtherFormsToOneDnn) {
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "kiln_winograd needs AVX-512";
  ir::Attributes strided = winograd_attrs({1, 1, 1, 1}, "Relu");
  strided["strides"] = ir::Attribute::of_ints({2, 2});
  EXPECT_NE(chosen({1, 9, 9, 16}, {32, 16, 3, 3}, strided), "kiln_winograd");
  ir::Attributes grouped = winograd_attrs({1, 1, 1, 1}, "Relu");
  grouped["group"] = ir::Attribute::of_int(2);
  EXPECT_NE(chosen({1, 9, 9, 16}, {32, 8, 3, 3}, grouped), "kiln_winograd");
  EXPECT_NE(chosen({1, 9, 9, 16}, {32, 16, 5, 5}, winograd_attrs({2, 2, 2, 2}, "")), "kiln_winograd");
  ir::Attributes blocked = winograd_attrs({1, 1, 1, 1}, "Relu");
  blocked["x_blocked"] = ir::Attribute::of_int(1);
  EXPECT_NE(chosen({1, 9, 9, 16}, {32, 16, 3, 3}, blocked), "kiln_winograd");
}

// Both Winograd kernels transform 16-channel blocks of the input: a 3-channel image (a U-Net's
// first conv) would be 13 lanes of padding in 16, more products than the direct conv's, so it
// runs direct; from 5 channels (F(4x4, 3x3)) or 8 (F(2x2, 3x3), under 20 pixels a side)
// kiln's takes it.
TEST(WinogradConv, AFewChannelImageRunsDirect) {
  const std::string k = chosen({1, 64, 64, 3}, {16, 3, 3, 3}, winograd_attrs({1, 1, 1, 1}, "Relu"));
  EXPECT_NE(k, "onednn_winograd");
  EXPECT_NE(k, "kiln_winograd");
  EXPECT_NE(k, "");
  if (!backends::cpu::has_avx512()) return;
  EXPECT_NE(chosen({1, 64, 64, 4}, {16, 4, 3, 3}, winograd_attrs({1, 1, 1, 1}, "Relu")), "kiln_winograd");
  EXPECT_EQ(chosen({1, 64, 64, 5}, {16, 5, 3, 3}, winograd_attrs({1, 1, 1, 1}, "Relu")), "kiln_winograd");
  EXPECT_NE(chosen({1, 12, 12, 7}, {16, 7, 3, 3}, winograd_attrs({1, 1, 1, 1}, "Relu")), "kiln_winograd");
  EXPECT_EQ(chosen({1, 12, 12, 8}, {16, 8, 3, 3}, winograd_attrs({1, 1, 1, 1}, "Relu")), "kiln_winograd");
}

// Winograd's transformed weights are (n + 2)^2 / 9 times the direct conv's and each is used once
// per tile: on a few pixels of many channels their stream costs more than the products Winograd
// saves. The shapes are real layers: ResNet-50's and Inception-v3's late 3x3 convs at inputs
// of 224/299 (Winograd measured 5-20% faster) and 160 (direct 11-24% faster), DenseNet-121's
// 5x5 layers at 160 (few weights: Winograd, whose kernel skips oneDNN's call, 6% faster).
TEST(WinogradConv, PaysWhereItsWeightStreamIsWorthTheProductsItSaves) {
  using backends::cpu::WinogradShape;
  using backends::cpu::winograd_pays;
  auto same = [](int64_t hw, int64_t c, int64_t oc) { return WinogradShape{hw, hw, c, hw, hw, oc, 3, 3, 1, 1}; };
  EXPECT_TRUE(winograd_pays(same(56, 64, 64)));
  EXPECT_TRUE(winograd_pays(same(14, 256, 256)));
  EXPECT_TRUE(winograd_pays(same(10, 256, 256)));
  EXPECT_TRUE(winograd_pays(same(7, 512, 512)));
  EXPECT_TRUE(winograd_pays(same(8, 448, 384)));
  EXPECT_FALSE(winograd_pays(same(5, 512, 512)));
  EXPECT_FALSE(winograd_pays(same(3, 448, 384)));
  EXPECT_TRUE(winograd_pays(same(5, 128, 32)));
  // The node form asks the same of either layout, and oneDNN's Winograd follows it: the
  // blocked-layout pass leaves the 5x5 conv channels-last (oneDNN's direct conv then).
  if (!backends::cpu::has_avx512()) return;
  for (auto [hw, pays] : {std::pair<int64_t, bool>{7, true}, {5, false}}) {
    SCOPED_TRACE(hw);
    const std::string k = chosen({1, hw, hw, 512}, {512, 512, 3, 3}, winograd_attrs({1, 1, 1, 1}, "Relu"));
    EXPECT_EQ(k == "kiln_winograd", pays) << k;
    EXPECT_NE(k, "onednn_winograd");
    ir::Graph g;
    g.opsets["kiln"] = 1;
    ir::Value* x = g.add_input("x", ir::TensorType::from_dims(DType::Float, {1, hw, hw, 512}));
    ir::Value* y = g.add_value("y");
    ir::Node* n = g.add_node("FusedConv", {x, g.add_constant("w", Tensor(DType::Float, {512, 512, 3, 3}))}, {y},
                             winograd_attrs({1, 1, 1, 1}, "Relu"), "n", "kiln");
    g.add_output(y);
    ops::ShapeInference().run(g);
    EXPECT_EQ(winograd_pays(*n), pays);
    auto backend = backends::make_cpu_backend(1);
    backend->set_disabled_kernels({"kiln_winograd"});
    EXPECT_EQ(backend->runs_blocked(*n), pays);
    std::string first;  // without kiln's Winograd
    for (const auto& c : backend->candidates(*n))
      if (first.empty() && c.make()) first = c.spec.impl;
    EXPECT_EQ(first == "onednn_winograd", pays) << first;
  }
}

// F(4x4, 3x3)'s rounding error on a deep conv (256 input channels, inputs and weights in
// [-1, 1], outputs up to about 60): against the conv in double, the largest error stays near
// what the interpolation points 0, -1, 1, 1/2, -2 give (3.2e-4 on this data); the points 0, +-1,
// +-2 gave 9.5e-4.
TEST(WinogradConv, FourByFourTilesKeepTheirRoundingErrorSmall) {
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "kiln_winograd needs AVX-512";
  const int64_t H = 24, C = 256, OC = 64;
  ir::Graph g;
  g.opsets[""] = 17;
  g.opsets["kiln"] = 1;
  std::mt19937 rng(11);
  ir::Value* x = g.add_input("x", ir::TensorType::from_dims(DType::Float, {1, H, H, C}));
  const Tensor wt = kernel_check::random_tensor({OC, C, 3, 3}, rng);
  ir::Value* y = g.add_value("y");
  ir::Node* n = g.add_node("FusedConv", {x, g.add_constant("w", wt)}, {y}, winograd_attrs({1, 1, 1, 1}, ""), "n", "kiln");
  g.add_output(y);
  ops::ShapeInference().run(g);
  auto conv = backends::cpu::make_kiln_winograd(*n, 1, 0, 4, 24, "tiles");
  ASSERT_TRUE(conv);
  const Tensor in = kernel_check::random_tensor({1, H, H, C}, rng);
  Tensor out(DType::Float, {1, H, H, OC});
  conv->run({&in, nullptr, nullptr}, {&out});
  const float* xv = in.data<float>();
  const float* wv = wt.data<float>();
  double worst = 0;
  for (int64_t oy = 0; oy < H; ++oy)
    for (int64_t ox = 0; ox < H; ++ox)
      for (int64_t o = 0; o < OC; ++o) {
        double sum = 0;
        for (int64_t ky = 0; ky < 3; ++ky)
          for (int64_t kx = 0; kx < 3; ++kx) {
            const int64_t iy = oy + ky - 1, ix = ox + kx - 1;
            if (iy < 0 || iy >= H || ix < 0 || ix >= H) continue;
            for (int64_t c = 0; c < C; ++c) sum += double(xv[(iy * H + ix) * C + c]) * wv[((o * C + c) * 3 + ky) * 3 + kx];
          }
        worst = std::max(worst, std::fabs(sum - out.data<float>()[(oy * H + ox) * OC + o]));
      }
  EXPECT_LT(worst, 5e-4);
}

// A team splitting the output blocks (each thread transforms the whole input, reads its part of
// the weights) computes what one thread does: even and uneven blocks of 64, both tile sizes,
// activations applied in and after the registers, two images.
TEST(WinogradConv, SplittingTheOutputsMatchesOneThread) {
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "kiln_winograd needs AVX-512";
  struct Shape {
    int64_t h, c, oc;
    int tile;
  };
  for (const Shape& s : {Shape{7, 40, 128, 2}, Shape{9, 19, 130, 2}, Shape{22, 33, 200, 4}})
    for (const char* act : {"Relu", "SiLU"}) {
      SCOPED_TRACE(std::to_string(s.h) + " " + std::to_string(s.c) + " -> " + std::to_string(s.oc) + " " + act);
      ir::Graph g;
      g.opsets[""] = 17;
      g.opsets["kiln"] = 1;
      std::mt19937 rng(3);
      ir::Value* x = g.add_input("x", ir::TensorType::from_dims(DType::Float, {2, s.h, s.h, s.c}));
      ir::Value* w = g.add_constant("w", kernel_check::random_tensor({s.oc, s.c, 3, 3}, rng));
      ir::Value* b = g.add_constant("b", kernel_check::random_tensor({s.oc}, rng));
      ir::Value* y = g.add_value("y");
      ir::Node* n = g.add_node("FusedConv", {x, w, b}, {y}, winograd_attrs({1, 1, 1, 1}, act), "n", "kiln");
      g.add_output(y);
      ops::ShapeInference().run(g);
      auto one = backends::cpu::make_kiln_winograd(*n, 1, 0, s.tile, 24, "tiles");
      auto team = backends::cpu::make_kiln_winograd(*n, 2, 0, s.tile, 8, "outputs");
      ASSERT_TRUE(one && team);
      const Tensor in = kernel_check::random_tensor({2, s.h, s.h, s.c}, rng);
      Tensor a(DType::Float, y->type.static_dims()), c(DType::Float, y->type.static_dims());
      one->run({&in, nullptr, nullptr}, {&a});
      team->run({&in, nullptr, nullptr}, {&c});
      for (int64_t i = 0; i < a.numel(); ++i) ASSERT_NEAR(c.data<float>()[i], a.data<float>()[i], 1e-5f) << i;
    }
}

// A ReLU conv of `x` (NHWC) -> `oc` outputs, pad 1, on kiln_winograd against the reference at one
// and two threads.
void check_winograd_relu(std::vector<int64_t> x, int64_t oc, float tol) {
  for (int threads : {1, 2}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    const std::vector<int64_t> w{oc, x[3], 3, 3};
    Case c{"FusedConv", "kiln", {x, w, {oc}}, {false, true, true}, {{x[0], x[1], x[2], oc}},
           winograd_attrs({1, 1, 1, 1}, "Relu")};
    c.threads = threads;
    c.tol = tol;
    ASSERT_EQ(chosen(x, w, c.attrs), "kiln_winograd");
    ASSERT_TRUE(check(c));
  }
}

// Weights beyond a core's L2 (several MiB here: 512 channels in, 260 out, the last 64-wide panel
// narrower) are fetched a panel ahead while the GEMMs run: the same sums, one and two threads,
// the tiles or the outputs split.
TEST(WinogradConv, WeightsBeyondL2MatchTheReference) {
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "kiln_winograd needs AVX-512";
  check_winograd_relu({1, 6, 7, 512}, 260, 5e-4f);
}

// Transformed weights over half a core's L2 come from memory again for every block of tiles, so
// such a conv takes the fewest blocks whose transformed input and products fit the L2 beside two
// weight panels (resnet50's 14x14 256 -> 256: one block of 49 tiles on a 2 MiB L2); weights that
// stay in the L2 keep kWinogradBlockTiles. The same sums in the larger blocks, one and two
// threads.
TEST(WinogradConv, BlocksAreAsFewAsTheL2HoldsWhereTheWeightsDoNot) {
  using backends::cpu::kWinogradBlockTiles;
  using backends::cpu::winograd_block_tiles;
  const double l2 = static_cast<double>(backends::cpu::l2_cache_bytes());
  // 16 -> 16 channels: 36 KiB of weights.
  EXPECT_EQ(winograd_block_tiles({56, 56, 16, 56, 56, 16, 3, 3, 1, 1}, 4, 1), kWinogradBlockTiles);
  const backends::cpu::WinogradShape s14{14, 14, 256, 14, 14, 256, 3, 3, 1, 1};
  const int64_t tiles = 49;
  const double per_tile = 16.0 * (256 + 256) * 4, room = l2 - 2.0 * 256 * 64 * 4;
  for (int threads : {1, 2}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    const int64_t bt = winograd_block_tiles(s14, 2, threads);
    ASSERT_GE(bt, kWinogradBlockTiles);
    // The blocks WinogradConv makes of it, at least one per thread.
    int64_t blocks = std::max<int64_t>(1, tiles / bt);
    blocks = (blocks + threads - 1) / threads * threads;
    const int64_t largest = (tiles + blocks - 1) / blocks;
    if (room / per_tile > kWinogradBlockTiles) {
      EXPECT_LE(largest * per_tile, room);  // each block fits
      if (blocks > threads) {  // and one block fewer per thread would not
        EXPECT_GT((tiles + blocks - threads - 1) / (blocks - threads) * per_tile, room);
      }
    } else {
      EXPECT_EQ(bt, kWinogradBlockTiles);
    }
  }
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "kiln_winograd needs AVX-512";
  check_winograd_relu({1, 14, 14, 256}, 256, 5e-4f);
}

// The team splits the outputs only where the tiles make fewer blocks than threads: there each
// thread would read all the weights for its one small block. Where every thread gets blocks of
// its own (ResNet's 28x28 and 14x14 layers), it splits the tiles and reads only its part of the
// input, which the layer before wrote on the same core.
TEST(WinogradConv, SplitsTheOutputsWhereTheTilesMakeFewerBlocksThanThreads) {
  using backends::cpu::winograd_split;
  const backends::cpu::WinogradShape s7{7, 7, 512, 7, 7, 512, 3, 3, 1, 1};
  const backends::cpu::WinogradShape s14{14, 14, 256, 14, 14, 256, 3, 3, 1, 1};
  const backends::cpu::WinogradShape s28{28, 28, 128, 28, 28, 128, 3, 3, 1, 1};
  EXPECT_EQ(winograd_split(s7, 2, 2, 24), "outputs");   // 16 tiles: one block
  EXPECT_EQ(winograd_split(s7, 2, 1, 24), "tiles");     // one thread
  EXPECT_EQ(winograd_split(s14, 2, 2, 24), "tiles");    // 49 tiles: two blocks
  EXPECT_EQ(winograd_split(s14, 2, 2, 48), "outputs");  // one block of 49
  EXPECT_EQ(winograd_split(s28, 4, 2, 24), "tiles");
  // Blocks sized to a thread's share (as winograd_block_tiles makes them where the weights
  // pass the L2: 25 of 49 tiles) are blocks of their own, though 49 tiles make one such block.
  EXPECT_EQ(winograd_split(s28, 4, 2, 25), "tiles");
  EXPECT_EQ(winograd_split(s14, 2, 2, 25), "tiles");
  // Weights beyond L2 on an image of three blocks (inception_v3's 35x35, 96 -> 96): each thread
  // has a block of its own, so the tiles, even though a thread reads the weights twice.
  EXPECT_EQ(winograd_split({35, 35, 96, 35, 35, 96, 3, 3, 1, 1}, 4, 2, 24), "tiles");
  // Output blocks of 64 that do not share out evenly: the tiles.
  EXPECT_EQ(winograd_split({7, 7, 512, 7, 7, 192, 3, 3, 1, 1}, 2, 2, 24), "tiles");
}

}  // namespace
}  // namespace kiln
