// kiln.NhwcMaxPool / NhwcAveragePool (nhwc_pool.cpp) against the reference kernels: padding,
// strides, dilations, ceil_mode windows hanging past the end pad, count_include_pad, auto_pad,
// odd channel counts, batches and two threads. The ONNX node tests run them too (conformance).
#include "kernel_check.h"

namespace kiln {
namespace {

using kernel_check::Case;
using kernel_check::check;
using A = ir::Attribute;

ir::Attributes window(std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> pads) {
  return {{"kernel_shape", A::of_ints(k)}, {"strides", A::of_ints(s)}, {"pads", A::of_ints(pads)}};
}

// One pool `op` on `threads` against the reference.
bool pool_matches(const char* op, int threads, std::vector<int64_t> in, std::vector<int64_t> out, ir::Attributes a) {
  Case c{op, "kiln", {std::move(in)}, {false}, {std::move(out)}, std::move(a)};
  c.threads = threads;
  return check(c);
}

TEST(NhwcPool, MaxAndAverageWindows) {
  for (const char* op : {"NhwcMaxPool", "NhwcAveragePool"})
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::string(op) + " threads " + std::to_string(threads));
      auto run = [&](std::vector<int64_t> in, std::vector<int64_t> out, ir::Attributes a) {
        EXPECT_TRUE(pool_matches(op, threads, std::move(in), std::move(out), std::move(a)));
      };
      // squeezenet1_1's first pool: 3x3 stride 2, ceil_mode (55 = ceil((111 - 3) / 2) + 1).
      auto sq = window({3, 3}, {2, 2}, {0, 0, 0, 0});
      sq["ceil_mode"] = A::of_int(1);
      run({1, 111, 111, 64}, {1, 55, 55, 64}, sq);
      run({2, 17, 19, 5}, {2, 9, 10, 5}, window({3, 3}, {2, 2}, {1, 1, 1, 1}));
      run({1, 8, 7, 33}, {1, 8, 7, 33}, window({3, 2}, {1, 1}, {1, 0, 1, 1}));
      auto ceil = window({2, 2}, {2, 2}, {0, 1, 1, 0});
      ceil["ceil_mode"] = A::of_int(1);
      run({1, 7, 6, 3}, {1, 4, 4, 3}, ceil);
      auto same = window({3, 3}, {2, 2}, {0, 0, 0, 0});
      same.erase("pads");
      same["auto_pad"] = A::of_string("SAME_LOWER");
      run({1, 9, 8, 17}, {1, 5, 4, 17}, same);
    }
  auto inc = window({3, 3}, {2, 2}, {1, 1, 1, 1});
  inc["count_include_pad"] = A::of_int(1);
  check({"NhwcAveragePool", "kiln", {{1, 9, 10, 7}}, {false}, {{1, 5, 5, 7}}, inc});
  auto dil = window({2, 3}, {1, 2}, {1, 1, 0, 2});
  dil["dilations"] = A::of_ints({2, 2});
  check({"NhwcMaxPool", "kiln", {{1, 9, 10, 7}}, {false}, {{1, 8, 5, 7}}, dil});
}

// The columns whose windows lie inside the input go a faster way than the edges (two at a time,
// whole blocks of 64 channels without masks): channels past one block of 64 and off the 16-lane
// vectors, whole blocks with an odd count of inside columns, a 1-wide window, windows wider than the input
// (no inside columns), dilated and padded windows, averages with and without the padding.
TEST(NhwcPool, InsideAndEdgeColumnsAgree) {
  for (const char* op : {"NhwcMaxPool", "NhwcAveragePool"})
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::string(op) + " threads " + std::to_string(threads));
      auto run = [&](std::vector<int64_t> in, std::vector<int64_t> out, ir::Attributes a) {
        ASSERT_TRUE(pool_matches(op, threads, std::move(in), std::move(out), std::move(a)));
      };
      run({1, 11, 13, 130}, {1, 6, 7, 130}, window({3, 3}, {2, 2}, {1, 1, 1, 1}));
      // Whole blocks of 64 channels, inside columns in pairs and one left over (7 and 5).
      run({1, 7, 9, 128}, {1, 7, 9, 128}, window({3, 3}, {1, 1}, {1, 1, 1, 1}));
      run({1, 11, 13, 192}, {1, 6, 7, 192}, window({3, 3}, {2, 2}, {1, 1, 1, 1}));
      run({1, 6, 9, 70}, {1, 3, 5, 70}, window({1, 1}, {2, 2}, {0, 0, 0, 0}));
      run({1, 5, 3, 20}, {1, 5, 3, 20}, window({3, 5}, {1, 1}, {1, 2, 1, 2}));
      auto dil = window({3, 3}, {1, 1}, {2, 2, 2, 2});
      dil["dilations"] = A::of_ints({2, 2});
      if (std::string(op) == "NhwcMaxPool") run({1, 9, 12, 96}, {1, 9, 12, 96}, dil);
      auto inc = window({3, 3}, {1, 1}, {1, 1, 1, 1});
      inc["count_include_pad"] = A::of_int(1);
      if (std::string(op) == "NhwcAveragePool") run({2, 7, 9, 144}, {2, 7, 9, 144}, inc);
    }
}

}  // namespace
}  // namespace kiln
