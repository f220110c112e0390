#include <gtest/gtest.h>
#include <kiln/error.h>
#include <onnx/onnx_pb.h>

#include <fstream>

#include "frontend/onnx/importer.h"
#include "frontend/onnx/tensor_proto.h"

namespace kiln::testing {

namespace fs = std::filesystem;

namespace {
fs::path tmp(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("kiln_fe_" + std::to_string(getpid()) + "_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

onnx::ModelProto base_model(int opset = 13) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* os = m.add_opset_import();
  os->set_version(opset);
  m.mutable_graph()->set_name("g");
  return m;
}

void add_io(onnx::ValueInfoProto* vi, const std::string& name, std::vector<std::string> dims) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (const auto& d : dims) {
    auto* dim = tt->mutable_shape()->add_dim();
    if (!d.empty() && std::isdigit(d[0])) dim->set_dim_value(std::stoll(d));
    else dim->set_dim_param(d);
  }
}

std::unique_ptr<ir::Graph> import(const onnx::ModelProto& m, const fs::path& dir = ".") {
  std::string bytes;
  m.SerializeToString(&bytes);
  return onnx_fe::load_model_bytes(bytes, dir);
}
}  // namespace

TEST(Importer, NamesWithAnyCharactersAndSymbolicDims) {
  auto m = base_model();
  auto* g = m.mutable_graph();
  add_io(g->add_input(), "input:0", {"batch", "3"});
  add_io(g->add_output(), "out 'quoted' name", {"batch", "3"});
  auto* n = g->add_node();
  n->set_op_type("Relu");
  n->add_input("input:0");
  n->add_output("out 'quoted' name");
  auto graph = import(m);
  ASSERT_EQ(graph->inputs().size(), 1u);
  EXPECT_EQ(graph->inputs()[0]->name(), "input:0");
  EXPECT_EQ(graph->inputs()[0]->type.str(), "float[batch,3]");
  EXPECT_EQ(graph->outputs()[0]->name(), "out 'quoted' name");
  EXPECT_EQ(graph->opset(""), 13);
  ASSERT_EQ(graph->num_nodes(), 1u);
  EXPECT_EQ(graph->nodes()[0]->name(), "Relu_0");  // unnamed nodes get a generated name
}

TEST(Importer, OutOfOrderNodesAreSorted) {
  auto m = base_model();
  auto* g = m.mutable_graph();
  add_io(g->add_input(), "x", {"2"});
  add_io(g->add_output(), "z", {"2"});
  auto* second = g->add_node();
  second->set_op_type("Relu");
  second->set_name("second");
  second->add_input("y");
  second->add_output("z");
  auto* first = g->add_node();
  first->set_op_type("Neg");
  first->set_name("first");
  first->add_input("x");
  first->add_output("y");
  auto graph = import(m);
  EXPECT_EQ(graph->nodes()[0]->name(), "first");
  EXPECT_EQ(graph->nodes()[1]->name(), "second");
}

TEST(Importer, InitializersAndAttributes) {
  auto m = base_model();
  auto* g = m.mutable_graph();
  add_io(g->add_input(), "x", {"2", "3"});
  add_io(g->add_output(), "y", {});
  onnx_fe::tensor_to_proto(Tensor::from_vector<float>({3}, {1, 2, 3}), "b", g->add_initializer());
  auto* n = g->add_node();
  n->set_op_type("Gemm");
  n->add_input("x");
  n->add_input("b");
  n->add_output("y");
  auto* a = n->add_attribute();
  a->set_name("alpha");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(0.5f);
  auto* p = n->add_attribute();
  p->set_name("perm");
  p->set_type(onnx::AttributeProto::INTS);
  p->add_ints(1);
  p->add_ints(0);
  auto graph = import(m);
  ir::Value* b = graph->find_value("b");
  ASSERT_TRUE(b && b->is_constant());
  EXPECT_EQ(b->constant().data<float>()[2], 3.f);
  EXPECT_EQ(b->type.str(), "float[3]");
  const ir::Node* node = graph->nodes()[0];
  EXPECT_FLOAT_EQ(node->attr_float("alpha", 1.f), 0.5f);
  EXPECT_EQ(node->attr_ints("perm"), (std::vector<int64_t>{1, 0}));
  EXPECT_THROW(node->attr_int("alpha", 0), Error);  // wrong kind is an error naming the node
}

TEST(Importer, InitializerSizeDisagreesWithDims) {
  auto m = base_model();
  auto* g = m.mutable_graph();
  add_io(g->add_output(), "w", {});
  auto* init = g->add_initializer();
  init->set_name("w");
  init->set_data_type(onnx::TensorProto::FLOAT);
  init->add_dims(4);
  init->add_float_data(1.f);
  try {
    import(m);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("initializer 'w': data has 1 elements but its dims say 4"), std::string::npos) << e.what();
  }
}

