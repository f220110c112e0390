// The CLI as a user sees it: help on every subcommand, run/check/conformance on real data.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "frontend/onnx/tensor_proto.h"

namespace kiln::testing {

namespace fs = std::filesystem;

TEST(Cli, HelpOnEverySubcommand) {
  for (std::string sub : {"run", "check", "conformance", "inspect", "bench", "optimize", "compile", "freeze", "machine"}) {
    auto r = run_kiln({sub, "--help"});
    EXPECT_EQ(r.exit_code, 0) << sub << ": " << r.output;
    EXPECT_NE(r.output.find("Usage"), std::string::npos) << r.output;
  }
}

TEST(Cli, CheckPassesOnSqueezenet) {
  auto r = run_kiln({"check", (source_dir() / "models/squeezenet1_1").string()});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("check passed"), std::string::npos) << r.output;
}

TEST(Cli, CheckReportsMismatchWithExitCode1) {
  // A model whose reference output is deliberately wrong.
  fs::path d = temp_dir("mismatch");
  save_model(tiny_model({2, 2}, {{"Relu", {"x"}, {"y"}}}), d / "model.onnx");
  fs::create_directories(d / "test_data_set_0");
  onnx_fe::save_tensor_file(Tensor::from_vector<float>({2, 2}, {-1, 2, -3, 4}), "x", d / "test_data_set_0/input_0.pb");
  onnx_fe::save_tensor_file(Tensor::from_vector<float>({2, 2}, {0, 2, 0, 5}), "y", d / "test_data_set_0/output_0.pb");
  auto r = run_kiln({"check", d.string()});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("MISMATCH"), std::string::npos) << r.output;
  // And the right answer passes.
  onnx_fe::save_tensor_file(Tensor::from_vector<float>({2, 2}, {0, 2, 0, 4}), "y", d / "test_data_set_0/output_0.pb");
  r = run_kiln({"check", d.string()});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(Cli, RunPrintsOutputsLatencyAndMemory) {
  fs::path m = source_dir() / "models/squeezenet1_1";
  auto r = run_kiln({"run", (m / "model.onnx").string(), "--input", "input=" + (m / "test_data_set_0/input_0.pb").string()});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("output: float[1,1000] = ["), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("latency:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("peak memory"), std::string::npos) << r.output;
}

TEST(Cli, InspectPrintsInferredIr) {
  auto r = run_kiln({"inspect", (source_dir() / "models/squeezenet1_1/model.onnx").string()});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("input  %input: float[1,3,224,224]"), std::string::npos) << r.output.substr(0, 500);
  EXPECT_NE(r.output.find("= Conv("), std::string::npos);
  EXPECT_NE(r.output.find("float[1,1000]"), std::string::npos);
}

