#include <gtest/gtest.h>
#include <kiln/tensor.h>

#include <limits>
#include <memory>
#include <string>

#include "ir/graph.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace kiln::ir {
namespace {

TEST(Printer, GoldenConvGraph) {
  Graph g;
  g.name = "main";
  g.opsets[""] = 13;
  Value* in = g.add_input("input", TensorType(DType::Float, {Dim::sym("batch"), 3, 224, 224}));
  Value* w = g.add_constant("w", Tensor(DType::Float, {64, 3, 7, 7}));
  Value* y = g.add_value("y", TensorType(DType::Float, {Dim::sym("batch"), 64, 112, 112}));
  g.add_node("Conv", {in, w}, {y},
             {{"strides", Attribute::of_ints({2, 2})}, {"pads", Attribute::of_ints({3, 3, 3, 3})}}, "conv1");
  g.add_output(y);
  EXPECT_EQ(print(g),
            "graph main (opset ai.onnx 13)\n"
            "  input  %input: float[batch,3,224,224]\n"
            "  const  %w: float[64,3,7,7]\n"
            "  %y: float[batch,64,112,112] = Conv(%input, %w) {pads=[3,3,3,3], strides=[2,2]}  # conv1\n"
            "  output %y\n");
}

TEST(Printer, GoldenWithSubgraphsAndOddNames) {
  Graph g;
  g.name = "model";
  g.opsets[""] = 17;
  g.opsets["com.microsoft"] = 1;
  Value* cond = g.add_input("cond", TensorType(DType::Bool, {}));
  Value* x = g.add_input("x:0", TensorType(DType::Float, {Dim::sym("n"), Dim::unknown()}));
  Value* shape = g.add_constant("shape", Tensor::from_vector<int64_t>({2}, {1, -1}));
  Value* r = g.add_value("my out", TensorType::unranked(DType::Float));
  Value* idx = g.add_value("idx");

  auto then_g = std::make_shared<Graph>();
  then_g->name = "then_body";
  then_g->parent = &g;
  Value* one = then_g->add_constant("one", Tensor::scalar<float>(1.5f));
  Value* t = then_g->add_value("t", TensorType(DType::Float, {Dim::sym("n"), Dim::unknown()}));
  then_g->add_node("Add", {x, one}, {t}, {}, "add");
  then_g->add_output(t);
  auto else_g = std::make_shared<Graph>();
  else_g->name = "else_body";
  else_g->parent = &g;
  Value* e = else_g->add_value("e");
  else_g->add_node("Reshape", {x, shape}, {e}, {{"allowzero", Attribute::of_int(0)}}, "");
  else_g->add_output(e);

  g.add_node("If", {cond}, {r},
             {{"then_branch", Attribute::of_graph(then_g)}, {"else_branch", Attribute::of_graph(else_g)}},
             "if \"1\"");
  Value* mx = g.add_value("mx", TensorType(DType::Float, {Dim::sym("n")}));
  g.add_node("ArgMaxLike", {r, nullptr}, {mx, idx},
             {{"alpha", Attribute::of_float(1.0f)},
              {"mode", Attribute::of_string("a\"b")},
              {"scales", Attribute::of_floats({0.5f, 2.0f, 1e-7f})},
              {"names", Attribute::of_ints({})},
              {"value", Attribute::of_tensor(Tensor::from_vector<int32_t>({3}, {4, 5, 6}))}},
             "", "com.microsoft");
  g.add_output(mx);
  g.add_output(r);

  EXPECT_NO_THROW(verify(g));
  // Unnamed nodes get "<op>__<counter>" names from their graph.
  EXPECT_EQ(print(g),
            "graph model (opset ai.onnx 17, com.microsoft 1)\n"
            "  input  %cond: bool[]\n"
            "  input  %\"x:0\": float[n,?]\n"
            "  const  %shape: int64[2] = [1,-1]\n"
            "  %\"my out\": float[*] = If(%cond)  # \"if \\\"1\\\"\"\n"
            "    else_branch: graph else_body\n"
            "      %e = Reshape(%\"x:0\", %shape) {allowzero=0}  # Reshape__0\n"
            "      output %e\n"
            "    then_branch: graph then_body\n"
            "      const  %one: float[] = 1.5\n"
            "      %t: float[n,?] = Add(%\"x:0\", %one)  # add\n"
            "      output %t\n"
            "  %mx: float[n], %idx = com.microsoft.ArgMaxLike(%\"my out\", _) {alpha=1.0, mode=\"a\\\"b\", "
            "names=[], scales=[0.5,2.0,1e-07], value=tensor int32[3] [4,5,6]}  # ArgMaxLike__0\n"
            "  output %mx\n"
            "  output %\"my out\"\n");
}

TEST(Printer, Names) {
  EXPECT_EQ(print_name("conv1/weight.0-a_b"), "conv1/weight.0-a_b");
  EXPECT_EQ(print_name("a b"), "\"a b\"");
  EXPECT_EQ(print_name("a:b"), "\"a:b\"");
  EXPECT_EQ(print_name(""), "\"\"");
  EXPECT_EQ(print_name("q\"\\\n\x01"), "\"q\\\"\\\\\\n\\x01\"");
}

TEST(Printer, Attributes) {
  EXPECT_EQ(print_attribute(Attribute::of_int(-3)), "-3");
  EXPECT_EQ(print_attribute(Attribute::of_float(0.1f)), "0.1");
  EXPECT_EQ(print_attribute(Attribute::of_float(-2.0f)), "-2.0");
  EXPECT_EQ(print_attribute(Attribute::of_float(std::numeric_limits<float>::infinity())), "inf");
  EXPECT_EQ(print_attribute(Attribute::of_string("NOTSET")), "\"NOTSET\"");
  EXPECT_EQ(print_attribute(Attribute::of_ints({1, -1})), "[1,-1]");
  // Big tensors print only their type.
  EXPECT_EQ(print_attribute(Attribute::of_tensor(Tensor(DType::Float, {3, 3}))), "tensor float[3,3]");
  EXPECT_EQ(print_attribute(Attribute::of_tensor(Tensor::from_vector<bool>({2}, {true, false}))),
            "tensor bool[2] [true,false]");
  EXPECT_EQ(print_attribute(Attribute::of_tensor(Tensor::scalar<double>(0.25))), "tensor double[] 0.25");
  EXPECT_EQ(print_attribute(Attribute::of_tensor(Tensor::from_vector<std::string>({1}, {"hi"}))),
            "tensor string[1] [\"hi\"]");
  Attribute strs;
  strs.kind = Attribute::Kind::Strings;
  strs.strings = {"a", "b c"};
  EXPECT_EQ(print_attribute(strs), "[\"a\",\"b c\"]");
  auto sub = std::make_shared<Graph>();
  sub->name = "body";
  EXPECT_EQ(print_attribute(Attribute::of_graph(sub)), "graph body");
}

TEST(Printer, GraphsAttributeAndNoOutputs) {
  Graph g;
  g.name = "g";
  Value* x = g.add_input("x", TensorType(DType::Float, {2}));
  auto b0 = std::make_shared<Graph>();
  b0->name = "b0";
  b0->parent = &g;
  b0->add_output(x);
  Attribute gs;
  gs.kind = Attribute::Kind::Graphs;
  gs.graphs = {b0};
  g.add_node("Print", {x}, {}, {{"bodies", gs}}, "p");
  EXPECT_EQ(print(g),
            "graph g\n"
            "  input  %x: float[2]\n"
            "  Print(%x)  # p\n"
            "    bodies[0]: graph b0\n"
            "      output %x\n");
}

}  // namespace
}  // namespace kiln::ir
