// Bad TensorFlow input through the kiln binary: each case writes a broken frozen .pb or TF.js
// model.json and expects exit code 2 with one message naming the node, file or weight and the
// reason; never a crash or a hang.
#include <gtest/gtest.h>

#include <fstream>

#include "../frontend/tf_graph_builder.h"
#include "cli_util.h"

namespace kiln::testing {

namespace fs = std::filesystem;

namespace {

void expect_error(const CliResult& r, const std::string& fragment) {
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("kiln: error:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(fragment), std::string::npos) << "expected '" << fragment << "' in: " << r.output;
}

fs::path write_pb(const TfGraph& t, const std::string& name) {
  const fs::path p = temp_dir("bad_tf_" + name) / "model.pb";
  std::ofstream f(p, std::ios::binary);
  t.g.SerializeToOstream(&f);
  return p;
}

const char* kJson = R"({"format": "graph-model", "modelTopology": {"node": [
  {"name": "x", "op": "Placeholder", "attr": {"dtype": {"type": "DT_FLOAT"}, "shape": {"shape": {"dim": [{"size": "2"}]}}}},
  {"name": "w", "op": "Const", "attr": {"dtype": {"type": "DT_FLOAT"}, "value": {"tensor": {"dtype": "DT_FLOAT", "tensorShape": {"dim": [{"size": "2"}]}}}}},
  {"name": "y", "op": "Mul", "input": ["x", "w"]}]},
  "weightsManifest": [{"paths": ["w.bin"], "weights": [{"name": "w", "shape": [2], "dtype": "float32"}]}]})";

fs::path write_json(const std::string& name, const std::string& json, int weight_bytes) {
  const fs::path d = temp_dir("bad_tfjs_" + name);
  std::ofstream(d / "model.json") << json;
  if (weight_bytes >= 0) {
    std::ofstream w(d / "w.bin", std::ios::binary);
    for (int i = 0; i < weight_bytes; ++i) w.put(0);
  }
  return d / "model.json";
}

}  // namespace

TEST(BadTfModels, UnknownOp) {
  TfGraph t;
  t.placeholder("x", tfpb::DT_FLOAT, {2});
  t.node("NoSuchOp", "strange", {"x"});
  expect_error(run_kiln({"run", write_pb(t, "unknown").string()}), "TensorFlow node 'strange' (NoSuchOp)");
}

TEST(BadTfModels, InputNamingNoNode) {
  TfGraph t;
  t.placeholder("x", tfpb::DT_FLOAT, {2});
  t.node("Relu", "r", {"ghost:1"});
  expect_error(run_kiln({"run", write_pb(t, "dangling").string()}), "'r' (Relu): input 'ghost:1' names no node");
}

TEST(BadTfModels, CycleOutsideALoop) {
  TfGraph t;
  t.placeholder("x", tfpb::DT_FLOAT, {2});
  t.node("AddV2", "a", {"x", "b"});
  t.node("AddV2", "b", {"x", "a"});
  expect_error(run_kiln({"run", write_pb(t, "cycle").string()}), "cycle");
}

TEST(BadTfModels, CorruptBytes) {
  const fs::path p = temp_dir("bad_tf_bytes") / "model.pb";
  std::ofstream(p, std::ios::binary) << "\x0a\xff\xff\xff\xff\x0f garbage";
  expect_error(run_kiln({"run", p.string()}), "is not a TensorFlow GraphDef");
}

TEST(BadTfModels, WeightFilesMissingShortOrLong) {
  expect_error(run_kiln({"run", write_json("missing", kJson, -1).string()}), "w.bin' is missing");
  expect_error(run_kiln({"run", write_json("short", kJson, 5).string()}), "weight 'w': needs 8 bytes");
  expect_error(run_kiln({"run", write_json("long", kJson, 12).string()}), "hold 12 bytes, the manifest's entries 8");
}

TEST(BadTfModels, TruncatedJsonAndSavedModel) {
  expect_error(run_kiln({"run", write_json("truncated", std::string(kJson).substr(0, 120), 8).string()}),
               "not valid JSON");
  const fs::path d = temp_dir("bad_tf_saved_model");
  std::ofstream(d / "saved_model.pb") << "x";
  expect_error(run_kiln({"run", d.string()}), "SavedModel");
}

}  // namespace kiln::testing
