// Concats moved into the elementwise group that reads them: which move, the same numbers on the
// reference kernels (the body's Concat runs node by node), and the cpu backend's evaluator
// gathering the pieces tile by tile against the reference kernel of the fused node.
#include "lower/fuse_concat_elementwise.h"

#include "../passes/pass_test_util.h"
#include "backends/backend.h"
#include "fusion/collapse_groups.h"
#include "ir/printer.h"

namespace kiln::passes::testing {
namespace {

// Collapses the graph's elementwise groups as the cpu backend would, then moves the Concats.
int collapse_and_fuse(ir::Graph& g) {
  auto backend = backends::make_cpu_backend(1);
  fusion::FusionOptions o;
  o.level = 3;
  fusion::collapse_groups(g, o, [&](const ir::Node& n) { return backend->can_fuse(n); });
  ops::ShapeInference().run(g);
  return lower::fuse_concat_elementwise(g);
}

// Every fused node's cpu kernel against its reference kernel, on 1 and 2 threads.
void check_kernels(const ir::Graph& g, int expect_gathered) {
  int gathered = 0;
  for (const ir::Node* n : g.nodes()) {
    if (n->op_type() != "FusedElementwise") continue;
    gathered += count(*n->attr_graph("body"), "Concat") > 0;
    std::vector<Tensor> args;
    for (size_t i = 0; i < n->inputs().size(); ++i)
      args.push_back(random_tensor(DType::Float, n->input(i)->type.static_dims(), 50 + static_cast<uint32_t>(i)));
    std::vector<const Tensor*> ptrs;
    for (auto& t : args) ptrs.push_back(&t);
    const std::vector<Tensor> expected = ops::run_reference(*n, ptrs);
    for (int threads : {1, 2}) {
      auto kernel = backends::make_cpu_backend(threads)->create(*n);
      ASSERT_TRUE(kernel) << n->name();
      std::vector<Tensor> actual;
      std::vector<Tensor*> out_ptrs;
      for (const ir::Value* v : n->outputs()) actual.emplace_back(DType::Float, v->type.static_dims());
      for (auto& t : actual) out_ptrs.push_back(&t);
      kernel->run(ptrs, out_ptrs);
      for (size_t k = 0; k < actual.size(); ++k) expect_close(actual[k], expected[k], 1e-5);
    }
  }
  EXPECT_EQ(gathered, expect_gathered) << ir::print(g);
}

// DenseNet's pre-activation on a channels-last Concat: BN as scale and shift, then ReLU; pieces
// of odd widths (one narrower than a vector, one crossing a 256-float tile), rows long enough
// to span two tiles.
TEST(FuseConcatElementwise, ScaleShiftReluOfAConcat) {
  auto build = [](Builder& b) {
    ir::Value* x = b.in("x", {1, 9, 7, 3});
    ir::Value* y = b.in("y", {1, 9, 7, 250});
    ir::Value* z = b.in("z", {1, 9, 7, 40});
    ir::Value* c = b.op("Concat", {x, y, z}, {{"axis", I(3)}});
    ir::Value* m = b.op("Mul", {c, b.rand({1, 1, 1, 293})});
    b.out(b.op("Relu", {b.op("Add", {m, b.rand({293})})}));
  };
  auto g = check_lowering(build, collapse_and_fuse, 1);
  EXPECT_EQ(count(*g, "Concat"), 0);
  Builder ref;
  build(ref);
  EXPECT_EQ(g->outputs()[0]->name(), ref.g->outputs()[0]->name());  // the graph's output keeps its name
  check_kernels(*g, 1);
}

// A DenseNet layer deep in its block: the block's input and many 32-channel pieces, some
// narrower or wider than a vector, gathered into rows of 438 (two tiles) on two threads.
TEST(FuseConcatElementwise, ManyNarrowPieces) {
  auto build = [](Builder& b) {
    std::vector<ir::Value*> pieces{b.in("x0", {1, 20, 20, 64})};
    for (int k = 0; k < 10; ++k) pieces.push_back(b.in("p" + std::to_string(k), {1, 20, 20, 32}));
    for (int64_t w : {5, 16, 17, 16}) pieces.push_back(b.in("q" + std::to_string(w) + "_" + std::to_string(pieces.size()), {1, 20, 20, w}));
    ir::Value* c = b.op("Concat", pieces, {{"axis", I(3)}});
    ir::Value* m = b.op("Mul", {c, b.rand({1, 1, 1, 438})});
    b.out(b.op("Relu", {b.op("Add", {m, b.rand({438})})}));
  };
  auto g = check_lowering(build, collapse_and_fuse, 1);
  check_kernels(*g, 1);
}

// A second reader of the Concat, a Concat on another axis, a Concat the group reads through a
// broadcast: none move (each would need the concatenated tensor or another order).
TEST(FuseConcatElementwise, LeavesConcatsItCannotGather) {
  auto build = [](Builder& b) {
    ir::Value* x = b.in("x", {2, 5, 6});
    ir::Value* y = b.in("y", {2, 5, 4});
    ir::Value* c = b.op("Concat", {x, y}, {{"axis", I(2)}});
    b.out(b.op("Relu", {c}));
    b.out(c);
    ir::Value* d = b.op("Concat", {x, x}, {{"axis", I(1)}});
    b.out(b.op("Sigmoid", {d}));
    ir::Value* e = b.op("Concat", {b.in("u", {2, 1, 3}), b.in("v", {2, 1, 3})}, {{"axis", I(2)}});
    b.out(b.op("Add", {b.op("Tanh", {b.in("w", {2, 4, 6})}), e}));
  };
  auto g = check_lowering(build, collapse_and_fuse, 0);
  EXPECT_EQ(count(*g, "Concat"), 3);
  check_kernels(*g, 0);
}

// Two pieces, a group of two outputs (both in the Concat's shape), rank 2, 2 threads' worth of
// rows.
TEST(FuseConcatElementwise, TwoOutputsOfRankTwo) {
  auto build = [](Builder& b) {
    ir::Value* c = b.op("Concat", {b.in("x", {300, 17}), b.in("y", {300, 31})}, {{"axis", I(-1)}});
    ir::Value* s = b.op("Sigmoid", {c});
    ir::Value* t = b.op("Mul", {s, b.rand({48})});
    b.out(b.op("Tanh", {t}));
    b.out(b.op("Neg", {t}));
  };
  auto g = check_lowering(build, collapse_and_fuse, 1);
  check_kernels(*g, 1);
}

}  // namespace
}  // namespace kiln::passes::testing
