// The kiln command-line program: one file per subcommand, each adding itself to the app.
// Exit codes: 0 success, 1 a check found a mismatch, 2 any error (bad model, bad input, ...).
#pragma once
#include <CLI/CLI.hpp>

namespace kiln::cli {

// Each sets `exit_code` when its subcommand runs.
void add_run_command(CLI::App& app, int& exit_code);
void add_check_command(CLI::App& app, int& exit_code);
void add_conformance_command(CLI::App& app, int& exit_code);
void add_inspect_command(CLI::App& app, int& exit_code);
void add_bench_command(CLI::App& app, int& exit_code);
void add_optimize_command(CLI::App& app, int& exit_code);

}  // namespace kiln::cli