TEST(Importer, ExternalDataInsideFolderLoads) {
  fs::path d = tmp("ext_ok");
  float vals[3] = {1.5f, -2.f, 4.f};
  {
    std::ofstream f(d / "weights.bin", std::ios::binary);
    f.write(reinterpret_cast<const char*>(vals), sizeof vals);
  }
  auto m = base_model();
  auto* g = m.mutable_graph();
  add_io(g->add_output(), "w", {});
  auto* init = g->add_initializer();
  init->set_name("w");
  init->set_data_type(onnx::TensorProto::FLOAT);
  init->add_dims(3);
  init->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = init->add_external_data();
  kv->set_key("location");
  kv->set_value("weights.bin");
  auto graph = import(m, d);
  EXPECT_EQ(graph->find_value("w")->constant().data<float>()[2], 4.f);
}

TEST(Importer, ExternalDataOutsideFolderIsRefused) {
  fs::path d = tmp("ext_bad");
  fs::create_directories(d / "model");
  fs::create_symlink("/etc/passwd", d / "model" / "link.bin");
  for (std::string loc : {"../../etc/passwd", "/etc/passwd", "link.bin"}) {
    auto m = base_model();
    auto* g = m.mutable_graph();
    add_io(g->add_output(), "w", {});
    auto* init = g->add_initializer();
    init->set_name("w");
    init->set_data_type(onnx::TensorProto::UINT8);
    init->add_dims(4);
    init->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* kv = init->add_external_data();
    kv->set_key("location");
    kv->set_value(loc);
    try {
      import(m, d / "model");
      FAIL() << loc << ": expected an error";
    } catch (const Error& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("initializer 'w'"), std::string::npos) << msg;
      EXPECT_TRUE(msg.find("outside the model folder") != std::string::npos ||
                  msg.find("relative path inside the model folder") != std::string::npos)
          << msg;
    }
  }
}

TEST(Importer, GraphInputWithInitializerIsAConstantDefault) {
  auto m = base_model();
  auto* g = m.mutable_graph();
  add_io(g->add_input(), "x", {"2"});
  add_io(g->add_input(), "bias", {"2"});
  add_io(g->add_output(), "y", {"2"});
  onnx_fe::tensor_to_proto(Tensor::from_vector<float>({2}, {1, 2}), "bias", g->add_initializer());
  auto* n = g->add_node();
  n->set_op_type("Add");
  n->add_input("x");
  n->add_input("bias");
  n->add_output("y");
  auto graph = import(m);
  ASSERT_EQ(graph->inputs().size(), 1u);
  EXPECT_TRUE(graph->find_value("bias")->is_constant());
}

TEST(Importer, TensorFileRoundTrip) {
  fs::path d = tmp("pb");
  Tensor t = Tensor::from_vector<int64_t>({2, 2}, {1, -2, 3, 1LL << 40});
  onnx_fe::save_tensor_file(t, "ids", d / "t.pb");
  std::string name;
  Tensor back = onnx_fe::load_tensor_file(d / "t.pb", &name);
  EXPECT_EQ(name, "ids");
  EXPECT_EQ(back.dims(), t.dims());
  EXPECT_EQ(back.data<int64_t>()[3], 1LL << 40);
}

TEST(Importer, SubgraphSeesOuterScope) {
  auto m = base_model();
  auto* g = m.mutable_graph();
  add_io(g->add_input(), "x", {"2"});
  auto* cond = g->add_input();
  cond->set_name("c");
  cond->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::BOOL);
  add_io(g->add_output(), "y", {"2"});
  auto* n = g->add_node();
  n->set_op_type("If");
  n->set_name("branch");
  n->add_input("c");
  n->add_output("y");
  for (std::string which : {"then_branch", "else_branch"}) {
    auto* a = n->add_attribute();
    a->set_name(which);
    a->set_type(onnx::AttributeProto::GRAPH);
    auto* sg = a->mutable_g();
    sg->set_name(which);
    add_io(sg->add_output(), which + "_out", {"2"});
    auto* sn = sg->add_node();
    sn->set_op_type(which == "then_branch" ? "Relu" : "Neg");
    sn->add_input("x");  // outer-scope value
    sn->add_output(which + "_out");
  }
  auto graph = import(m);
  auto body = graph->nodes()[0]->attr_graph("then_branch");
  ASSERT_TRUE(body);
  EXPECT_EQ(body->parent, graph.get());
  EXPECT_EQ(body->nodes()[0]->input(0), graph->find_value("x"));
}

TEST(Importer, ParseErrors) {
  EXPECT_THROW(onnx_fe::load_model_bytes("", "."), Error);
  EXPECT_THROW(onnx_fe::load_model_bytes("\x08\x96\x01garbage\xff\xff", "."), Error);
  auto m = base_model(99);
  add_io(m.mutable_graph()->add_output(), "y", {});
  EXPECT_THROW(import(m), UnsupportedError);
}

}  // namespace kiln::testing
