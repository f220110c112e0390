// The options every model subcommand shares (tools/kiln/model_options.h) and the CLI defects a new
// user met: each a regression test, with the command that showed it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <fstream>
#include <sstream>
#include <thread>

#include "cli_util.h"
#include "frontend/onnx/tensor_proto.h"

namespace kiln::testing {

namespace fs = std::filesystem;

namespace {

std::string squeezenet() { return (source_dir() / "models/squeezenet1_1/model.onnx").string(); }

// A model with a symbolic batch: x [batch, 4] -> Relu.
std::string symbolic_model() {
  const fs::path d = temp_dir("symbolic");
  onnx::ModelProto m = tiny_model({1, 4}, {{"Relu", {"x"}, {"y"}}});
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param(
      "batch");
  save_model(m, d / "model.onnx");
  return (d / "model.onnx").string();
}

void expect_refused(const std::vector<std::string>& args, const std::string& message) {
  const CliResult r = run_kiln(args);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
}

}  // namespace

TEST(CliOptions, DimNamingNoSymbolOrNoNumberIsAnError) {
  const std::string m = symbolic_model();
  for (const char* sub : {"run", "bench"}) {
    expect_refused({sub, m, "--dim", "foo=3"}, "the model has no input dim named 'foo' (its symbolic dims: 'batch')");
    expect_refused({sub, m, "--dim", "batch=abc"}, "--dim batch=abc: 'abc' is not a positive integer");
    expect_refused({sub, m, "--dim", "batch=0"}, "is not a positive integer");
  }
  expect_refused({"compile", m, "--dim", "foo=3", "-o", (temp_dir("dimc") / "m.kiln").string()},
                 "the model has no input dim named 'foo'");
  const CliResult r = run_kiln({"run", m, "--dim", "batch=3"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("y: float[3,4]"), std::string::npos) << r.output;
}

TEST(CliOptions, RangesAreCheckedAlikeEverywhere) {
  const std::string m = squeezenet();
  const std::string dir = (source_dir() / "models/squeezenet1_1").string();
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"run", m, "--runs", "0"},
                                             {"run", m, "--runs", "-5"},
                                             {"run", m, "--values", "0"},
                                             {"run", m, "--level", "-1"},
                                             {"run", m, "--level", "7"},
                                             {"bench", m, "--runs", "0"},
                                             {"bench", m, "--threads", "0"},
                                             {"check", dir, "--threads", "0"},
                                             {"check", dir, "--level", "4"},
                                             {"compile", m, "--fusion", "9"}}) {
    const CliResult r = run_kiln(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << " " << args[2] << " " << args[3] << ": " << r.output;
    EXPECT_NE(r.output.find("not in range"), std::string::npos) << r.output;
    EXPECT_LT(r.output.size(), 200u) << "a one-line message: " << r.output;
  }
}

