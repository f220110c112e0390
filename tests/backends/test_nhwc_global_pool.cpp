// kiln.NhwcGlobalAveragePool / NhwcGlobalMaxPool (nhwc_global_pool.cpp) against the reference
// kernels: batches, odd pixel and channel counts (off the 4-pixel unroll and the vector width),
// one pixel, and two threads splitting the pixels unevenly (images beyond one core's L2; the
// smaller ones run on one thread), or the channels as a depthwise producer split them.
#include "kernel_check.h"

#include "backends/cpu/nhwc_global_pool.h"
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

// After a depthwise conv whose team splits the channels (it reads a 1x1 conv whose team splits
// its outputs), the pool's team splits the same 64-channel parts, so each thread reads what its
// core wrote: the same averages and maxima, 1000 channels (the last part 40), at 2 threads;
// after a depthwise conv that splits rows, and at 1 thread, it does not.
TEST(NhwcGlobalPool, SplitsTheChannelsItsDepthwiseProducerSplit) {
  if (!backends::cpu::has_avx512()) GTEST_SKIP() << "kiln_depthwise's channel split runs on the AVX-512 rows";
  for (const char* op : {"NhwcGlobalAveragePool", "NhwcGlobalMaxPool"})
    for (int64_t expand_from : {192, 40}) {  // 192 x 1000 weights: the 1x1 conv splits its outputs; 40 x 1000 not
      SCOPED_TRACE(std::string(op) + " after a 1x1 conv from " + std::to_string(expand_from) + " channels");
      ir::Graph g;
      g.opsets[""] = 17;
      g.opsets["kiln"] = 1;
      const int64_t C = 1000;
      ir::Value* x = g.add_input("x", ir::TensorType::from_dims(DType::Float, {2, 7, 7, expand_from}));
      ir::Value *e = g.add_value("e"), *d = g.add_value("d"), *y = g.add_value("y");
      g.add_node("FusedConv", {x, g.add_constant("we", Tensor(DType::Float, {C, expand_from, 1, 1}))}, {e},
                 {{"channels_last", ir::Attribute::of_int(1)}}, "expand", "kiln");
      g.add_node("FusedConv", {e, g.add_constant("wd", Tensor(DType::Float, {C, 1, 3, 3}))}, {d},
                 {{"channels_last", ir::Attribute::of_int(1)},
                  {"group", ir::Attribute::of_int(C)},
                  {"pads", ir::Attribute::of_ints({1, 1, 1, 1})},
                  {"activation", ir::Attribute::of_string("Relu")}},
                 "dw", "kiln");
      ir::Node* pool = g.add_node(op, {d}, {y}, {}, "pool", "kiln");
      g.add_output(y);
      ops::ShapeInference().run(g);
      const std::optional<int> team = backends::cpu::global_pool_channel_team(*pool, 2);
      EXPECT_EQ(team.has_value(), expand_from == 192);
      EXPECT_FALSE(backends::cpu::global_pool_channel_team(*pool, 1).has_value());
      std::mt19937 rng(7);
      const Tensor in = kernel_check::random_tensor({2, 7, 7, C}, rng);
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
