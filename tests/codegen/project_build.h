// What the code generation tests share: a shell, a scratch folder, and emitting a model folder
// as a C++ project built with warnings as errors.
#pragma once
#include <kiln/session.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <memory>
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


// RNN, GRU and LSTM in every form kiln's recurrent kernels take: both directions and reverse,
// either layout, linear_before_reset or not, biases, initial states (inputs and constants),
// peepholes, input_forget, odd sizes; written with test data as write_model_with_data does.
inline void write_recurrent_model(const fs::path& dir) {
  auto g = std::make_unique<ir::Graph>();
  g->opsets[""] = 17;
  const int64_t S = 5, B = 2, I = 7, H = 6;
  ir::Value* x = g->add_input("x", ir::TensorType::from_dims(DType::Float, {S, B, I}));  // batch-major: [5 batch, 2 steps]
  ir::Value* h0 = g->add_input("h0", ir::TensorType::from_dims(DType::Float, {2, B, H}));
  std::mt19937 wrng(5);
  auto w = [&](const std::string& name, const std::vector<int64_t>& dims) {
    return g->add_constant(name, random_tensor(dims, wrng));
  };
  int made = 0;
  auto rnn = [&](const std::string& op, std::vector<ir::Value*> ins, ir::Attributes a, int outputs) {
    std::vector<ir::Value*> outs;
    for (int k = 0; k < outputs; ++k) outs.push_back(g->add_value(op + std::to_string(made) + "_" + std::to_string(k)));
    g->add_node(op, ins, outs, std::move(a), op + std::to_string(made++));
    for (ir::Value* o : outs) g->add_output(o);
  };
  auto attrs = [&](const char* direction, std::vector<std::pair<const char*, int64_t>> ints) {
    ir::Attributes a;
    a["hidden_size"] = ir::Attribute::of_int(H);
    a["direction"] = ir::Attribute::of_string(direction);
    for (const auto& [k, v] : ints) a[k] = ir::Attribute::of_int(v);
    return a;
  };
  rnn("GRU", {x, w("gw1", {2, 3 * H, I}), w("gr1", {2, 3 * H, H}), w("gb1", {2, 6 * H}), nullptr, h0},
      attrs("bidirectional", {{"linear_before_reset", 1}}), 2);
  rnn("GRU", {x, w("gw2", {1, 3 * H, I}), w("gr2", {1, 3 * H, H})}, attrs("reverse", {{"layout", 1}}), 2);
  rnn("LSTM",
      {x, w("lw1", {1, 4 * H, I}), w("lr1", {1, 4 * H, H}), w("lb1", {1, 8 * H}), nullptr,
       g->add_constant("lh0", random_tensor({1, B, H}, wrng)), g->add_constant("lc0", random_tensor({1, B, H}, wrng)),
       w("lp1", {1, 3 * H})},
      attrs("forward", {}), 3);
  rnn("LSTM", {x, w("lw2", {2, 4 * H, I}), w("lr2", {2, 4 * H, H}), w("lb2", {2, 8 * H})},
      attrs("bidirectional", {{"input_forget", 1}}), 3);
  rnn("RNN", {x, w("rw1", {2, H, I}), w("rr1", {2, H, H}), w("rb1", {2, 2 * H}), nullptr, h0}, attrs("bidirectional", {}), 2);
  rnn("RNN", {x, w("rw2", {1, H, I}), w("rr2", {1, H, H})}, attrs("reverse", {{"layout", 1}}), 2);
  std::mt19937 rng(13);
  write_model_with_data(*g, dir, {random_tensor({S, B, I}, rng), random_tensor({2, B, H}, rng)});
}

}  // namespace kiln::codegen
