// TF.js graph models (model.json + weight shards) and frozen .pb files: weights in every stored
// form, the frozen .pb written back, and bad files refused with a message naming the culprit.
#include <gtest/gtest.h>
#include <kiln/error.h>
#include <kiln/session.h>

#include <cstring>
#include <fstream>

#include "frontend/tf/model_files.h"
#include "tf_graph_builder.h"

namespace kiln::testing {

namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("kiln_tfjs_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write_bytes(const fs::path& p, const std::vector<uint8_t>& b) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

// y = x * w + q, z = Cast(n): w float16 [2], q uint8-quantized [2], n an int64 Const stored as
// int32; dtypes written as enum names and as bare numbers.
const char* kModel = R"({
  "format": "graph-model",
  "modelTopology": {"node": [
    {"name": "x", "op": "Placeholder", "attr": {"dtype": {"type": "DT_FLOAT"}, "shape": {"shape": {"dim": [{"size": "2"}]}}}},
    {"name": "w", "op": "Const", "attr": {"dtype": {"type": "DT_FLOAT"}, "value": {"tensor": {"dtype": "DT_FLOAT", "tensorShape": {"dim": [{"size": "2"}]}}}}},
    {"name": "q", "op": "Const", "attr": {"dtype": {"type": 1}, "value": {"tensor": {"dtype": 1, "tensorShape": {"dim": [{"size": "2"}]}}}}},
    {"name": "n", "op": "Const", "attr": {"dtype": {"type": "DT_INT64"}, "value": {"tensor": {"dtype": "DT_INT64", "tensorShape": {"dim": [{"size": "2"}]}}}}},
    {"name": "m", "op": "Mul", "input": ["x", "w"], "attr": {"T": {"type": "DT_FLOAT"}}},
    {"name": "y", "op": "AddV2", "input": ["m", "q:0"], "attr": {"T": {"type": "DT_FLOAT"}}},
    {"name": "z", "op": "Cast", "input": ["n", "^y"], "attr": {"DstT": {"type": "DT_FLOAT"}, "SrcT": {"type": 9}}}
  ], "versions": {"producer": 1000}, "library": {}},
  "signature": {"outputs": {"out_y": {"name": "y:0"}, "out_z": {"name": "z:0"}}},
  "weightsManifest": [{"paths": ["group1-shard1of2.bin", "group1-shard2of2.bin"], "weights": [
    {"name": "w", "shape": [2], "dtype": "float32", "quantization": {"dtype": "float16", "original_dtype": "float32"}},
    {"name": "q", "shape": [2], "dtype": "float32", "quantization": {"dtype": "uint8", "min": -1.0, "scale": 0.5, "original_dtype": "float32"}},
    {"name": "n", "shape": [2], "dtype": "int32"}
  ]}]
})";

// float16 1.5 (0x3e00) and -2 (0xc000); uint8 0 and 6 (-1 and 2); int32 7 and -3. Split in two
// shards at an odd place: a group's files are one buffer.
void write_model(const fs::path& dir, bool second_shard = true, bool short_shard = false) {
  std::ofstream(dir / "model.json") << kModel;
  std::vector<uint8_t> all{0x00, 0x3e, 0x00, 0xc0, 0, 6, 7, 0, 0, 0, 0xfd, 0xff, 0xff, 0xff};
  if (short_shard) all.pop_back();
  write_bytes(dir / "group1-shard1of2.bin", std::vector<uint8_t>(all.begin(), all.begin() + 5));
  if (second_shard) write_bytes(dir / "group1-shard2of2.bin", std::vector<uint8_t>(all.begin() + 5, all.end()));
}

void expect_outputs(Session& s) {
  ASSERT_EQ(s.outputs().size(), 2u);
  EXPECT_EQ(s.outputs()[0].name, "y:0");
  EXPECT_EQ(s.outputs()[1].name, "z:0");
  auto out = s.run({Tensor::from_vector<float>({2}, {2, 3})});
  EXPECT_EQ(values(out[0]), (std::vector<float>{2 * 1.5f - 1, 3 * -2.0f + 2}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{7, -3}));
}

std::string error_of(const fs::path& model) {
  try {
    Session::create(model.string());
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(TfModelFiles, TfjsWeightsFloat16Uint8AndInt64Consts) {
  const fs::path d = fresh_dir("weights");
  write_model(d);
  auto s = Session::create((d / "model.json").string());
  expect_outputs(*s);
}

TEST(TfModelFiles, FrozenPbRunsWithoutTheShards) {
  const fs::path d = fresh_dir("freeze");
  write_model(d);
  const tf_fe::TfModel m = tf_fe::read_tf_model(d / "model.json");
  const fs::path pb = fresh_dir("freeze_out") / "model.pb";
  tf_fe::write_frozen_graph(m, pb);
  fs::remove_all(d);
  // No signature in a .pb: the outputs are what no node reads, in node order.
  auto s = Session::create(pb.string());
  expect_outputs(*s);
}

TEST(TfModelFiles, MissingOrShortShardNamesIt) {
  const fs::path d = fresh_dir("missing");
  write_model(d, /*second_shard=*/false);
  const std::string e = error_of(d / "model.json");
  EXPECT_NE(e.find("group1-shard2of2.bin' is missing"), std::string::npos) << e;
  const fs::path d2 = fresh_dir("short");
  write_model(d2, true, /*short_shard=*/true);
  const std::string e2 = error_of(d2 / "model.json");
  EXPECT_NE(e2.find("weight 'n': needs 8 bytes"), std::string::npos) << e2;
}

TEST(TfModelFiles, SavedModelAndLayersModelAreExplained) {
  const fs::path d = fresh_dir("saved");
  std::ofstream(d / "saved_model.pb") << "x";
  EXPECT_NE(error_of(d).find("SavedModel"), std::string::npos);
  std::ofstream(d / "model.json") << R"({"format": "layers-model", "modelTopology": {}})";
  EXPECT_NE(error_of(d / "model.json").find("layers model"), std::string::npos);
}

}  // namespace kiln::testing
