// kiln run MODEL.onnx [--input NAME=FILE.pb ...]: runs a model once and prints its outputs.
#include <kiln/session.h>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "commands.h"
#include "frontend/onnx/tensor_proto.h"
#include "tensor_io.h"

namespace kiln::cli {

void add_run_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("run", "Run a model once (random inputs unless given) and print its outputs");
  struct Args {
    LimitOptions limits;
    std::string model;
    std::vector<std::string> inputs, dims, keep;
    int count = 8;
    int runs = 1;
    uint32_t seed = 1;
    int level = 3;
    int fusion = 3;
    bool tune = false;
    std::string backend = "cpu";
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("model", args->model, "Model file (.onnx)")->required();
  cmd->add_option("-i,--input", args->inputs, "NAME=FILE.pb: an input from a TensorProto file");
  cmd->add_option("--dim", args->dims, "SYMBOL=N: extent of a symbolic dim for random inputs (default 1)");
  cmd->add_option("--keep", args->keep, "Also print this intermediate value");
  cmd->add_option("--values", args->count, "Values to print per output")->capture_default_str();
  cmd->add_option("--runs", args->runs, "Run this many times and report the median latency")->capture_default_str();
  cmd->add_option("--seed", args->seed, "Seed for random inputs")->capture_default_str();
  cmd->add_option("--level", args->level, "Graph optimization level 0..3")->capture_default_str();
  cmd->add_option("--backend", args->backend, "cpu or reference")->capture_default_str();
  cmd->add_flag("--tune", args->tune, "Time the candidate kernels of each node once and keep the fastest (cached)");
  cmd->add_option("--fusion", args->fusion, "Operator fusion level 0..3 (0 none, 3 all)")
      ->check(CLI::Range(0, 3))
      ->capture_default_str();
  args->limits.add_to(cmd);
  cmd->callback([args, &exit_code] {
    LimitsScope limits(args->limits.limits);
    SessionOptions opts;
    args->limits.apply(opts);
    opts.keep = args->keep;
    opts.opt_level = args->level;
    opts.fusion_level = args->fusion;
    opts.tune = args->tune;
    opts.backend = args->backend;
    auto session = Session::create(args->model, opts);
    std::map<std::string, int64_t> dims;
    for (const std::string& d : args->dims) {
      auto eq = d.find('=');
      if (eq == std::string::npos) throw Error("--dim expects SYMBOL=N, got '" + d + "'");
      dims[d.substr(0, eq)] = std::stoll(d.substr(eq + 1));
    }
    std::map<std::string, Tensor> given;
    for (const std::string& s : args->inputs) {
      auto eq = s.find('=');
      if (eq == std::string::npos) throw Error("--input expects NAME=FILE.pb, got '" + s + "'");
      given[s.substr(0, eq)] = onnx_fe::load_tensor_file(s.substr(eq + 1));
    }
    std::map<std::string, Tensor> feeds;
    uint32_t seed = args->seed;
    for (const TensorInfo& in : session->inputs()) {
      auto it = given.find(in.name);
      feeds[in.name] = it != given.end() ? it->second : random_input(in, dims, seed++);
      if (it != given.end()) given.erase(it);
    }
    if (!given.empty()) throw Error("the model has no input named '" + given.begin()->first + "'");
    std::map<std::string, Tensor> outs;
    std::vector<double> times;
    for (int r = 0; r < std::max(1, args->runs); ++r) {
      auto t0 = std::chrono::steady_clock::now();
      outs = session->run(feeds);
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    for (const TensorInfo& o : session->outputs()) std::cout << o.name << ": " << preview(outs.at(o.name), args->count) << "\n";
    for (const std::string& k : args->keep) std::cout << k << ": " << preview(outs.at(k), args->count) << "\n";
    std::sort(times.begin(), times.end());
    std::cout << "latency: " << times[times.size() / 2] << " ms (median of " << times.size() << " runs)\n";
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    std::cout << "peak memory (RSS): " << ru.ru_maxrss / 1024.0 << " MiB\n";
    exit_code = 0;
  });
}

}  // namespace kiln::cli
