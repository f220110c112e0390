// kiln run MODEL [--input NAME=FILE.pb ...]: runs a model (once unless --runs) and prints its outputs.
#include <kiln/session.h>

#include <sys/resource.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "frontend/onnx/tensor_proto.h"
#include "model_options.h"
#include "npy.h"
#include "tensor_io.h"

namespace kiln::cli {

void add_run_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("run", "Run a model once (random inputs unless given) and print its outputs");
  struct Args {
    LimitOptions limits;
    ModelOptions model_options;
    std::string model;
    std::vector<std::string> inputs, keep;
    std::string npz, save_dir, save_format = "npy";
    int count = 8, top_k = 0;
    bool json = false;
    int runs = 1, warmup = 0;
    uint32_t seed = 1;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("model", args->model, "Model file (.onnx or .kiln), or a model folder (its test_data_set_0 inputs)")
      ->required();
  cmd->add_option("-i,--input", args->inputs, "NAME=FILE: an input from a .pb (ONNX TensorProto) or .npy file");
  cmd->add_option("--inputs", args->npz, "FILE.npz: inputs by name (np.savez)");
  cmd->add_option("--save-outputs", args->save_dir, "DIR: write every output there, one file each, named after it");
  cmd->add_option("--save-format", args->save_format, "npy or pb (ONNX TensorProto)")
      ->check(CLI::IsMember({"npy", "pb"}))
      ->capture_default_str();
  cmd->add_option("--top-k", args->top_k, "Also print each output's K largest values of its last axis, with their indices")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--keep", args->keep, "Also print this intermediate value");
  cmd->add_option("--values", args->count, "Values to print per output")->check(CLI::Range(1, 1 << 30))->capture_default_str();
  cmd->add_option("--runs", args->runs, "Run this many times and report the median latency")
      ->check(CLI::Range(1, 1 << 30))
      ->capture_default_str();
  cmd->add_option("--warmup", args->warmup, "Untimed runs first")->check(CLI::Range(0, 1 << 30))->capture_default_str();
  cmd->add_option("--seed", args->seed, "Seed for random inputs")->capture_default_str();
  cmd->add_flag("--json", args->json, "Print one JSON object (outputs' types and first values, latency, memory) instead of text");
  args->model_options.add_to(cmd, "SYMBOL=N: extent of a symbolic dim for random inputs (default 1)");
  args->model_options.add_profile_to(cmd);
  args->limits.add_to(cmd);
  cmd->callback([args, &exit_code] {
    LimitsScope limits(args->limits.limits);
    SessionOptions opts = args->model_options.session();
    args->limits.apply(opts);
    opts.keep = args->keep;
    const ModelPath path = resolve_model(args->model);
    auto session = Session::create(path.model, opts);
    const std::map<std::string, int64_t> dims = single_dims(args->model_options.dims, session->inputs());
    const std::map<std::string, Tensor> feeds = model_inputs(*session, path, args->inputs, args->npz, dims, args->seed);
    // The plan for these shapes compiled before timing: the latency is the run's alone.
    std::vector<std::vector<int64_t>> shapes;
    bool tensors = true;
    for (const TensorInfo& in : session->inputs()) {
      tensors = tensors && !in.is_sequence;
      shapes.push_back(feeds.at(in.name).dims());
    }
    if (tensors) session->prepare(shapes);
    session->wait_ready();
    std::map<std::string, Tensor> outs;
    for (int r = 0; r < args->warmup; ++r) outs = session->run(feeds);
    args->model_options.start_profile(*session);
    std::vector<double> times;
    for (int r = 0; r < args->runs; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      outs = session->run(feeds);
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(times.begin(), times.end());
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    if (args->json) {
      nlohmann::json j = {{"latency_ms", times[times.size() / 2]}, {"runs", times.size()}, {"warmup", args->warmup},
                          {"peak_rss_bytes", static_cast<int64_t>(ru.ru_maxrss) * 1024}, {"outputs", nlohmann::json::array()}};
      auto add = [&](const std::string& name, const Tensor& t) {
        nlohmann::json values = nlohmann::json::array();
        if (t.kind() == ValueKind::Tensor && t.dtype() != DType::String)
          for (int64_t i = 0; i < t.numel() && i < args->count; ++i)
            values.push_back(dtype_is_float(t.dtype()) ? nlohmann::json(t.as_double(i)) : nlohmann::json(t.as_int64(i)));
        j["outputs"].push_back({{"name", name}, {"type", t.describe()}, {"values", values}});
      };
      for (const TensorInfo& o : session->outputs()) add(o.name, outs.at(o.name));
      for (const std::string& k : args->keep) add(k, outs.at(k));
      std::cout << j.dump() << "\n";
    } else {
      for (const TensorInfo& o : session->outputs()) std::cout << o.name << ": " << preview(outs.at(o.name), args->count) << "\n";
      for (const std::string& k : args->keep) std::cout << k << ": " << preview(outs.at(k), args->count) << "\n";
    }
    if (args->top_k > 0 && !args->json)
      for (const TensorInfo& o : session->outputs()) std::cout << o.name << " top " << args->top_k << ": " << top_k(outs.at(o.name), args->top_k) << "\n";
    if (!args->save_dir.empty()) {
      std::filesystem::create_directories(args->save_dir);
      for (const TensorInfo& o : session->outputs()) {
        std::string file = o.name;
        for (char& ch : file)
          if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '_' && ch != '-') ch = '_';
        const std::string path = (std::filesystem::path(args->save_dir) / (file + "." + args->save_format)).string();
        if (args->save_format == "npy") save_npy(outs.at(o.name), path);
        else onnx_fe::save_tensor_file(outs.at(o.name), o.name, path);
        if (!args->json) std::cout << "wrote " << path << "\n";
      }
    }
    if (!args->json) {
      std::cout << "latency: " << times[times.size() / 2] << " ms (median of " << times.size() << " runs)\n";
      std::cout << "peak memory (RSS): " << ru.ru_maxrss / 1024.0 << " MiB\n";
    }
    if (!args->json) args->model_options.end_profile(*session);
    else if (!args->model_options.profile.empty()) session->end_profiling();
    exit_code = 0;
  });
}

}  // namespace kiln::cli
