// Conv chains (kiln.ConvChain) emitted on the CPU backend's schedule (kernels/chain_schedule.h):
// ring windows between row kernels, the input image read as planes by a stem, moved windows
// around the other layers, a pooled chain, two images, several bands and a team of two. And a
// .kiln compiled for kiln's runtime brings its chains as they are: the shared mobilenet_v2 has a
// dozen, the first from the NCHW input.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <random>

#include "project_build.h"

namespace kiln::codegen {
namespace {

fs::path mobilenet_v2() { return fs::path(KILN_SOURCE_DIR) / ".." / "shared" / "models" / "mobilenet_v2"; }

TEST(CodegenConvChain, ChainsOfAKilnFileRunBandedAndMatch) {
  if (!fs::exists(mobilenet_v2() / "model.onnx")) {
    if (const char* ci = std::getenv("CI"); ci && std::string(ci) == "true") FAIL() << "no shared mobilenet_v2";
    GTEST_SKIP() << "no shared mobilenet_v2 at " << mobilenet_v2();
  }
  const fs::path dir = scratch("conv-chain");
  Result r = sh(std::string(KILN_BINARY) + " compile " + (mobilenet_v2() / "model.onnx").string() + " -o " +
                (dir / "model.kiln").string());
  ASSERT_EQ(r.status, 0) << r.out;
  fs::copy(mobilenet_v2() / "test_data_set_0", dir / "test_data_set_0", fs::copy_options::recursive);
  r = sh(std::string(KILN_BINARY) + " compile " + (dir / "model.kiln").string() + " --target cpp --threads 2 -o " +
         (dir / "project").string());
  ASSERT_EQ(r.status, 0) << r.out;
  std::ifstream f(dir / "project" / "model.cpp");
  const std::string code((std::istreambuf_iterator<char>(f)), {});
  EXPECT_NE(code.find("ConvChain"), std::string::npos) << "no chain was emitted";
  if (__builtin_cpu_supports("avx512f")) {
    EXPECT_NE(code.find("kiln_kernels::StemLayout L(kiln_kernels::StemShape{224"), std::string::npos)
        << "no chain starts from the input image's planes";
  }
  r = sh("cmake -S " + (dir / "project").string() + " -B " + (dir / "project" / "build").string() +
         " -DCMAKE_CXX_FLAGS='-Wall -Wextra -Werror' && cmake --build " + (dir / "project" / "build").string());
  ASSERT_EQ(r.status, 0) << r.out;
  r = sh((dir / "project" / "build" / "kiln_model_main").string() + " --runs 2");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("check passed"), std::string::npos) << r.out;
  if (!HasFailure()) fs::remove_all(dir);
}

// Two chains: from an NCHW image, a stem (read as planes), a max pool, a 1x1 expansion, a
// depthwise conv and a 1x1 projection, then pooled; on a second input, a chain of 1x1 and
// depthwise layers whose last adds a residual. Images large enough for several bands.
TEST(CodegenConvChain, ChainsOnTheBackendsScheduleMatch) {
  auto g = std::make_unique<ir::Graph>();
  g->opsets[""] = 17;
  ir::Value* x = g->add_input("x", ir::TensorType::from_dims(DType::Float, {2, 3, 190, 130}));
  ir::Value* x2 = g->add_input("x2", ir::TensorType::from_dims(DType::Float, {1, 16, 70, 61}));
  std::mt19937 wrng(11);
  int made = 0;
  auto node = [&](const std::string& op, std::vector<ir::Value*> ins, ir::Attributes a = {}) {
    ir::Value* o = g->add_value(op + std::to_string(made));
    g->add_node(op, ins, {o}, std::move(a), op + std::to_string(made++));
    return o;
  };
  auto conv = [&](ir::Value* v, int64_t c, int64_t m, int64_t k, int64_t stride, int64_t group) {
    ir::Attributes a;
    a["kernel_shape"] = ir::Attribute::of_ints({k, k});
    a["strides"] = ir::Attribute::of_ints({stride, stride});
    a["pads"] = ir::Attribute::of_ints({k / 2, k / 2, k / 2, k / 2});
    a["group"] = ir::Attribute::of_int(group);
    ir::Value* w = g->add_constant("w" + std::to_string(made), random_tensor({m, c / group, k, k}, wrng));
    ir::Value* b = g->add_constant("b" + std::to_string(made), random_tensor({m}, wrng));
    return node("Conv", {v, w, b}, a);
  };
  auto clip = [&](ir::Value* v) {
    return node("Clip", {v, g->add_constant("lo" + std::to_string(made), Tensor::scalar<float>(0.f)),
                         g->add_constant("hi" + std::to_string(made), Tensor::scalar<float>(6.f))});
  };
  ir::Value* stem = node("Relu", {conv(x, 3, 24, 3, 2, 1)});  // [2, 24, 95, 65]
  ir::Value* pool = node("MaxPool", {stem}, {{"kernel_shape", ir::Attribute::of_ints({3, 3})},
                                             {"strides", ir::Attribute::of_ints({2, 2})},
                                             {"pads", ir::Attribute::of_ints({1, 1, 1, 1})}});  // [2, 24, 48, 33]
  ir::Value* wide = clip(conv(pool, 24, 96, 1, 1, 1));
  ir::Value* dw = clip(conv(wide, 96, 96, 3, 1, 96));
  ir::Value* proj = conv(dw, 96, 40, 1, 1, 1);
  g->add_output(node("GlobalAveragePool", {clip(conv(proj, 40, 64, 1, 1, 1))}));
  ir::Value* e = node("Relu", {conv(x2, 16, 64, 1, 1, 1)});
  ir::Value* d = node("Relu", {conv(e, 64, 64, 3, 1, 64)});
  g->add_output(node("Add", {conv(d, 64, 16, 1, 1, 1), x2}));
  const fs::path dir = scratch("chains");
  std::mt19937 rng(12);
  write_model_with_data(*g, dir, {random_tensor({2, 3, 190, 130}, rng), random_tensor({1, 16, 70, 61}, rng)});
  for (const char* threads : {"1", "2"}) {
    fs::remove_all(dir / "project");
    Result r = emit_and_build(dir, std::string("--threads ") + threads);
    ASSERT_EQ(r.status, 0) << r.out;
    std::ifstream f(dir / "project" / "model.cpp");
    const std::string code((std::istreambuf_iterator<char>(f)), {});
    if (__builtin_cpu_supports("avx512f")) {
      EXPECT_NE(code.find("kiln_kernels::ChainStep steps0"), std::string::npos) << "no chain was emitted";
      EXPECT_NE(code.find("kiln_kernels::StemLayout L(kiln_kernels::StemShape{190"), std::string::npos)
          << "no chain reads the input image's planes";
    }
    r = sh((dir / "project" / "build" / "kiln_model_main").string() + " --runs 2");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("check passed"), std::string::npos) << threads << " threads: " << r.out;
  }
  if (!HasFailure() && !std::getenv("KILN_KEEP")) fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln::codegen
