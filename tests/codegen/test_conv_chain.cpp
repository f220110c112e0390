// A .kiln compiled for kiln's runtime holds its conv chains (kiln.ConvChain, the input Transpose
// inside the first): emitted from it, the chains run banded with sliding windows and match the
// model's test data. The shared mobilenet_v2 has a dozen chains, the first from the NCHW input.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

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
  EXPECT_NE(code.find("nchw_rows_to_nhwc"), std::string::npos) << "no chain starts from the input transpose";
  r = sh("cmake -S " + (dir / "project").string() + " -B " + (dir / "project" / "build").string() +
         " -DCMAKE_CXX_FLAGS='-Wall -Wextra -Werror' && cmake --build " + (dir / "project" / "build").string());
  ASSERT_EQ(r.status, 0) << r.out;
  r = sh((dir / "project" / "build" / "kiln_model_main").string() + " --runs 2");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("check passed"), std::string::npos) << r.out;
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln::codegen
