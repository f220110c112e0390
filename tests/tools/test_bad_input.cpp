// Bad input must end in one clear message and exit code 2: never a crash or a wrong answer.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <random>

#include "cli_util.h"
#include "frontend/onnx/tensor_proto.h"

namespace kiln::testing {

namespace fs = std::filesystem;

namespace {
void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f << bytes;
}
std::string read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
void expect_error(const CliResult& r, const std::string& fragment) {
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("kiln: error:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(fragment), std::string::npos) << "expected '" << fragment << "' in: " << r.output;
}
}  // namespace

TEST(BadInput, EmptyFile) {
  fs::path d = temp_dir("empty");
  write_bytes(d / "model.onnx", "");
  expect_error(run_kiln({"run", (d / "model.onnx").string()}), "model file is empty");
}

TEST(BadInput, RandomBytes) {
  fs::path d = temp_dir("random");
  std::mt19937 rng(7);
  std::string bytes(4096, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  write_bytes(d / "model.onnx", bytes);
  expect_error(run_kiln({"run", (d / "model.onnx").string()}), "not a valid ONNX model");
}

TEST(BadInput, TruncatedModel) {
  fs::path d = temp_dir("truncated");
  std::string full = read_bytes(source_dir() / "models/squeezenet1_1/model.onnx");
  ASSERT_GT(full.size(), 100000u);
  for (size_t cut : {size_t{10}, full.size() / 3, full.size() - 7}) {
    write_bytes(d / "model.onnx", full.substr(0, cut));
    auto r = run_kiln({"run", (d / "model.onnx").string()});
    EXPECT_EQ(r.exit_code, 2) << "cut at " << cut << ": " << r.output;
    EXPECT_NE(r.output.find("kiln: error:"), std::string::npos) << r.output;
  }
}

TEST(BadInput, MissingFile) {
  expect_error(run_kiln({"run", "/nonexistent/model.onnx"}), "cannot open model file");
}

TEST(BadInput, NotARegularFileIsRefusedWithoutWaiting) {
  expect_error(run_kiln({"run", "/dev/null"}), "not a regular file");
  // A FIFO with no writer: opening it for reading would block until one came.
  fs::path d = temp_dir("fifo");
  ASSERT_EQ(::mkfifo((d / "model.onnx").c_str(), 0600), 0);
  expect_error(run_kiln({"run", (d / "model.onnx").string()}), "not a regular file");
}

TEST(BadInput, UnknownOp) {
  fs::path d = temp_dir("unknown_op");
  save_model(tiny_model({2, 3}, {{"FrobnicateTensor", {"x"}, {"y"}}}), d / "model.onnx");
  expect_error(run_kiln({"run", (d / "model.onnx").string()}), "node 'n0' (FrobnicateTensor): unsupported op");
}

TEST(BadInput, NodeInputNobodyProduces) {
  fs::path d = temp_dir("dangling");
  save_model(tiny_model({2, 3}, {{"Relu", {"ghost"}, {"y"}}}), d / "model.onnx");
  expect_error(run_kiln({"run", (d / "model.onnx").string()}),
               "node 'n0' (Relu): input 'ghost' is not produced by any node, initializer or graph input");
}

TEST(BadInput, NodeMissingRequiredInput) {
  fs::path d = temp_dir("missing_required");
  save_model(tiny_model({2, 3}, {{"Add", {"x"}, {"y"}}}), d / "model.onnx");
  expect_error(run_kiln({"run", (d / "model.onnx").string()}), "node 'n0' (Add)");
}

TEST(BadInput, MissingRunInputFileName) {
  fs::path d = temp_dir("bad_input_name");
  save_model(tiny_model({2, 3}, {{"Relu", {"x"}, {"y"}}}), d / "model.onnx");
  onnx_fe::save_tensor_file(Tensor(DType::Float, {2, 3}), "x", d / "x.pb");
  expect_error(run_kiln({"run", (d / "model.onnx").string(), "--input", "nope=" + (d / "x.pb").string()}),
               "no input named 'nope'");
}

TEST(BadInput, WrongInputShape) {
  fs::path d = temp_dir("wrong_shape");
  save_model(tiny_model({2, 3}, {{"Relu", {"x"}, {"y"}}}), d / "model.onnx");
  onnx_fe::save_tensor_file(Tensor(DType::Float, {3, 2}), "x", d / "x.pb");
  expect_error(run_kiln({"run", (d / "model.onnx").string(), "--input", "x=" + (d / "x.pb").string()}),
               "input 'x': expected shape float[2,3], got shape [3,2] (dim 0 must be 2)");
}

TEST(BadInput, WrongInputDtype) {
  fs::path d = temp_dir("wrong_dtype");
  save_model(tiny_model({2, 3}, {{"Relu", {"x"}, {"y"}}}), d / "model.onnx");
  onnx_fe::save_tensor_file(Tensor(DType::Int64, {2, 3}), "x", d / "x.pb");
  expect_error(run_kiln({"run", (d / "model.onnx").string(), "--input", "x=" + (d / "x.pb").string()}),
               "input 'x': expected dtype float, got int64");
}

TEST(BadInput, CheckWithoutTestData) {
  fs::path d = temp_dir("no_data");
  save_model(tiny_model({2, 3}, {{"Relu", {"x"}, {"y"}}}), d / "model.onnx");
  expect_error(run_kiln({"check", d.string()}), "no test_data_set_* folder");
}

// A model file named without a folder is read from the current one, its test data too.
TEST(BadInput, CheckOfABareFileNameLooksInTheCurrentFolder) {
  fs::path d = temp_dir("bare_name");
  save_model(tiny_model({2, 3}, {{"Relu", {"x"}, {"y"}}}), d / "tiny.onnx");
  const fs::path was = fs::current_path();
  fs::current_path(d);
  const CliResult r = run_kiln({"check", "tiny.onnx"});
  fs::current_path(was);
  expect_error(r, "no test_data_set_* folder in '.'");
}

TEST(BadInput, CycleNamesANode) {
  fs::path d = temp_dir("cycle");
  save_model(tiny_model({2, 3}, {{"Add", {"x", "b"}, {"a"}}, {"Relu", {"a"}, {"b"}}, {"Relu", {"a"}, {"y"}}}),
             d / "model.onnx");
  expect_error(run_kiln({"run", (d / "model.onnx").string()}), "cycle");
}

}  // namespace kiln::testing
