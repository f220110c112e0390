// The cpu backend's Tile against the reference kernel: repeats on every axis (the innermost too),
// zero and one repeats, element sizes, a large tile on two threads; run-time repeats declined.
#include "one_node.h"

namespace kiln {
namespace {

using one_node::check;
using one_node::In;
using one_node::ints;
using one_node::OneNode;
using one_node::random;

OneNode tile(DType t, const std::vector<int64_t>& dims, const std::vector<int64_t>& repeats, bool constant = true) {
  return OneNode("Tile", {In{random(t, dims)}, In{ints(repeats), constant}}, 1, {}, 13);
}

TEST(CpuTile, EveryAxis) {
  check(tile(DType::Float, {2, 3, 5}, {1, 1, 3}));
  check(tile(DType::Float, {2, 3, 5}, {2, 3, 1}));
  check(tile(DType::Float, {2, 3, 5}, {3, 2, 2}));
  check(tile(DType::Float, {4}, {5}));
  check(tile(DType::Int64, {3, 2}, {2, 0}));
  check(tile(DType::Float16, {1, 7, 1, 3}, {2, 1, 4, 1}));
  check(tile(DType::Float, {1, 64, 40, 40}, {1, 1, 2, 2}), true, 0.f, 2);
}

TEST(CpuTile, RunTimeRepeatsStayOnTheReference) { check(tile(DType::Float, {2, 3}, {2, 2}, false), false); }

}  // namespace
}  // namespace kiln
