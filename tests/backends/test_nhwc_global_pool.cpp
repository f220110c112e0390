// kiln.NhwcGlobalAveragePool / NhwcGlobalMaxPool (nhwc_global_pool.cpp) against the reference
// kernels: batches, odd pixel and channel counts (off the 4-pixel unroll and the vector width),
// one pixel, and two threads splitting the pixels unevenly (images beyond one core's L2; the
// smaller ones run on one thread), or the pixels or channels as their producer split them.
#include "kernel_check.h"

#include "backends/cpu/cache_size.h"
#include "backends/cpu/nhwc_global_pool.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/simd.h"

namespace kiln {
namespace {

using kernel_check::check;

TEST(NhwcGlobalPool, AverageAndMaxOnOddShapes) {
  for (const char* op : {"NhwcGlobalAveragePool", "NhwcGlobalMaxPool"})
    for (int threads : {1, 2})
      for (const std::vector<int64_t>& d : std::vector<std::vector<int64_t>>{
               {2, 7, 5, 13}, {1, 1, 1, 3}, {1, 57, 3, 35}, {3, 9, 11, 17}, {1, 112, 112, 32}, {1, 128, 128, 64}}) {
        SCOPED_TRACE(std::string(op) + " threads " + std::to_string(threads) + " [" + std::to_string(d[0]) + "," +
                     std::to_string(d[1]) + "," + std::to_string(d[2]) + "," + std::to_string(d[3]) + "]");
        kernel_check::Case c{op, "kiln", {d}, {false}, {{d[0], 1, 1, d[3]}}};
        c.threads = threads;
        c.concurrent = threads == 1;
        check(c);
      }
}

// The pool's team splits as the team of the kernel that wrote its input did (each thread then
// reads what its core wrote): after a depthwise conv that splits the channels (it reads a 1x1
// conv that splits its outputs) or a 1x1 conv that splits its outputs, the same 64-channel parts;
// after a producer that splits pixels or rows, the pixels; after one too small for a team, one
// thread; at 1 thread, never. Each way gives the reference's averages and maxima, 1000 channels
// (the last part 40) at 2 threads.
TEST(NhwcGlobalPool, SplitsAsItsProducerSplit) {
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "kiln_depthwise's and kiln_pointwise's splits run on AVX-512";
  struct Producer {
    int64_t expand_from, pixels_side, channels;
    bool depthwise;
    int team;
    bool channels_split;
  };
  // 192 x 1000 weights: the 1x1 conv splits its outputs; 40 x 1000 its pixels. A 2x2x8 image
  // (32 outputs) is below kParallelMinElements.
  const Producer producers[] = {{192, 7, 1000, true, 2, true},
                                {40, 7, 1000, true, 2, false},
                                {192, 7, 1000, false, 2, true},
                                {40, 7, 1000, false, 2, false},
                                {16, 2, 8, false, 1, false}};
  for (const char* op : {"NhwcGlobalAveragePool", "NhwcGlobalMaxPool"})
    for (const Producer& pr : producers) {
      SCOPED_TRACE(std::string(op) + (pr.depthwise ? " after a depthwise conv after" : " after") +
                   " a 1x1 conv from " + std::to_string(pr.expand_from) + " to " + std::to_string(pr.channels) +
                   " channels on " + std::to_string(pr.pixels_side) + "x" + std::to_string(pr.pixels_side));
      ir::Graph g;
      g.opsets[""] = 17;
      g.opsets["kiln"] = 1;
      const int64_t C = pr.channels, S = pr.pixels_side;
      ir::Value* x = g.add_input("x", ir::TensorType::from_dims(DType::Float, {2, S, S, pr.expand_from}));
      ir::Value *e = g.add_value("e"), *y = g.add_value("y");
      g.add_node("FusedConv", {x, g.add_constant("we", Tensor(DType::Float, {C, pr.expand_from, 1, 1}))}, {e},
                 {{"channels_last", ir::Attribute::of_int(1)}}, "expand", "kiln");
      ir::Value* pooled = e;
      if (pr.depthwise) {
        pooled = g.add_value("d");
        g.add_node("FusedConv", {e, g.add_constant("wd", Tensor(DType::Float, {C, 1, 3, 3}))}, {pooled},
                   {{"channels_last", ir::Attribute::of_int(1)},
                    {"group", ir::Attribute::of_int(C)},
                    {"pads", ir::Attribute::of_ints({1, 1, 1, 1})},
                    {"activation", ir::Attribute::of_string("Relu")}},
                   "dw", "kiln");
      }
      ir::Node* pool = g.add_node(op, {pooled}, {y}, {}, "pool", "kiln");
      g.add_output(y);
      ops::ShapeInference().run(g);
      const backends::cpu::GlobalPoolSplit split = backends::cpu::global_pool_split(*pool, 2);
      EXPECT_EQ(split.team, pr.team);
      EXPECT_EQ(split.channels, pr.channels_split);
      EXPECT_EQ(backends::cpu::global_pool_split(*pool, 1).team, 1);
      std::mt19937 rng(7);
      const Tensor in = kernel_check::random_tensor({2, S, S, C}, rng);
      const std::vector<Tensor> want = ops::run_reference(*pool, {&in});
      auto backend = backends::make_cpu_backend(2);
      auto kernel = backend->create(*pool);
      ASSERT_TRUE(kernel);
      Tensor got(DType::Float, {2, 1, 1, C});
      kernel->run({&in}, {&got});
      for (int64_t i = 0; i < got.numel(); ++i)
        ASSERT_NEAR(got.data<float>()[i], want[0].data<float>()[i], 1e-5f) << i;
    }
}

// Without a producer (a graph input), an image beyond one core's L2 is split by pixels, a
// smaller one pooled by one thread.
TEST(NhwcGlobalPool, SplitsAGraphInputBeyondOneCoresL2) {
  for (const int64_t side : {7, 1024}) {
    ir::Graph g;
    g.opsets[""] = 17;
    g.opsets["kiln"] = 1;
    ir::Value* x = g.add_input("x", ir::TensorType::from_dims(DType::Float, {1, side, side, 16}));
    ir::Value* y = g.add_value("y");
    ir::Node* pool = g.add_node("NhwcGlobalAveragePool", {x}, {y}, {}, "pool", "kiln");
    g.add_output(y);
    ops::ShapeInference().run(g);
    const bool beyond_l2 = side * side * 16 * 4 > backends::cpu::l2_cache_bytes();
    EXPECT_EQ(backends::cpu::global_pool_split(*pool, 2).team, beyond_l2 ? 2 : 1) << side;
    EXPECT_FALSE(backends::cpu::global_pool_split(*pool, 2).channels);
  }
}

// A pool split by pixels sums the same parts in the same order whether its team runs them or one
// thread does (outside a held team, at a hold's first job, in a stretch run alone): every run
// gives the same bits, so a session and the one loaded from its .kiln file agree exactly.
TEST(NhwcGlobalPool, TheSameBitsWhoeverRunsTheParts) {
  ir::Graph g;
  g.opsets[""] = 17;
  g.opsets["kiln"] = 1;
  ir::Value* x = g.add_input("x", ir::TensorType::from_dims(DType::Float, {1, 7, 7, 40}));
  ir::Value *e = g.add_value("e"), *y = g.add_value("y");
  g.add_node("FusedConv", {x, g.add_constant("we", Tensor(DType::Float, {1000, 40, 1, 1}))}, {e},
             {{"channels_last", ir::Attribute::of_int(1)}}, "expand", "kiln");
  ir::Node* pool = g.add_node("NhwcGlobalAveragePool", {e}, {y}, {}, "pool", "kiln");
  g.add_output(y);
  ops::ShapeInference().run(g);
  const backends::cpu::GlobalPoolSplit split = backends::cpu::global_pool_split(*pool, 2);
  ASSERT_EQ(split.team, 2);
  ASSERT_FALSE(split.channels);
  std::mt19937 rng(11);
  const Tensor in = kernel_check::random_tensor({1, 7, 7, 1000}, rng);
  auto kernel = backends::make_cpu_backend(2)->create(*pool);
  ASSERT_TRUE(kernel);
  auto run = [&] {
    Tensor out(DType::Float, {1, 1, 1, 1000});
    kernel->run({&in}, {&out});
    return out;
  };
  const Tensor plain = run();
  std::vector<Tensor> held;
  backends::cpu::hold_team(2, [&] {
    held.push_back(run());  // the hold's first job: its workers are still starting
    backends::cpu::parallel_for(2, 2, [](int64_t, int64_t) {});
    for (int i = 0; i < 4; ++i) held.push_back(run());  // now they wait for the next
  });
  backends::TeamChoice alone;  // the team measured slower than one thread: the stretch runs alone
  for (bool team : {true, true, false, false}) alone.record(team, team ? 1000000 : 1000);
  ASSERT_FALSE(alone.use_team());
  backends::cpu::hold_team(2, [&] { held.push_back(run()); }, &alone);
  for (const Tensor& t : held)
    EXPECT_EQ(std::memcmp(t.raw(), plain.raw(), static_cast<size_t>(plain.nbytes())), 0);
}

TEST(NhwcGlobalPool, IsTheFirstCandidate) {
  auto backend = backends::make_cpu_backend(2);
  ir::Graph g;
  g.opsets[""] = 17;
  g.opsets["kiln"] = 1;
  ir::Value* x = g.add_input("x", ir::TensorType::from_dims(DType::Float, {1, 14, 14, 672}));
  ir::Value* y = g.add_value("y");
  ir::Node* n = g.add_node("NhwcGlobalAveragePool", {x}, {y}, {}, "gap", "kiln");
  g.add_output(y);
  ops::ShapeInference().run(g);
  auto c = backend->candidates(*n);
  ASSERT_GE(c.size(), 2u);
  EXPECT_EQ(c[0].spec.impl, "kiln");
  EXPECT_EQ(c[1].spec.impl, "onednn");
}

}  // namespace
}  // namespace kiln
