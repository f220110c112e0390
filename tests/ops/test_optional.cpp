#include <kiln/error.h>

#include "op_test_util.h"
#include "ops/core/infer_graph.h"

namespace kiln::testing {

namespace {
std::vector<Tensor> run_opt(const std::string& op, const std::vector<Tensor>& inputs, ir::Attributes attrs = {},
                            ir::TensorType* type = nullptr) {
  ir::Graph g;
  g.opsets[""] = 16;
  std::vector<ir::Value*> ins;
  std::vector<const Tensor*> ptrs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ir::TensorType ty = ir::TensorType::from_dims(inputs[i].dtype(), inputs[i].dims());
    ty.is_optional = inputs[i].is_none();
    if (inputs[i].is_none()) ty.rank_known = false;
    ins.push_back(g.add_input("in" + std::to_string(i), ty));
    ptrs.push_back(&inputs[i]);
  }
  ir::Node* n = g.add_node(op, ins, {g.add_value("out")}, std::move(attrs), "test_" + op);
  ops::ShapeInference si(0);
  si.infer_node(*n);
  if (type) *type = n->output(0)->type;
  return ops::run_reference(*n, ptrs);
}
}  // namespace

TEST(Optional, WrapTestUnwrap) {
  Tensor x = random_float({3, 5, 7});
  ir::TensorType t;
  Tensor o = run_opt("Optional", {x}, {}, &t)[0];
  EXPECT_EQ(t.str(), "optional<float[3,5,7]>");
  EXPECT_TRUE(run_opt("OptionalHasElement", {o})[0].data<bool>()[0]);
  expect_near(run_opt("OptionalGetElement", {o}, {}, &t)[0], x);
  EXPECT_EQ(t.str(), "float[3,5,7]");
}

TEST(Optional, EmptyFromTypeAttribute) {
  ir::Attribute type;
  type.kind = ir::Attribute::Kind::Type;
  type.type = ir::TensorType(DType::Int32, {ir::Dim::sym("n")});
  type.type.is_sequence = true;
  ir::TensorType t;
  Tensor none = run_opt("Optional", {}, {{"type", type}}, &t)[0];
  EXPECT_TRUE(none.is_none());
  EXPECT_EQ(none.none_inner(), ValueKind::Sequence);
  EXPECT_TRUE(t.is_optional && t.is_sequence);
  EXPECT_FALSE(run_opt("OptionalHasElement", {none})[0].data<bool>()[0]);
  EXPECT_THROW(run_opt("OptionalGetElement", {none}), Error);
  EXPECT_THROW(run_opt("Optional", {}), Error) << "no input and no type";
  EXPECT_THROW(run_opt("Optional", {}, {{"type", ir::Attribute::of_int(1)}}), Error);
}

TEST(Optional, SequenceValues) {
  Tensor seq = Tensor::sequence(DType::Float, {random_float({2})});
  ir::Graph g;
  g.opsets[""] = 16;
  ir::TensorType st = ir::TensorType::from_dims(DType::Float, {2});
  st.is_sequence = true;
  ir::Node* n = g.add_node("Optional", {g.add_input("s", st)}, {g.add_value("o")}, {}, "opt");
  ops::ShapeInference si(0);
  si.infer_node(*n);
  EXPECT_EQ(n->output(0)->type.str(), "optional<seq<float[2]>>");
  Tensor o = ops::run_reference(*n, {&seq})[0];
  EXPECT_TRUE(o.is_sequence());
}

}  // namespace kiln::testing