TEST(CliOptions, RunTakesThreadsWarmupAndDisableAndNamesTheInputsItHas) {
  const std::string m = squeezenet();
  CliResult r = run_kiln({"run", m, "--threads", "2", "--warmup", "1", "--runs", "2", "--disable", "conv_concat"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("median of 2 runs"), std::string::npos) << r.output;
  expect_refused({"run", m, "--input", "foo=x.pb"}, "cannot open 'x.pb'");
  const fs::path in = source_dir() / "models/squeezenet1_1/test_data_set_0/input_0.pb";
  expect_refused({"run", m, "--input", "foo=" + in.string()}, "the model has no input named 'foo' (its inputs: 'input')");
}

TEST(CliOptions, TooManyThreadsWarns) {
  const std::string n = std::to_string(std::thread::hardware_concurrency() + 1);
  const CliResult r = run_kiln({"run", squeezenet(), "--threads", n});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: --threads " + n + " on a machine with"), std::string::npos) << r.output;
}

TEST(CliOptions, VersionSaysWhatItIs) {
  const CliResult r = run_kiln({"--version"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.rfind("kiln 0.", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("oneDNN "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("CPU:"), std::string::npos) << r.output;
}

TEST(CliOptions, InspectJsonIsJsonAloneAndFlagsItCannotCombineAreRefused) {
  const std::string m = squeezenet();
  const CliResult r = run_kiln({"inspect", m, "--groups", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(r.output)) << r.output.substr(0, 300);
  expect_refused({"inspect", m, "--plan", "--groups"}, "give one or the other");
  expect_refused({"inspect", m, "--plan", "--dot", (temp_dir("dot") / "g.dot").string()}, "give one or the other");
  // The groups are the plan's instructions: no group is an Identity on weights, and there are
  // as many as --plan counts kernels per run; --dot writes what --svg draws.
  const CliResult g = run_kiln({"inspect", m, "--groups"});
  EXPECT_EQ(g.exit_code, 0) << g.output;
  EXPECT_EQ(g.output.find("Identity"), std::string::npos) << g.output;
  const CliResult p = run_kiln({"inspect", m, "--plan"});
  auto kernels = [](const std::string& out, const std::string& prefix) {
    const size_t at = out.find(prefix);
    return at == std::string::npos ? -1L : std::stol(out.substr(at + prefix.size()));
  };
  const long per_run = kernels(p.output, "kernels:     ");
  EXPECT_GT(per_run, 0) << p.output;
  EXPECT_EQ(kernels(g.output, "kernels: "), per_run) << g.output;
  EXPECT_EQ(j["kernels"].get<long>(), per_run);
  long not_views = 0;
  for (const auto& e : j["groups"]) not_views += !e["view"].get<bool>();
  EXPECT_EQ(not_views, per_run);
  const fs::path dot = temp_dir("dot") / "plan.dot";
  const CliResult d = run_kiln({"inspect", m, "--dot", dot.string()});
  EXPECT_EQ(d.exit_code, 0) << d.output;
  std::ifstream in(dot);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text.rfind("digraph plan", 0), 0u) << text.substr(0, 200);
  const size_t instructions = j["groups"].size();
  EXPECT_NE(text.find("subgraph cluster_" + std::to_string(instructions - 1) + " "), std::string::npos);
  EXPECT_EQ(text.find("subgraph cluster_" + std::to_string(instructions) + " "), std::string::npos);
}

TEST(CliOptions, InspectGroupsOfASymbolicModelTakeDim) {
  const fs::path d = temp_dir("symbolic");
  save_model(tiny_model({-1, 4}, {{"Relu", {"x"}, {"h"}}, {"Sigmoid", {"h"}, {"y"}}}), d / "m.onnx");
  expect_refused({"inspect", (d / "m.onnx").string(), "--groups"}, "--dim");
  const CliResult r = run_kiln({"inspect", (d / "m.onnx").string(), "--groups", "--dim", "N=3"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("kernels: 1 per run for 2 graph nodes"), std::string::npos) << r.output;
}

TEST(CliOptions, OptimizeWritesStandardOpsByDefaultAndSaysWhenItWritesNothing) {
  const std::string m = squeezenet();
  const fs::path d = temp_dir("optimize");
  CliResult r = run_kiln({"optimize", m});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("nothing written: give -o"), std::string::npos) << r.output;
  r = run_kiln({"optimize", m, "-o", (d / "std.onnx").string(), "--ops"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const std::string after = r.output.substr(r.output.find("after:"));
  EXPECT_EQ(after.find("kiln."), std::string::npos) << "the default writes only standard ops: " << after;
  expect_refused({"optimize", m, "--level", "3", "-o", (d / "k.onnx").string()}, "add --kiln-ops");
  r = run_kiln({"optimize", m, "--kiln-ops", "-o", (d / "k.onnx").string(), "--ops"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(level 3)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.substr(r.output.find("after:")).find("kiln."), std::string::npos) << r.output;
}

TEST(CliOptions, RunAndBenchTakeAModelFolderAndInputFiles) {
  const fs::path dir = source_dir() / "models/squeezenet1_1";
  const std::string in = "input=" + (dir / "test_data_set_0/input_0.pb").string();
  CliResult folder = run_kiln({"run", dir.string()});
  CliResult file = run_kiln({"run", (dir / "model.onnx").string(), "--input", in});
  EXPECT_EQ(folder.exit_code, 0) << folder.output;
  // The folder's test_data_set_0 input, not a random one: the same outputs as given explicitly.
  const auto first_line = [](const std::string& s) { return s.substr(0, s.find('\n')); };
  EXPECT_EQ(first_line(folder.output), first_line(file.output));
  CliResult b = run_kiln({"bench", dir.string(), "--runs", "2", "--warmup", "0"});
  EXPECT_EQ(b.exit_code, 0) << b.output;
  b = run_kiln({"bench", (dir / "model.onnx").string(), "--input", in, "--runs", "2", "--warmup", "0"});
  EXPECT_EQ(b.exit_code, 0) << b.output;
  expect_refused({"bench", (dir / "model.onnx").string(), "--input", "nope=" + (dir / "test_data_set_0/input_0.pb").string()},
                 "the model has no input named 'nope' (its inputs: 'input')");
  expect_refused({"run", temp_dir("empty").string()}, "is a folder without a model.onnx");
}

TEST(CliOptions, BenchReportsPercentilesThroughputAndConcurrency) {
  const std::string m = squeezenet();
  CliResult r = run_kiln({"bench", m, "--runs", "5", "--warmup", "1"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("percentiles:    p50 "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(5 runs, 1 warmup)"), std::string::npos) << r.output;
  r = run_kiln({"bench", m, "--duration", "0.3", "--concurrency", "2", "--warmup", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j.at("concurrency"), 2);
  EXPECT_GE(j.at("runs").get<int>(), 2);
  EXPECT_GE(j.at("wall_s").get<double>(), 0.3);
  EXPECT_GT(j.at("throughput_per_s").get<double>(), 0.0);
  EXPECT_LE(j.at("p50_ms").get<double>(), j.at("p90_ms").get<double>());
  EXPECT_LE(j.at("p90_ms").get<double>(), j.at("p99_ms").get<double>());
  EXPECT_LE(j.at("p99_ms").get<double>(), j.at("max_ms").get<double>());
  // --min-seconds keeps timing past --runs until the time has passed.
  r = run_kiln({"bench", m, "--runs", "2", "--min-seconds", "0.2", "--warmup", "0", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json k = nlohmann::json::parse(r.output);
  EXPECT_GE(k.at("wall_s").get<double>(), 0.2);
  EXPECT_GT(k.at("runs").get<int>(), 2);
  expect_refused({"bench", m, "--concurrency", "2", "--pair-disable", "conv_concat"}, "not with --concurrency");
}

TEST(CliOptions, NumpyFilesInAndOutAndTopK) {
  const fs::path d = temp_dir("npy");
  save_model(tiny_model({2, 3}, {{"Relu", {"x"}, {"y"}}}), d / "model.onnx");
  onnx_fe::save_tensor_file(Tensor::from_vector<float>({2, 3}, {-1, 5, 2, 7, -3, 4}), "x", d / "x.pb");
  CliResult r = run_kiln({"run", (d / "model.onnx").string(), "--input", "x=" + (d / "x.pb").string(), "--save-outputs",
                          (d / "out").string(), "--top-k", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("y top 2: [1: 5, 2: 2]"), std::string::npos) << r.output;  // the first row
  ASSERT_TRUE(fs::exists(d / "out/y.npy")) << r.output;
  // y.npy (relu(x)) fed back as x: relu is idempotent, so the same output.
  r = run_kiln({"run", (d / "model.onnx").string(), "--input", "x=" + (d / "out/y.npy").string()});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("y: float[2,3] = [0, 5, 2, 7, 0, 4]"), std::string::npos) << r.output;
  // The same array in an .npz (a zip entry x.npy, stored as np.savez stores it).
  std::ifstream f(d / "out/y.npy", std::ios::binary);
  const std::string npy((std::istreambuf_iterator<char>(f)), {});
  std::string zip = std::string("PK\x03\x04", 4) + std::string(4, '\0') + std::string(10, '\0');
  auto le32 = [](uint32_t v) { return std::string{char(v), char(v >> 8), char(v >> 16), char(v >> 24)}; };
  zip += le32(static_cast<uint32_t>(npy.size())) + le32(static_cast<uint32_t>(npy.size()));
  zip += std::string{5, 0, 0, 0} + "x.npy" + npy;
  std::ofstream(d / "in.npz", std::ios::binary) << zip;
  r = run_kiln({"run", (d / "model.onnx").string(), "--inputs", (d / "in.npz").string()});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("y: float[2,3] = [0, 5, 2, 7, 0, 4]"), std::string::npos) << r.output;
  r = run_kiln({"run", (d / "model.onnx").string(), "--save-outputs", (d / "pb").string(), "--save-format", "pb"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(d / "pb/y.pb"));
  std::ofstream(d / "bad.npy", std::ios::binary) << "not numpy";
  expect_refused({"run", (d / "model.onnx").string(), "--input", "x=" + (d / "bad.npy").string()}, "not a .npy file");
}

TEST(CliOptions, ProfileWritesAChromeTraceOfTheTimedRunsAndATable) {
  const fs::path d = temp_dir("profile");
  const std::string m = squeezenet();
  CliResult r = run_kiln({"run", m, "--warmup", "2", "--runs", "3", "--profile", (d / "p.json").string(), "--profile-table"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("op [backend]"), std::string::npos) << r.output;
  std::ifstream f(d / "p.json");
  const nlohmann::json j = nlohmann::json::parse(f);
  const auto& events = j.at("traceEvents");
  ASSERT_FALSE(events.empty());
  // Every instruction of the 3 timed runs (the warm-up excluded): a multiple of 3 events.
  EXPECT_EQ(events.size() % 3, 0u) << events.size();
  for (const auto& e : events) {
    EXPECT_EQ(e.at("ph"), "X");
    EXPECT_GE(e.at("dur").get<double>(), 0.0);
    for (const char* k : {"op", "nodes", "shapes", "backend", "implementation"}) EXPECT_TRUE(e.at("args").contains(k)) << k;
  }
  r = run_kiln({"bench", m, "--runs", "2", "--warmup", "1", "--profile-table"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("op [backend]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("kiln.FusedConv"), std::string::npos) << r.output;
}

TEST(CliOptions, InspectSvgDrawsTheGraphThatRuns) {
  const fs::path d = temp_dir("svg");
  CliResult r = run_kiln({"inspect", squeezenet(), "--svg", (d / "g.svg").string()});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream f(d / "g.svg");
  const std::string svg((std::istreambuf_iterator<char>(f)), {});
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  // A cluster per instruction labelled with its op and kernel; the fused members inside.
  EXPECT_NE(svg.find("kiln.FusedConv"), std::string::npos);
  EXPECT_NE(svg.find("cpu:kiln_pointwise"), std::string::npos);
  EXPECT_NE(svg.find("float[1,3,224,224]"), std::string::npos);  // the shape on the input's edge
  expect_refused({"inspect", squeezenet(), "--svg", (d / "h.svg").string(), "--plan"}, "give it alone");
}

TEST(CliOptions, RandomIntegerInputsFollowHowTheModelUsesThem) {
  // ids index a Gather over 7 rows; mask is only turned into floats: y = rows[ids] * float(mask).
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("ids_mask");
  for (const char* name : {"ids", "mask"}) {
    auto* in = g->add_input();
    in->set_name(name);
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::INT64);
    tt->mutable_shape()->add_dim()->set_dim_value(64);
  }
  auto* rows = g->add_initializer();
  rows->set_name("rows");
  rows->set_data_type(onnx::TensorProto::FLOAT);
  rows->add_dims(7);
  for (int i = 0; i < 7; ++i) rows->add_float_data(10.f + static_cast<float>(i));
  auto node = [&](const std::string& op, std::vector<std::string> ins, const std::string& out) {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(out);
    for (const auto& i : ins) n->add_input(i);
    n->add_output(out);
    return n;
  };
  node("Gather", {"rows", "ids"}, "picked");
  auto* cast = node("Cast", {"mask"}, "maskf");
  auto* to = cast->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::FLOAT);
  node("Mul", {"picked", "maskf"}, "y");
  auto* out = g->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  const fs::path d = temp_dir("int_inputs");
  save_model(m, d / "model.onnx");
  // Ids up to 99 would fail the Gather; a mask up to 99 would scale rows.
  const CliResult r = run_kiln({"run", (d / "model.onnx").string(), "--values", "64"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const size_t open = r.output.find("= [") + 3;
  const std::string values = r.output.substr(open, r.output.find(']', open) - open);
  std::stringstream ss(values);
  std::string v;
  bool zero = false, row = false;
  while (std::getline(ss, v, ',')) {
    const double x = std::stod(v);
    zero = zero || x == 0;
    row = row || (x >= 10 && x <= 16);
    EXPECT_TRUE(x == 0 || (x >= 10 && x <= 16)) << x << " in " << r.output;
  }
  EXPECT_TRUE(zero && row) << r.output;  // both mask values drawn
}

TEST(CliOptions, RunAndCheckPrintJson) {
  const fs::path dir = source_dir() / "models/squeezenet1_1";
  CliResult r = run_kiln({"run", dir.string(), "--json", "--values", "3", "--runs", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j.at("runs"), 2);
  EXPECT_EQ(j.at("outputs").at(0).at("name"), "output");
  EXPECT_EQ(j.at("outputs").at(0).at("values").size(), 3u);
  EXPECT_GT(j.at("latency_ms").get<double>(), 0.0);
  r = run_kiln({"check", dir.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  j = nlohmann::json::parse(r.output);
  EXPECT_TRUE(j.at("passed").get<bool>());
  EXPECT_EQ(j.at("sets").at(0).at("outputs").at(0).at("ok"), true);
}

TEST(CliOptions, CheckRefusesATestSetWithoutOutputs) {
  const fs::path d = temp_dir("no_outputs");
  fs::copy_file(source_dir() / "models/squeezenet1_1/model.onnx", d / "model.onnx");
  fs::create_directories(d / "test_data_set_0");
  fs::copy_file(source_dir() / "models/squeezenet1_1/test_data_set_0/input_0.pb", d / "test_data_set_0/input_0.pb");
  expect_refused({"check", d.string()}, "test_data_set_0: has no output_N.pb to compare with");
}

}  // namespace kiln::testing
