// kiln.NhwcGlobalAveragePool / NhwcGlobalMaxPool (nhwc_global_pool.cpp) against the reference
// kernels: batches, odd pixel and channel counts (off the 4-pixel unroll and the vector width),
// one pixel, and two threads splitting the pixels unevenly (images beyond one core's L2; the
// smaller ones run on one thread).
#include "kernel_check.h"

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
