// Helpers for tests that drive the kiln binary and build small ONNX files.
#pragma once
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <string>
#include <vector>

namespace kiln::testing {

struct CliResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs build/kiln with the given arguments (shell-quoted here), killed after 120 s
// (KILN_TEST_TIMEOUT) so a hang fails the test with exit code 124 instead of stalling it.
CliResult run_kiln(const std::vector<std::string>& args);

// A fresh temporary folder for one test.
std::filesystem::path temp_dir(const std::string& name);

// A minimal model: one float input "x" of `dims` (a negative one: the symbol "N"), nodes given
// as (op, inputs, outputs), one float output "y".
onnx::ModelProto tiny_model(const std::vector<int64_t>& dims,
                            const std::vector<std::tuple<std::string, std::vector<std::string>, std::vector<std::string>>>& nodes,
                            int opset = 13);
void save_model(const onnx::ModelProto& m, const std::filesystem::path& path);

std::filesystem::path source_dir();  // the repository root

}  // namespace kiln::testing
