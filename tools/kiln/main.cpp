#include <kiln/error.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "commands.h"

namespace {

// OpenMP worker threads (oneDNN's and kiln's kernels share libgomp's team) that wait between
// parallel regions by spinning, as ONNX Runtime's intra-op pool does during a run, rather than
// by libgomp's default of sleeping soon in a futex: waking a sleeping worker costs tens of
// microseconds per op on small VMs, a visible share of a CNN's run at 2 threads; at 1 thread
// there are no workers. libgomp reads the variable once, when it is loaded, so the CLI sets it
// and runs itself again; an explicit OMP_WAIT_POLICY is left alone.
void spin_waiting_openmp_threads(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY")) return;
  setenv("OMP_WAIT_POLICY", "active", 1);
  execv("/proc/self/exe", argv);  // returns only on failure: run on with libgomp's default
}

}  // namespace

int main(int argc, char** argv) {
  spin_waiting_openmp_threads(argv);
  CLI::App app{"kiln: a deep-learning compiler and inference engine"};
  app.require_subcommand(1);
  app.set_version_flag("--version", kiln::cli::version_text());
  int exit_code = 0;
  kiln::cli::add_run_command(app, exit_code);
  kiln::cli::add_check_command(app, exit_code);
  kiln::cli::add_conformance_command(app, exit_code);
  kiln::cli::add_inspect_command(app, exit_code);
  kiln::cli::add_bench_command(app, exit_code);
  kiln::cli::add_optimize_command(app, exit_code);
  kiln::cli::add_compile_command(app, exit_code);
  kiln::cli::add_freeze_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  } catch (const kiln::Error& e) {
    std::cerr << "kiln: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kiln: error: " << e.what() << "\n";
    return 2;
  }
  return exit_code;
}
