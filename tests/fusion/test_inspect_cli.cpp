// kiln inspect --groups / --json / --dot on the in-repo squeezenet model: the executable plan's
// instructions (the kernels a run launches), at every optimizer and fusion level.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;

struct Result {
  int code = -1;
  std::string out;
};

Result kiln(const std::string& args) {
  Result r;
  // timeout: a hang fails the test instead of stalling the suite.
  std::string cmd = std::string("timeout -k 10 120 '") + KILN_BINARY + "' " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string model() { return (fs::path(KILN_SOURCE_DIR) / "models/squeezenet1_1/model.onnx").string(); }

// Kernels per run as --plan counts them.
long plan_kernels(const std::string& args) {
  Result r = kiln("inspect '" + model() + "' --plan " + args);
  const size_t at = r.out.find("kernels:");
  return at == std::string::npos ? -1 : std::stol(r.out.substr(at + 8));
}

TEST(InspectCli, JsonListsTheKernelsTheirImplementationsAndNodes) {
  if (!fs::exists(model())) GTEST_SKIP();
  long previous = -1;
  for (int level = 0; level <= 3; ++level) {
    SCOPED_TRACE("fusion " + std::to_string(level));
    const std::string args = "--level 0 --fusion " + std::to_string(level);
    Result r = kiln("inspect '" + model() + "' --json " + args);
    ASSERT_EQ(r.code, 0) << r.out;
    auto j = nlohmann::json::parse(r.out);
    ASSERT_TRUE(j["groups"].is_array());
    size_t kernels = 0;
    for (const auto& g : j["groups"]) {
      EXPECT_EQ(g["nodes"].size(), g["ops"].size());
      EXPECT_GE(g["nodes"].size(), 1u);
      EXPECT_TRUE(g["kernel"].is_string());
      kernels += !g["view"].get<bool>();
    }
    EXPECT_EQ(j["kernels"].get<size_t>(), kernels);
    EXPECT_EQ(static_cast<long>(kernels), plan_kernels(args)) << "the same count as --plan";
    if (previous >= 0) {
      EXPECT_LE(static_cast<long>(kernels), previous) << "fusion never adds kernels";
    }
    previous = static_cast<long>(kernels);
  }
}

TEST(InspectCli, GroupsAndDot) {
  if (!fs::exists(model())) GTEST_SKIP();
  fs::path dot = fs::temp_directory_path() / ("kiln_fusion_" + std::to_string(::getpid()) + ".dot");
  Result r = kiln("inspect '" + model() + "' --groups --dot '" + dot.string() + "'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("kiln.ConvConcat"), std::string::npos) << r.out;
  const long kernels = plan_kernels("");
  EXPECT_NE(r.out.find("kernels: " + std::to_string(kernels) + " per run"), std::string::npos) << r.out;
  std::ifstream f(dot);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  EXPECT_EQ(text.rfind("digraph plan", 0), 0u);
  size_t clusters = 0;
  for (size_t at = text.find("subgraph cluster_"); at != std::string::npos; at = text.find("subgraph cluster_", at + 1)) ++clusters;
  size_t instructions = 0;
  for (size_t at = r.out.find("\n"); at != std::string::npos; at = r.out.find("\n", at + 1)) ++instructions;
  EXPECT_EQ(clusters, instructions - 2) << "one cluster per instruction line (less the header and the total)";
  fs::remove(dot);
}

TEST(InspectCli, GroupsAreThoseOfTheOptimizedGraphByDefault) {
  if (!fs::exists(model())) GTEST_SKIP();
  Result r = kiln("inspect '" + model() + "' --json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  for (const auto& g : j["groups"])
    for (const auto& op : g["ops"]) EXPECT_NE(op, "Identity") << "the optimizer removes the weights' Identity nodes";
  Result plain = kiln("inspect '" + model() + "' --json --level 0");
  ASSERT_EQ(plain.code, 0) << plain.out;
  EXPECT_LE(j["kernels"].get<size_t>(), nlohmann::json::parse(plain.out)["kernels"].get<size_t>());
}

TEST(InspectCli, BadFusionLevelIsAnError) {
  if (!fs::exists(model())) GTEST_SKIP();
  EXPECT_NE(kiln("inspect '" + model() + "' --groups --fusion 7").code, 0);
}

}  // namespace
