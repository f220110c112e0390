#include <kiln/error.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "commands.h"

int main(int argc, char** argv) {
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
  kiln::cli::add_machine_command(app, exit_code);
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
