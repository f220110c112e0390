// ONNX writer: what it writes loads back with the same structure and outputs, including
// subgraphs that read outer values and hold their own constants.
#include <onnx/onnx_pb.h>

#include "frontend/onnx/exporter.h"
#include "frontend/onnx/importer.h"
#include "pass_test_util.h"

namespace kiln::passes::testing {

namespace {
// y = If(cond, then: Relu(-x) + k1, else: |-x| * k2) + Exp(x); -x is read only by the bodies.
void if_model(Builder& b) {
  ir::Value* x = b.in("x", {2, 3});
  ir::Value* cond = b.in("cond", {}, DType::Bool);
  ir::Value* pre = b.op("Neg", {x});  // read only inside the subgraphs
  auto branch = [&](bool then) {
    auto sg = std::make_shared<ir::Graph>();
    sg->parent = b.g.get();
    sg->name = then ? "then" : "else";
    ir::Value* k = sg->add_constant(then ? "k_then" : "k_else", random_tensor(DType::Float, {3}, then ? 5 : 6));
    ir::Value* r = sg->add_value(then ? "r_then" : "r_else");
    ir::Value* o = sg->add_value(then ? "o_then" : "o_else");
    sg->add_node(then ? "Relu" : "Abs", {pre}, {r});
    sg->add_node(then ? "Add" : "Mul", {r, k}, {o});
    sg->add_output(o);
    return sg;
  };
  ir::Value* y = b.op("If", {cond}, {{"then_branch", ir::Attribute::of_graph(branch(true))},
                                     {"else_branch", ir::Attribute::of_graph(branch(false))}});
  b.out(b.op("Add", {y, b.op("Exp", {b.op("Identity", {x})})}));
}
}  // namespace

// No control-flow op has a kernel yet, so this checks structure: the If and both bodies come
// back, each body with its own constant, reading the outer value by name.
TEST(Exporter, SubgraphsRoundTrip) {
  Builder b;
  if_model(b);
  auto back = onnx_fe::load_model_bytes(onnx_fe::export_model_bytes(*b.g), ".");
  ir::verify(*back);
  EXPECT_EQ(back->num_nodes(), b.g->num_nodes());
  ASSERT_EQ(count(*back, "If"), 1);
  const ir::Node* n = nullptr;
  for (const ir::Node* x : back->nodes())
    if (x->op_type() == "If") n = x;
  for (const char* br : {"then_branch", "else_branch"}) {
    auto sg = n->attr_graph(br);
    ASSERT_TRUE(sg);
    EXPECT_EQ(sg->constants().size(), 1u);
    EXPECT_EQ(sg->nodes()[0]->input(0), back->find_value(b.g->nodes()[0]->output(0)->name()));
  }
}

TEST(Exporter, TypesOpsetsAndInitializers) {
  Builder b(11);
  ir::Value* x = b.g->add_input("x", ir::TensorType(DType::Float, {ir::Dim::sym("n"), 4}));
  ir::Value* w = b.rand({4, 2});
  ir::Value* unused = b.rand({1000});
  (void)unused;
  b.out(b.op("MatMul", {x, w}));
  ops::ShapeInference().run(*b.g);
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(onnx_fe::export_model_bytes(*b.g)));
  ASSERT_EQ(m.opset_import_size(), 1);
  EXPECT_EQ(m.opset_import(0).version(), 11);
  EXPECT_EQ(m.graph().initializer_size(), 1);  // the unread constant is not written
  const auto& in = m.graph().input(0).type().tensor_type().shape();
  EXPECT_EQ(in.dim(0).dim_param(), "n");
  EXPECT_EQ(in.dim(1).dim_value(), 4);
  const auto& out = m.graph().output(0).type().tensor_type().shape();
  EXPECT_EQ(out.dim(0).dim_param(), "n");
  EXPECT_EQ(out.dim(1).dim_value(), 2);
}

}  // namespace kiln::passes::testing
