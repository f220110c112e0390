// ShuffleNet's Concat -> Reshape -> Transpose -> Reshape -> Slices becomes one
// kiln.ChannelShuffle that computes the same values (reference kernels before and after).
#include "lower/fuse_channel_shuffle.h"

#include <gtest/gtest.h>

#include <random>

#include "ops/core/infer_graph.h"
#include "runtime/reference_executor.h"

namespace kiln::lower {
namespace {

struct Shuffle {
  ir::Graph g;
  // Two inputs of `half` channels on `axis` of `dims`, shuffled in `group` groups; `slices`
  // splits the result in two along the axis, else the shuffled tensor is the output.
  Shuffle(std::vector<int64_t> dims, int64_t axis, int64_t group, bool slices, std::vector<int64_t> perm_override = {}) {
    g.opsets[""] = 13;
    const int64_t half = dims[axis], C = 2 * half;
    ir::Value* a = g.add_input("a", ir::TensorType::from_dims(DType::Float, dims));
    ir::Value* b = g.add_input("b", ir::TensorType::from_dims(DType::Float, dims));
    auto ints = [&](std::vector<int64_t> v) {
      return g.add_constant(g.unique_name("c"), Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v));
    };
    ir::Value* cat = g.add_value("cat");
    g.add_node("Concat", {a, b}, {cat}, {{"axis", ir::Attribute::of_int(axis)}}, "concat");
    std::vector<int64_t> full = dims;
    full[axis] = C;
    std::vector<int64_t> split = full;
    split[axis] = C / group;
    split.insert(split.begin() + axis, group);
    ir::Value* r1 = g.add_value("r1");
    g.add_node("Reshape", {cat, ints(split)}, {r1}, {}, "split");
    std::vector<int64_t> perm(split.size());
    for (size_t k = 0; k < perm.size(); ++k) perm[k] = static_cast<int64_t>(k);
    std::swap(perm[axis], perm[axis + 1]);
    if (!perm_override.empty()) perm = perm_override;
    ir::Value* t = g.add_value("t");
    g.add_node("Transpose", {r1}, {t}, {{"perm", ir::Attribute::of_ints(perm)}}, "swap");
    ir::Value* r2 = g.add_value("r2");
    g.add_node("Reshape", {t, ints(full)}, {r2}, {}, "join");
    if (slices) {
      ir::Value* s0 = g.add_value("s0");
      ir::Value* s1 = g.add_value("s1");
      g.add_node("Slice", {r2, ints({0}), ints({half}), ints({axis})}, {s0}, {}, "lo");
      g.add_node("Slice", {r2, ints({half}), ints({C}), ints({axis})}, {s1}, {}, "hi");
      g.add_output(s0);
      g.add_output(s1);
    } else {
      g.add_output(r2);
    }
    ops::ShapeInference().run(g);
  }
};

void expect_same_outputs(Shuffle& s, int fused) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<Tensor> ins;
  for (const ir::Value* v : s.g.inputs()) {
    Tensor t(DType::Float, v->type.static_dims());
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
    ins.push_back(std::move(t));
  }
  const auto before = runtime::ReferenceExecutor(s.g).run(ins);
  EXPECT_EQ(fuse_channel_shuffle(s.g), fused);
  ops::ShapeInference().run(s.g);
  int shuffles = 0;
  for (const ir::Node* n : s.g.nodes()) shuffles += n->op_type() == "ChannelShuffle";
  EXPECT_EQ(shuffles, fused);
  const auto after = runtime::ReferenceExecutor(s.g).run(ins);
  ASSERT_EQ(before.size(), after.size());
  for (size_t k = 0; k < before.size(); ++k) {
    ASSERT_EQ(before[k].dims(), after[k].dims());
    for (int64_t i = 0; i < before[k].numel(); ++i) ASSERT_EQ(before[k].data<float>()[i], after[k].data<float>()[i]);
  }
}

TEST(FuseChannelShuffle, NchwWithSlices) {
  Shuffle s({1, 6, 5, 4}, 1, 2, true);
  expect_same_outputs(s, 1);
  EXPECT_EQ(s.g.num_nodes(), 1u);  // Concat, Reshape, Transpose, Reshape and both Slices
}

TEST(FuseChannelShuffle, NhwcLastAxisThreeGroups) {
  Shuffle s({2, 3, 5, 9}, 3, 3, true);
  expect_same_outputs(s, 1);
}

TEST(FuseChannelShuffle, WithoutSlices) {
  Shuffle s({1, 4, 3, 3}, 1, 2, false);
  expect_same_outputs(s, 1);
}

TEST(FuseChannelShuffle, OtherTransposesStay) {
  Shuffle s({1, 6, 5, 4}, 1, 2, true, {0, 1, 2, 4, 3});
  expect_same_outputs(s, 0);
}

}  // namespace
}  // namespace kiln::lower
