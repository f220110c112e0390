// kiln bench MODEL.onnx: session-creation time, then latency over repeated runs on random
// inputs (median/min/max), and the arena size. --json prints exactly one JSON object.
// --pair-disable NAME also builds a second session without that lowering rewrite (or kernel
// implementation) and times the two in alternating runs: on a machine whose speed drifts, the
// median of the per-pair ratios says what it is worth far more steadily than two benchmarks.
#include <kiln/session.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cmath>
#include <mutex>
#include <thread>

#include "commands.h"
#include "model_options.h"
#include "tensor_io.h"

namespace kiln::cli {

void add_bench_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("bench", "Time a model: session creation, median/min/max latency, arena bytes");
  struct Args {
    LimitOptions limits;
    ModelOptions model_options;
    std::string model;
    int runs = 20, warmup = 3, concurrency = 1;
    double duration = 0, min_seconds = 0;
    bool json = false;
    std::vector<std::string> pair_disable, inputs;
    std::string npz;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("model", args->model, "Model file (.onnx or .kiln), or a model folder (its test_data_set_0 inputs)")
      ->required();
  cmd->add_option("-i,--input", args->inputs, "NAME=FILE: an input from a .pb (ONNX TensorProto) or .npy file (else random)");
  cmd->add_option("--inputs", args->npz, "FILE.npz: inputs by name (np.savez)");
  cmd->add_option("--runs", args->runs, "Timed runs")->check(CLI::Range(1, 1 << 30))->capture_default_str();
  cmd->add_option("--warmup", args->warmup, "Untimed runs first")->check(CLI::Range(0, 1 << 30))->capture_default_str();
  cmd->add_option("--duration", args->duration, "Time runs for this many seconds instead of --runs")
      ->check(CLI::Range(0.001, 86400.0));
  cmd->add_option("--min-seconds", args->min_seconds,
                  "Keep timing past --runs until this many seconds have passed (a window as long as "
                  "ONNX Runtime's perf harnesses time, whatever the model's speed)")
      ->check(CLI::Range(0.0, 86400.0))
      ->excludes("--duration");
  cmd->add_option("--concurrency", args->concurrency,
                  "Requests in flight at once: this many threads run the one session (throughput and latency)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  args->model_options.add_to(cmd, "SYMBOL=N: extent of a symbolic input dim (default 1)");
  args->model_options.add_profile_to(cmd);
  cmd->add_option("--pair-disable", args->pair_disable,
                  "Also time a session without this rewrite or kernel, in alternating runs; print the paired ratio");
  cmd->add_flag("--json", args->json, "Print one JSON object instead of text");
  args->limits.add_to(cmd);
  cmd->callback([args, &exit_code] {
    LimitsScope limits(args->limits.limits);
    SessionOptions opts = args->model_options.session();
    args->limits.apply(opts);
    auto t0 = std::chrono::steady_clock::now();
    const ModelPath path = resolve_model(args->model);
    auto session = Session::create(path.model, opts);
    double create_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    // Weight transforms some kernels left to a background thread finish before timing starts
    // (the session already ran correctly without them).
    session->wait_ready();
    double ready_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const std::map<std::string, int64_t> dims = single_dims(args->model_options.dims, session->inputs());
    const std::map<std::string, Tensor> feeds = model_inputs(*session, path, args->inputs, args->npz, dims, 1);
    for (int i = 0; i < args->warmup; ++i) session->run(feeds);
    session->wait_ready();  // plans first built by the warm-up (dynamic input shapes)
    std::unique_ptr<Session> other;  // --pair-disable: the same model without those rewrites
    if (!args->pair_disable.empty()) {
      SessionOptions o = opts;
      add_disabled(o, args->pair_disable);
      other = Session::create(path.model, o);
      other->wait_ready();
      for (int i = 0; i < args->warmup; ++i) other->run(feeds);
      other->wait_ready();
    }
    auto time_run = [&](const Session& s) {
      auto start = std::chrono::steady_clock::now();
      s.run(feeds);
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    };
    if (other && (args->concurrency > 1 || args->duration > 0))
      throw Error("--pair-disable times alternating runs: not with --concurrency or --duration");
    std::vector<double> ms, other_ms, ratios;
    args->model_options.start_profile(*session);
    const auto bench_start = std::chrono::steady_clock::now();
    auto elapsed_s = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - bench_start).count(); };
    auto more = [&](size_t done) {
      if (args->duration > 0) return elapsed_s() < args->duration;
      return done < static_cast<size_t>(args->runs) || (args->min_seconds > 0 && elapsed_s() < args->min_seconds);
    };
    if (args->concurrency > 1) {
      // Requests in parallel on one session: each thread runs until the count or time is spent.
      std::mutex mu;
      std::atomic<size_t> started{0};
      std::vector<std::thread> threads;
      std::exception_ptr failure;
      for (int t = 0; t < args->concurrency; ++t)
        threads.emplace_back([&] {
          try {
            while (more(started.fetch_add(1))) {
              const double v = time_run(*session);
              std::lock_guard<std::mutex> lock(mu);
              ms.push_back(v);
            }
          } catch (...) {
            std::lock_guard<std::mutex> lock(mu);
            failure = std::current_exception();
          }
        });
      for (auto& t : threads) t.join();
      if (failure) std::rethrow_exception(failure);
    }
    for (size_t i = 0; args->concurrency == 1 && more(i); ++i) {
      if (!other) {
        ms.push_back(time_run(*session));
        continue;
      }
      // Alternate which goes first, so neither always runs on caches the other warmed.
      double a, b;
      if (i % 2 == 0) a = time_run(*session), b = time_run(*other);
      else b = time_run(*other), a = time_run(*session);
      ms.push_back(a);
      other_ms.push_back(b);
      ratios.push_back(b / a);
    }
    const double wall_s = elapsed_s();
    auto median_of = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    };
    const double median = median_of(ms);
    std::sort(ms.begin(), ms.end());
    // Nearest-rank percentiles of the timed runs (the warm-up excluded).
    auto pct = [&](double p) { return ms[std::min(ms.size() - 1, static_cast<size_t>(std::ceil(p / 100.0 * ms.size())) - 1)]; };
    const double throughput = static_cast<double>(ms.size()) / wall_s;
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    if (args->json) {
      nlohmann::json j = {{"median_ms", median},          {"min_ms", ms.front()},
                          {"max_ms", ms.back()},          {"session_create_ms", create_ms},
                          {"session_ready_ms", ready_ms},
                          {"arena_bytes", session->arena_bytes()}, {"threads", args->model_options.threads},
                          {"runs", ms.size()},            {"peak_rss_bytes", static_cast<int64_t>(ru.ru_maxrss) * 1024},
                          {"p50_ms", pct(50)},            {"p90_ms", pct(90)},
                          {"p99_ms", pct(99)},            {"warmup", args->warmup},
                          {"concurrency", args->concurrency}, {"throughput_per_s", throughput},
                          {"wall_s", wall_s}};
      const SessionStats st = session->stats();
      j["plans"] = {{"built", st.plans_built}, {"loaded", st.plans_loaded}, {"kernel_choices", st.kernel_choices},
                    {"lowering_passes", st.lowering_passes}, {"optimizer_passes", st.optimizer_passes},
                    {"plan_threads", st.plan_threads}, {"splits_rederived", st.splits_rederived},
                    {"packed_buffers_loaded", st.packed_buffers_loaded}, {"kernels_repacked", st.kernels_repacked}};
      if (other)
        j["paired"] = {{"disabled", args->pair_disable}, {"median_ms", median_of(other_ms)},
                       {"ratio_median", median_of(ratios)}};
      std::cout << j.dump() << "\n";
    } else {
      std::printf("model:          %s\n", args->model.c_str());
      // How OpenMP workers wait between ops changes 2-thread latency (main.cpp).
      const char* wait = std::getenv("OMP_WAIT_POLICY");
      std::printf("threads:        %d (OMP_WAIT_POLICY=%s)\n", args->model_options.threads, wait ? wait : "unset");
      std::printf("session create: %.1f ms (ready %.1f ms)\n", create_ms, ready_ms);
      const SessionStats st = session->stats();
      if (st.plans_loaded > 0)
        std::printf("plans:          %lld loaded (made for %d threads%s), %lld compiled here\n",
                    static_cast<long long>(st.plans_loaded), st.plan_threads,
                    st.splits_rederived ? (", " + std::to_string(st.splits_rederived) + " kernels' splits re-derived").c_str()
                                        : "",
                    static_cast<long long>(st.plans_built));
      if (st.plans_loaded > 0)
        std::printf("packed weights: %lld buffers loaded%s\n", static_cast<long long>(st.packed_buffers_loaded),
                    st.kernels_repacked ? (", " + std::to_string(st.kernels_repacked) + " kernels packed again").c_str() : "");
      std::printf("latency:        median %.3f ms, min %.3f ms, max %.3f ms (%zu runs, %d warmup)\n", median, ms.front(),
                  ms.back(), ms.size(), args->warmup);
      std::printf("percentiles:    p50 %.3f ms, p90 %.3f ms, p99 %.3f ms\n", pct(50), pct(90), pct(99));
      std::printf("throughput:     %.1f runs/s (%d in flight, %.2f s)\n", throughput, args->concurrency, wall_s);
      std::printf("arena:          %lld bytes\n", static_cast<long long>(session->arena_bytes()));
      std::printf("peak RSS:       %.1f MiB\n", ru.ru_maxrss / 1024.0);
      if (other) {
        std::string names;
        for (const std::string& n : args->pair_disable) names += (names.empty() ? "" : ",") + n;
        std::printf("paired:         without %s: median %.3f ms; per-pair ratio without/with: median %.3f (%zu pairs)\n",
                    names.c_str(), median_of(other_ms), median_of(ratios), ratios.size());
      }
    }
    if (!args->json) args->model_options.end_profile(*session);
    else if (!args->model_options.profile.empty()) session->end_profiling();
    exit_code = 0;
  });
}

}  // namespace kiln::cli
