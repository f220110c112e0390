// The ai.onnx versions from opset 18 on that change an op's meaning, and the registry's refusal
// of a node whose opset selects a change its definition does not implement.
#include <gtest/gtest.h>
#include <kiln/error.h>
#include <kiln/session.h>
#include <onnx/onnx_pb.h>

#include "ops/core/onnx_versions.h"
#include "ops/core/registry.h"

namespace kiln::testing {

TEST(OnnxVersions, TheNewestChangeAtOrBelowTheOpset) {
  EXPECT_EQ(ops::onnx_version_change("ReduceMean", 17), nullptr);
  ASSERT_NE(ops::onnx_version_change("ReduceMean", 25), nullptr);
  EXPECT_EQ(ops::onnx_version_change("ReduceMean", 25)->version, 18);
  EXPECT_EQ(ops::onnx_version_change("Pad", 18)->version, 18);
  EXPECT_EQ(ops::onnx_version_change("Pad", 25)->version, 19);
  EXPECT_EQ(ops::onnx_version_change("Relu", 25), nullptr);
}

TEST(OnnxVersions, ADefinitionOlderThanTheModelsVersionIsRefusedByName) {
  ops::Registry reg;
  reg.add({.name = "Resize", .since_version = 10, .min_inputs = 1, .max_inputs = 4});  // max_version 17
  ir::Graph g;
  g.opsets[""] = 19;
  ir::Value* x = g.add_input("x", ir::TensorType::from_dims(DType::Float, {1, 1, 2, 2}));
  ir::Value* y = g.add_value("y");
  ir::Node* n = g.add_node("Resize", {x}, {y});
  try {
    reg.lookup(*n);
    FAIL() << "accepted";
  } catch (const UnsupportedError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("Resize-19 (opset 19)"), std::string::npos) << what;
    EXPECT_NE(what.find("half_pixel_symmetric"), std::string::npos) << what;
  }
  g.opsets[""] = 17;
  EXPECT_NO_THROW(reg.lookup(*n));
}

TEST(OnnxVersions, OpsetsAboveTheNewestAreRefused) {
  onnx::ModelProto m;
  m.set_ir_version(10);
  auto* os = m.add_opset_import();
  os->set_version(ops::kMaxOnnxOpset + 1);
  auto* g = m.mutable_graph();
  g->set_name("g");
  std::string bytes;
  ASSERT_TRUE(m.SerializeToString(&bytes));
  try {
    Session::create_from_bytes(bytes);
    FAIL() << "accepted";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("opsets 1 to 25"), std::string::npos) << e.what();
  }
}

}  // namespace kiln::testing
