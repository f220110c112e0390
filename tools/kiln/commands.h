// The kiln command-line program: one file per subcommand, each adding itself to the app.
// Exit codes: 0 success, 1 a check found a mismatch, 2 any error (bad model, bad input, ...).
#pragma once
#include <kiln/session.h>

#include <CLI/CLI.hpp>

namespace kiln::cli {

// --memory-cap and --max-loop-iterations (run, check, bench). The command holds a LimitsScope
// of them for its whole run, so its own allocations (inputs, test data) obey them too.
struct LimitOptions {
  Limits limits;
  void add_to(CLI::App* cmd) {
    cmd->add_option("--memory-cap", limits.memory_cap_bytes,
                    "Largest single allocation the model may cause, in bytes (suffixes KB, MB, GB: powers of 1024)")
        ->transform(CLI::AsSizeValue(false))
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    cmd->add_option("--max-loop-iterations", limits.max_loop_iterations, "Iterations one Loop node may run")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
  }
  void apply(SessionOptions& o) const {
    o.memory_cap_bytes = limits.memory_cap_bytes;
    o.max_loop_iterations = limits.max_loop_iterations;
  }
};

// --disable NAME (check, bench): a lowering rewrite of the cpu backend (its names in
// lower::lowering_pass_names()) or, for any other name, a kernel implementation; the session
// says when a name is neither.
void add_disabled(SessionOptions& o, const std::vector<std::string>& names);
inline constexpr const char* kDisableHelp =
    "A lowering rewrite (channels_last, channel_shuffle, channel_scale, conv_concat, conv_concat_branches, conv_chain, conv_chain_input, conv_chain_channels, conv_prologue, blocked_layout, gemv_chain) "
    "or a kernel (kiln_pointwise, kiln_depthwise, gemv, onednn_winograd, ...) to skip";

// "kiln 0.1.0 (abc1234), oneDNN 3.0.0, CPU: avx512f avx2 fma" (version.cpp).
std::string version_text();

// Each sets `exit_code` when its subcommand runs.
void add_run_command(CLI::App& app, int& exit_code);
void add_check_command(CLI::App& app, int& exit_code);
void add_conformance_command(CLI::App& app, int& exit_code);
void add_inspect_command(CLI::App& app, int& exit_code);
void add_bench_command(CLI::App& app, int& exit_code);
void add_optimize_command(CLI::App& app, int& exit_code);
void add_compile_command(CLI::App& app, int& exit_code);
void add_freeze_command(CLI::App& app, int& exit_code);
void add_machine_command(CLI::App& app, int& exit_code);

}  // namespace kiln::cli