TEST(Cli, InspectPlanJson) {
  auto r = run_kiln({"inspect", (source_dir() / "models/squeezenet1_1/model.onnx").string(), "--plan", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* key : {"\"arena_bytes\"", "\"lower_bound_bytes\"", "\"naive_bytes\"", "\"checker\": \"ok\"", "\"buffers\""})
    EXPECT_NE(r.output.find(key), std::string::npos) << key << " in " << r.output.substr(0, 400);
}

TEST(Cli, BenchJsonIsOneObject) {
  auto r = run_kiln({"bench", (source_dir() / "models/squeezenet1_1/model.onnx").string(), "--runs", "2", "--warmup", "0", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.front(), '{') << r.output;
  for (const char* key : {"\"median_ms\"", "\"min_ms\"", "\"max_ms\"", "\"session_create_ms\"", "\"session_ready_ms\"", "\"arena_bytes\"",
                          "\"threads\":1", "\"runs\":2"})
    EXPECT_NE(r.output.find(key), std::string::npos) << key << " in " << r.output;
}

// The CLI leaves libgomp's wait policy as the environment gives it (its default spins a while
// between regions and then sleeps, which a busy machine needs; see backends/team_choice.h), and
// bench reports it.
TEST(Cli, MachineJsonHasTheCoresAndTheRoundTrip) {
  auto r = run_kiln({"machine", "--json", "--trips", "100"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_GE(j.at("cores").get<int>(), 1);
  EXPECT_GT(j.at("l1d_bytes").get<int64_t>(), 0);
  EXPECT_GT(j.at("l2_bytes").get<int64_t>(), 0);
  if (j.at("cores").get<int>() > 1) {
    EXPECT_GT(j.at("core_round_trip_ns").get<double>(), 0.0);
  }
}

TEST(Cli, OpenMpWaitPolicyIsTheEnvironments) {
  const std::string model = (source_dir() / "models/squeezenet1_1/model.onnx").string();
  const char* before = std::getenv("OMP_WAIT_POLICY");
  const std::string saved = before ? before : "";
  unsetenv("OMP_WAIT_POLICY");
  auto r = run_kiln({"bench", model, "--threads", "2", "--runs", "2", "--warmup", "0"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("threads:        2 (OMP_WAIT_POLICY=unset)"), std::string::npos) << r.output;
  setenv("OMP_WAIT_POLICY", "passive", 1);
  r = run_kiln({"bench", model, "--threads", "2", "--runs", "2", "--warmup", "0"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(OMP_WAIT_POLICY=passive)"), std::string::npos) << r.output;
  if (before) setenv("OMP_WAIT_POLICY", saved.c_str(), 1);
  else unsetenv("OMP_WAIT_POLICY");
}

// Lowering rewrites can be switched off one by one (same answers), and --pair-disable times a
// session without one beside the default in alternating runs.
TEST(Cli, DisabledLoweringPasses) {
  const std::string dir = (source_dir() / "models/squeezenet1_1").string();
  for (const char* pass : {"channels_last", "channel_shuffle", "conv_concat", "blocked_layout"}) {
    auto r = run_kiln({"check", dir, "--disable", pass});
    EXPECT_EQ(r.exit_code, 0) << pass << ": " << r.output;
  }
  auto r = run_kiln({"bench", dir + "/model.onnx", "--runs", "3", "--warmup", "0", "--pair-disable", "conv_concat", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"paired\":{\"disabled\":[\"conv_concat\"]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"ratio_median\""), std::string::npos) << r.output;
  r = run_kiln({"bench", dir + "/model.onnx", "--runs", "1", "--disable", "no_such_pass"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("unknown lowering pass or kernel 'no_such_pass' to disable (lowering passes: channels_last"),
            std::string::npos)
      << r.output;
  // A kernel implementation: the node falls to the next candidate.
  r = run_kiln({"check", dir, "--disable", "onednn_winograd", "--disable", "kiln_pointwise"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = run_kiln({"bench", dir + "/model.onnx", "--runs", "3", "--warmup", "0", "--pair-disable", "onednn_winograd", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"paired\":{\"disabled\":[\"onednn_winograd\"]"), std::string::npos) << r.output;
}

TEST(Cli, ConformanceRunsFilteredNodeTests) {
  fs::path d = temp_dir("conf");
  auto r = run_kiln({"conformance", "--filter", "test_relu", "--tsv", (d / "out.tsv").string()});
  EXPECT_NE(r.output.find("1 passed, 0 failed, 0 skipped"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(d / "out.tsv"));
  EXPECT_EQ(r.output.find('\r'), std::string::npos) << "no progress line into a pipe";
}

TEST(Cli, ConformanceRunsLightModelTestsOnOnnxsRamp) {
  // ONNX's layout: real/<test>/data.json names light/<model>.onnx, whose expected outputs lie
  // beside it; the input is arange(n) / n.
  fs::path d = temp_dir("conf_light");
  fs::create_directories(d / "real/test_tiny");
  fs::create_directories(d / "real/test_remote");
  fs::create_directories(d / "light");
  save_model(tiny_model({2, 3}, {{"Add", {"x", "x"}, {"y"}}}), d / "light/light_tiny.onnx");
  std::ofstream(d / "real/test_tiny/data.json")
      << R"({"atol": 1e-07, "model_name": "tiny", "rtol": 0.001, "url": "onnx/backend/test/data/light/light_tiny.onnx"})";
  std::ofstream(d / "real/test_remote/data.json") << R"({"model_name": "remote", "url": "https://example.org/m.tar.gz"})";
  onnx_fe::save_tensor_file(Tensor::from_vector<float>({2, 3}, {0, 2 / 6.f, 4 / 6.f, 1, 8 / 6.f, 10 / 6.f}), "y",
                            d / "light/light_tiny_output_0.pb");
  auto r = run_kiln({"conformance", (d / "real").string(), "-v"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("1 passed, 0 failed, 1 skipped"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("downloads its model"), std::string::npos) << r.output;
  // A wrong expectation fails: the ramp really is compared.
  onnx_fe::save_tensor_file(Tensor::from_vector<float>({2, 3}, {0, 1 / 6.f, 2 / 6.f, 3 / 6.f, 4 / 6.f, 5 / 6.f}), "y",
                            d / "light/light_tiny_output_0.pb");
  r = run_kiln({"conformance", (d / "real").string(), "-f", "tiny"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("FAIL test_tiny: output 0: element 1"), std::string::npos) << r.output;
  // A data.json that is not one is a failure naming the file.
  std::ofstream(d / "real/test_tiny/data.json") << "{";
  r = run_kiln({"conformance", (d / "real").string(), "-f", "tiny"});
  EXPECT_NE(r.output.find("data.json' is not JSON"), std::string::npos) << r.output;
}

}  // namespace kiln::testing
