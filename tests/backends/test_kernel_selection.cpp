// Kernel selection: the rule (first candidate) and --tune's timed choice with its persistent
// cache.
#include "backends/kernel_selection.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ops/core/infer_graph.h"

namespace kiln::backends {
namespace {

struct ConvGraph {
  ir::Graph g;
  ir::Node* conv = nullptr;
  ConvGraph() {
    g.opsets[""] = 17;
    ir::Value* x = g.add_input("x", ir::TensorType::from_dims(DType::Float, {1, 8, 9, 9}));
    Tensor w(DType::Float, {4, 8, 3, 3});
    for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = 0.01f * static_cast<float>(i % 7);
    ir::Value* y = g.add_value("y");
    conv = g.add_node("Conv", {x, g.add_constant("w", w)}, {y}, {{"pads", ir::Attribute::of_ints({1, 1, 1, 1})}}, "c");
    g.add_output(y);
    ops::ShapeInference().run(g);
  }
};

std::string temp_cache() {
  auto dir = std::filesystem::temp_directory_path() / ("kiln-tune-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return (dir / "kernels.json").string();
}

TEST(KernelSelection, RuleTakesTheFirstCandidate) {
  ConvGraph cg;
  auto backend = backends::make_cpu_backend(1);
  ASSERT_GE(backend->candidates(*cg.conv).size(), 2u);  // two activation layouts for a conv
  SelectedKernel k = select_kernel(*backend, *cg.conv, 1);
  EXPECT_TRUE(k.kernel);
  EXPECT_FALSE(k.timed);
}

TEST(KernelSelection, TuneTimesOnceThenReadsTheCache) {
  ConvGraph cg;
  const std::string path = temp_cache();
  auto backend = backends::make_cpu_backend(1);
  backend->set_tuning({true, path});
  SelectedKernel first = select_kernel(*backend, *cg.conv, 1);
  ASSERT_TRUE(first.kernel);
  EXPECT_TRUE(first.timed);
  // The winner is on disk under the node's key...
  std::ifstream f(path);
  nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_EQ(j.at(tune_key(*cg.conv, 1)).get<std::string>(), first.name);
  // ...and a later selection (another session, same process or not) uses it without timing.
  SelectedKernel again = select_kernel(*backend, *cg.conv, 1);
  EXPECT_FALSE(again.timed);
  EXPECT_EQ(again.name, first.name);
  // A different thread count is another key.
  EXPECT_NE(tune_key(*cg.conv, 1), tune_key(*cg.conv, 2));
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST(KernelSelection, DamagedCacheIsIgnored) {
  ConvGraph cg;
  const std::string path = temp_cache() + ".damaged";
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << "{ not json";
  auto backend = backends::make_cpu_backend(1);
  backend->set_tuning({true, path});
  SelectedKernel k = select_kernel(*backend, *cg.conv, 1);
  EXPECT_TRUE(k.kernel);
  EXPECT_TRUE(k.timed);
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

}  // namespace
}  // namespace kiln::backends
