#include "pass_test_util.h"

namespace kiln::passes::testing {

TEST(Cse, MergesEqualNodesAndConstants) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {2, 8});
        // Two equal shape constants from separate sources, two equal Reshapes, two Relus.
        ir::Value* r1 = b.op("Reshape", {x, b.ints({4, 4})});
        ir::Value* r2 = b.op("Reshape", {x, b.ints({4, 4})});
        ir::Value* a = b.op("Relu", {r1});
        ir::Value* c = b.op("Relu", {r2});
        b.out(b.op("Add", {a, c}));
      },
      passes_of(make_cse(), make_dce()));
  EXPECT_EQ(count(*g, "Reshape"), 1);
  EXPECT_EQ(count(*g, "Relu"), 1);
}

TEST(Cse, DifferentAttributesStayApart) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {3, 4});
        ir::Value* a = b.op("Softmax", {x}, {{"axis", I(0)}});
        ir::Value* c = b.op("Softmax", {x}, {{"axis", I(1)}});
        b.out(b.op("Add", {a, c}));
      },
      passes_of(make_cse()));
  EXPECT_EQ(count(*g, "Softmax"), 2);
}

TEST(Cse, TwoOutputsOfTheSameValue) {
  auto g = check_rewrite(
      [](Builder& b) {
        ir::Value* x = b.in("x", {3});
        b.out(b.op("Exp", {x}));
        b.out(b.op("Exp", {x}));
      },
      passes_of(make_cse(), make_dce()));
  EXPECT_EQ(count(*g, "Exp"), 1);  // the second output name comes back through an Identity
}

}  // namespace kiln::passes::testing
