// Fusion on the shared models (skipped when ../shared/models is absent): valid partitions at
// every level, resnet18's conv blocks as single groups, and bert's kernel count.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "frontend/onnx/importer.h"
#include "fusion_test_util.h"
#include "passes/pipelines.h"

namespace kiln::fusion::testing {
namespace {

namespace fs = std::filesystem;

fs::path models_dir() {
  const char* src = std::getenv("KILN_SOURCE_DIR");
  return fs::path(src ? src : KILN_SOURCE_DIR) / ".." / "shared" / "models";
}

std::unique_ptr<ir::Graph> load(const std::string& model, int opt_level = 0) {
  fs::path p = models_dir() / model / "model.onnx";
  if (!fs::exists(p)) return nullptr;
  auto g = onnx_fe::load_model(p);
  ops::ShapeInference().run(*g);
  if (opt_level > 0) {
    passes::OptimizeOptions o;
    o.level = opt_level;
    passes::optimize(*g, o);
  }
  return g;
}

std::vector<Group> fuse(const ir::Graph& g, int level) {
  FusionOptions o;
  o.level = level;
  auto groups = partition(g, o);
  expect_valid(g, groups);
  return groups;
}

const Group& group_of(const std::vector<Group>& groups, const ir::Node* n) {
  for (const Group& grp : groups)
    for (const ir::Node* m : grp.nodes)
      if (m == n) return grp;
  throw Error("node in no group");
}

TEST(Models, EveryModelPartitionsValidlyAtEveryLevel) {
  if (!fs::exists(models_dir())) GTEST_SKIP() << "no shared models";
  for (const auto& entry : fs::directory_iterator(models_dir())) {
    if (!fs::exists(entry.path() / "model.onnx")) continue;
    const std::string name = entry.path().filename().string();
    for (int opt : {0, 1, 3}) {
      auto g = load(name, opt);
      std::string counts;
      size_t prev = g->num_nodes() + 1;
      for (int level = 0; level <= 3; ++level) {
        SCOPED_TRACE(name + " opt " + std::to_string(opt) + " fusion " + std::to_string(level));
        size_t k = fuse(*g, level).size();
        EXPECT_LE(k, prev) << "a higher level never launches more kernels";
        prev = k;
        counts += " " + std::to_string(k);
      }
      std::printf("%-20s opt %d: nodes %zu, kernels at fusion 0..3:%s\n", name.c_str(), opt, g->num_nodes(), counts.c_str());
    }
  }
}

// Every conv leads its group, and takes its residual add and the relu after it.
TEST(Models, Resnet18ConvBlocksAreSingleGroups) {
  auto g = load("resnet18");
  if (!g) GTEST_SKIP() << "no resnet18";
  auto groups = fuse(*g, 3);
  int adds = 0;
  for (const ir::Node* n : g->nodes()) {
    const Group& grp = group_of(groups, n);
    if (n->op_type() == "Conv") {
      // A conv's value goes to one consumer: relu, add, or (downsample) the add another conv leads.
      const ir::Node* user = n->output(0)->uses().at(0).node;
      EXPECT_EQ(grp.anchor, n) << n->name();
      if (grp.nodes.size() > 1) {
        EXPECT_EQ(&group_of(groups, user), &grp) << n->name();
      } else {
        EXPECT_EQ(grp.nodes.size(), 1u) << n->name();
        EXPECT_EQ(user->op_type(), "Add") << n->name() << " is alone but not a downsample branch";
      }
    }
    if (n->op_type() == "Add") {
      ++adds;
      ASSERT_NE(grp.anchor, nullptr) << n->name();
      EXPECT_EQ(grp.anchor->op_type(), "Conv");
      const ir::Node* relu = n->output(0)->uses().at(0).node;
      EXPECT_EQ(relu->op_type(), "Relu");
      EXPECT_EQ(&group_of(groups, relu), &grp) << n->name();
      EXPECT_EQ(grp.nodes.size(), 3u);
    }
  }
  EXPECT_EQ(adds, 8);
}

TEST(Models, BertTinyKernelCount) {
  auto plain = load("bert_tiny_op13");
  if (!plain) GTEST_SKIP() << "no bert_tiny_op13";
  auto optimized = load("bert_tiny_op13", 3);
  size_t k_plain = fuse(*plain, 3).size(), k_opt = fuse(*optimized, 3).size();
  std::printf("bert_tiny_op13 kernels at fusion 3: %zu without the optimizer, %zu after it\n", k_plain, k_opt);
  EXPECT_LE(k_opt, 70u);
}

}  // namespace
}  // namespace kiln::fusion::testing
