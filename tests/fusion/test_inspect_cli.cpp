// kiln inspect --groups / --json / --dot on the in-repo squeezenet model: at --level 0 the
// file's graph, by default the optimized graph (the one that runs).
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

TEST(InspectCli, JsonListsEveryNodeOnce) {
  if (!fs::exists(model())) GTEST_SKIP();
  for (int level = 0; level <= 3; ++level) {
    Result r = kiln("inspect '" + model() + "' --level 0 --json --fusion " + std::to_string(level));
    ASSERT_EQ(r.code, 0) << r.out;
    auto j = nlohmann::json::parse(r.out);
    ASSERT_TRUE(j["groups"].is_array());
    EXPECT_EQ(j["kernels"].get<size_t>(), j["groups"].size());
    size_t nodes = 0;
    for (const auto& g : j["groups"]) {
      EXPECT_EQ(g["nodes"].size(), g["ops"].size());
      EXPECT_TRUE(g["pattern"].is_string());
      EXPECT_TRUE(g["anchor"].is_null() || g["anchor"].is_string());
      nodes += g["nodes"].size();
    }
    EXPECT_EQ(nodes, 83u) << "squeezenet1_1 has 83 nodes";
    if (level == 0) {
      EXPECT_EQ(j["kernels"].get<size_t>(), 83u);
    }
    if (level == 3) {
      EXPECT_EQ(j["kernels"].get<size_t>(), 57u);
      // The first conv (after the weights' Identity nodes) leads a Conv+Relu group.
      int convs = 0;
      for (const auto& g : j["groups"])
        if (g["ops"][0] == "Conv") {
          ++convs;
          EXPECT_EQ(g["ops"], nlohmann::json::parse(R"(["Conv", "Relu"])"));
          EXPECT_EQ(g["anchor"], g["nodes"][0]);
        }
      EXPECT_EQ(convs, 26);
    }
  }
}

TEST(InspectCli, GroupsAndDot) {
  if (!fs::exists(model())) GTEST_SKIP();
  fs::path dot = fs::temp_directory_path() / ("kiln_fusion_" + std::to_string(::getpid()) + ".dot");
  Result r = kiln("inspect '" + model() + "' --level 0 --groups --dot '" + dot.string() + "'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("Conv+Relu"), std::string::npos);
  EXPECT_NE(r.out.find("kernels: 57 for 83 nodes (fusion level 3)"), std::string::npos) << r.out;
  std::ifstream f(dot);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  EXPECT_EQ(text.rfind("digraph", 0), 0u);
  size_t clusters = 0;
  for (size_t at = text.find("subgraph cluster_"); at != std::string::npos; at = text.find("subgraph cluster_", at + 1)) ++clusters;
  EXPECT_EQ(clusters, 57u);
  fs::remove(dot);
}

TEST(InspectCli, GroupsAreThoseOfTheOptimizedGraphByDefault) {
  if (!fs::exists(model())) GTEST_SKIP();
  Result r = kiln("inspect '" + model() + "' --json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  size_t nodes = 0;
  for (const auto& g : j["groups"]) {
    nodes += g["nodes"].size();
    for (const auto& op : g["ops"]) EXPECT_NE(op, "Identity") << "the optimizer removes the weights' Identity nodes";
  }
  EXPECT_LT(nodes, 83u);
  EXPECT_LT(j["kernels"].get<size_t>(), 57u);
}

TEST(InspectCli, BadFusionLevelIsAnError) {
  if (!fs::exists(model())) GTEST_SKIP();
  EXPECT_NE(kiln("inspect '" + model() + "' --groups --fusion 7").code, 0);
}

}  // namespace
