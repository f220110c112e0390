// kiln compile MODEL -o OUT [--target kiln|cpp|cuda] [--dim SYMBOL=N[,M...]] [--threads N]: the one
// compile command. --target kiln (the default) writes a .kiln file (runtime/kiln_file.h): the
// optimized graph, every precompiled input-shape signature's lowered graph and executable plan,
// which `kiln run/check/bench` and Session::create load without the source model.
#include <kiln/error.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include "codegen/cpp/cpp_project.h"
#include "codegen/cuda/cuda_project.h"
#include "commands.h"
#include "model_options.h"
#include "progress.h"
#include "runtime/session_access.h"

namespace kiln::cli {

namespace {

// Every combination of the given symbol values, as one dims vector per input.
std::vector<std::vector<std::vector<int64_t>>> signatures(const std::vector<TensorInfo>& inputs,
                                                          const std::map<std::string, std::vector<int64_t>>& dims) {
  check_dim_symbols(dims, inputs);
  std::vector<std::map<std::string, int64_t>> bindings{{}};
  for (const auto& [sym, values] : dims) {
    std::vector<std::map<std::string, int64_t>> next;
    for (const auto& b : bindings)
      for (int64_t v : values) {
        auto c = b;
        c[sym] = v;
        next.push_back(c);
      }
    bindings = std::move(next);
  }
  std::vector<std::vector<std::vector<int64_t>>> out;
  for (const auto& b : bindings) {
    std::vector<std::vector<int64_t>> sig;
    for (const TensorInfo& in : inputs) {
      if (in.is_sequence || !in.rank_known) throw Error("input '" + in.name + "' (" + in.str() + ") has no fixed shape to compile for");
      std::vector<int64_t> d;
      for (size_t i = 0; i < in.dims.size(); ++i) {
        if (in.dims[i] >= 0) { d.push_back(in.dims[i]); continue; }
        auto it = b.find(in.symbols[i]);
        if (it == b.end())
          throw Error("input '" + in.name + "' (" + in.str() + "): give its dim '" + in.symbols[i] + "' with --dim " +
                      in.symbols[i] + "=N");
        d.push_back(it->second);
      }
      sig.push_back(std::move(d));
    }
    out.push_back(std::move(sig));
  }
  return out;
}

}  // namespace

void add_compile_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("compile", "Compile a model ahead of time (.kiln: runs without the source model)");
  struct Args {
    ModelOptions model_options;
    std::string model, out, target = "kiln", isa;
    bool embed_weights = false, no_onednn = false, check_on_cpu = false;
    int streams = codegen::CudaOptions{}.streams;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("model", args->model, "Model file (.onnx or .kiln)")->required();
  cmd->add_option("-o,--output", args->out,
                  "Output file (default: MODEL with the extension .kiln); with --target cpp the project's folder");
  cmd->add_option("--target", args->target,
                  "What to emit: kiln (a .kiln file), cpp (a standalone C++ project) or cuda (a CUDA project)")
      ->check(CLI::IsMember({"kiln", "cpp", "cuda"}))
      ->capture_default_str();
  cmd->add_flag("--embed-weights", args->embed_weights, "--target cpp: link weights.bin into the program");
  cmd->add_flag("--no-onednn", args->no_onednn, "--target cpp: kiln's portable kernels only, no dependency at all");
  cmd->add_option("--isa", args->isa,
                  "--target cpp: the CPU features the emitted kernels use: avx512f, avx2 (with FMA) or baseline "
                  "(default: this machine's)")
      ->check(CLI::IsMember({"avx512f", "avx2", "baseline"}));
  cmd->add_flag("--check-on-cpu", args->check_on_cpu,
                "--target cuda: the project builds model.cu as host C++ by default (no GPU; checks the kernels)");
  cmd->add_option("--streams", args->streams,
                  "--target cuda: at most this many CUDA streams, on which independent branches run concurrently "
                  "(1: every instruction in order)")
      ->check(CLI::Range(1, 32))
      ->capture_default_str();
  args->model_options.add_to(cmd, "SYMBOL=N[,M...]: precompile these extents of a symbolic input dim (every combination)");
  cmd->callback([args, &exit_code] {
    const bool cpp = args->target == "cpp", cuda = args->target == "cuda";
    if (!cpp && (args->embed_weights || args->no_onednn || !args->isa.empty()))
      throw Error("--embed-weights, --no-onednn and --isa go with --target cpp");
    if (!cuda && (args->check_on_cpu || args->streams != codegen::CudaOptions{}.streams))
      throw Error("--check-on-cpu and --streams go with --target cuda");
    if ((cpp || cuda) && args->out.empty()) throw Error("--target " + args->target + " writes a folder: give it with -o DIR");
    const auto t0 = std::chrono::steady_clock::now();
    SessionOptions o = args->model_options.session();
    // The emitted kernels' CPU: --isa, else this machine (as the plan's isa will say).
    const bool avx512 = args->isa.empty() ? __builtin_cpu_supports("avx512f") != 0 : args->isa == "avx512f";
    const std::vector<std::string>& skip =
        cpp ? codegen::cpp_disabled_passes(!args->no_onednn, avx512) : codegen::cuda_disabled_passes();
    if (cpp || cuda) o.disabled_passes.insert(o.disabled_passes.end(), skip.begin(), skip.end());
    auto s = Session::create(args->model, o);
    const auto sigs = signatures(s->inputs(), parse_dims(args->model_options.dims));
    {
      Progress progress("compiling plan");
      for (size_t k = 0; k < sigs.size(); ++k) {
        progress.update(k + 1, sigs.size(), "");
        s->prepare(sigs[k]);
      }
    }
    std::vector<codegen::PlanSource> plans;
    for (const auto& sig : sigs)
      for (const auto& cp : SessionAccess::plans(*s))
        if (cp->input_dims == sig) plans.push_back({cp->graph.get(), &cp->plan, cp->input_dims});
    std::string test_data = std::filesystem::path(args->model).parent_path().string();
    if (test_data.empty()) test_data = ".";
    if (cuda) {
      codegen::CudaOptions co;
      co.source = std::filesystem::path(args->model).filename().string();
      co.test_data = test_data;
      co.check_on_cpu = args->check_on_cpu;
      co.streams = args->streams;
      const codegen::CudaProjectStats st = codegen::write_cuda_project(plans, co, args->out);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      std::printf("wrote %s: %zu signature(s), %d instructions (%d views), %d generated kernels; weights %lld bytes, "
                  "arena %lld bytes, scratch %lld bytes; %d test set(s); %.0f ms\n",
                  args->out.c_str(), plans.size(), st.instructions, st.views, st.kernels,
                  static_cast<long long>(st.weights_bytes), static_cast<long long>(st.arena_bytes),
                  static_cast<long long>(st.scratch_bytes), st.test_sets, ms);
      std::printf("%s", codegen::placement_report(st.placed, false).c_str());
      std::printf("build: cmake -S %s -B %s/build && cmake --build %s/build && %s/build/kiln_model_main%s\n",
                  args->out.c_str(), args->out.c_str(), args->out.c_str(), args->out.c_str(),
                  args->check_on_cpu ? " (host C++ through the CUDA shim; -DKILN_MODEL_ON_CPU=OFF for the GPU)"
                                     : " (-DKILN_MODEL_ON_CPU=ON checks it on a machine without a GPU)");
      exit_code = 0;
      return;
    }
    if (cpp) {
      codegen::CppOptions co;
      co.embed_weights = args->embed_weights;
      co.source = std::filesystem::path(args->model).filename().string();
      co.test_data = test_data;
      co.isa = args->isa.empty()       ? plans.front().plan->isa
               : args->isa == "avx512f" ? std::vector<std::string>{"avx512f"}
               : args->isa == "avx2"    ? std::vector<std::string>{"avx2", "fma"}
                                        : std::vector<std::string>{};
      co.threads = args->model_options.threads;
      co.onednn = !args->no_onednn;
      const codegen::CppProjectStats st = codegen::write_cpp_project(plans, co, args->out);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      std::string kernels;
      for (const std::string& k : st.kernels) kernels += (kernels.empty() ? "" : ", ") + k;
      std::printf("wrote %s: %zu signature(s), %d instructions (%d views), kernels %s; weights %lld bytes, arena %lld "
                  "bytes; %d test set(s); %.0f ms\n",
                  args->out.c_str(), plans.size(), st.instructions, st.views, kernels.c_str(),
                  static_cast<long long>(st.weights_bytes), static_cast<long long>(st.arena_bytes), st.test_sets, ms);
      std::printf("build: cmake -S %s -B %s/build && cmake --build %s/build && %s/build/kiln_model_main\n",
                  args->out.c_str(), args->out.c_str(), args->out.c_str(), args->out.c_str());
      exit_code = 0;
      return;
    }
    std::string out = args->out;
    if (out.empty()) out = std::filesystem::path(args->model).replace_extension(".kiln").string();
    s->save(out);
    const SessionStats st = s->stats();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("wrote %s: %lld plan(s) for %d thread(s), %lld bytes, %.0f ms\n", out.c_str(),
                static_cast<long long>(st.plans_built + st.plans_loaded), args->model_options.threads,
                static_cast<long long>(std::filesystem::file_size(out)), ms);
    exit_code = 0;
  });
}

}  // namespace kiln::cli
