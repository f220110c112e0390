// What the code generation tests share: a shell, a scratch folder, and emitting a model folder
// as a C++ project built with warnings as errors.
#pragma once
#include <kiln/session.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>
#include <sys/wait.h>
#include <unistd.h>

#include "frontend/onnx/exporter.h"
#include "frontend/onnx/tensor_proto.h"
#include "ir/graph.h"

namespace kiln::codegen {

namespace fs = std::filesystem;

struct Result {
  int status = -1;
  std::string out;
};

inline Result sh(const std::string& cmd) {
  Result r;
  std::FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

inline fs::path scratch(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("kiln-codegen-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Emits dir/model.onnx into dir/project and builds it with warnings as errors.
inline Result emit_and_build(const fs::path& dir, const std::string& flags = "") {
  Result r = sh(std::string(KILN_BINARY) + " compile " + (dir / "model.onnx").string() + " --target cpp -o " +
                (dir / "project").string() + " " + flags);
  if (r.status != 0) return r;
  r = sh("cmake -S " + (dir / "project").string() + " -B " + (dir / "project" / "build").string() +
         " -DCMAKE_CXX_FLAGS='-Wall -Wextra -Werror' && cmake --build " + (dir / "project" / "build").string());
  return r;
}

inline Tensor random_tensor(const std::vector<int64_t>& dims, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  Tensor t(DType::Float, dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// Writes g as dir/model.onnx with test_data_set_0: `inputs`, and the outputs the reference
// kernels compute from them.
inline void write_model_with_data(const ir::Graph& g, const fs::path& dir, const std::vector<Tensor>& inputs) {
  onnx_fe::save_model(g, dir / "model.onnx");
  SessionOptions o;
  o.backend = "reference";
  auto s = Session::create((dir / "model.onnx").string(), o);
  const std::vector<Tensor> outs = s->run(inputs);
  fs::create_directories(dir / "test_data_set_0");
  for (size_t i = 0; i < inputs.size(); ++i)
    onnx_fe::save_tensor_file(inputs[i], g.inputs()[i]->name(),
                              dir / "test_data_set_0" / ("input_" + std::to_string(i) + ".pb"));
  for (size_t i = 0; i < outs.size(); ++i)
    onnx_fe::save_tensor_file(outs[i], g.outputs()[i]->name(),
                              dir / "test_data_set_0" / ("output_" + std::to_string(i) + ".pb"));
}

}  // namespace kiln::codegen
