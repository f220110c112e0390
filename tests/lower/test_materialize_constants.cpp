// Constant nodes become constant values before lowering; a Constant that is a graph output
// stays a node.
#include "lower/materialize_constants.h"

#include <gtest/gtest.h>

#include "ops/core/infer_graph.h"

namespace kiln::lower {
namespace {

TEST(MaterializeConstants, ConstantNodesBecomeValues) {
  ir::Graph g;
  g.opsets[""] = 13;
  ir::Value* x = g.add_input("x", ir::TensorType::from_dims(DType::Float, {2, 3}));
  ir::Value* c = g.add_value("c");
  ir::Value* d = g.add_value("d");
  g.add_node("Constant", {}, {c}, {{"value", ir::Attribute::of_tensor(Tensor::from_vector<float>({3}, {1, 2, 3}))}},
             "const_c");
  g.add_node("Constant", {}, {d}, {{"value_float", ir::Attribute::of_float(0.5f)}}, "const_d");
  ir::Value* ci = g.add_value("ci");
  g.add_node("Identity", {c}, {ci}, {}, "id");
  ir::Value* y = g.add_value("y");
  g.add_node("Add", {x, ci}, {y}, {}, "add");
  g.add_output(y);
  g.add_output(d);
  ops::ShapeInference().run(g);
  EXPECT_EQ(materialize_constants(g), 2);
  ASSERT_EQ(g.num_nodes(), 2u);
  ASSERT_TRUE(g.find_value("ci")->is_constant());
  const ir::Value* cv = g.find_value("c");
  ASSERT_TRUE(cv && cv->is_constant());
  EXPECT_EQ(cv->constant().data<float>()[2], 3.f);
  EXPECT_FALSE(g.find_value("d")->is_constant());
}

}  // namespace
}  // namespace kiln::lower
