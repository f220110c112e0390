// kiln machine: what kiln's CPU kernels see of this machine — the cores it may run on, one
// core's L2 (the blocking and split rules size by it), the CPU features its kernels choose by,
// and the measured round trip of a cache line between two cores (every hand-off between a
// team's threads pays it; on a virtual machine it changes as the host moves its vCPUs).
// --json prints one object, as benchmarks record it beside their times.
#include <omp.h>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "backends/cpu/cache_size.h"
#include "backends/cpu/core_latency.h"
#include "commands.h"

namespace kiln::cli {

void add_machine_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("machine", "Print the cores, cache and CPU features kiln sees, and the core-to-core round trip");
  auto json = std::make_shared<bool>(false);
  auto trips = std::make_shared<int>(2000);
  cmd->add_flag("--json", *json, "Print one JSON object instead of text");
  cmd->add_option("--trips", *trips, "Round trips per sample (5 samples, the median reported)")
      ->check(CLI::Range(1, 1 << 24))
      ->capture_default_str();
  cmd->callback([json, trips, &exit_code] {
    const int cores = omp_get_num_procs();
    const int64_t l1 = backends::cpu::l1d_cache_bytes(), l2 = backends::cpu::l2_cache_bytes();
    const std::optional<double> trip = backends::cpu::core_round_trip_ns(*trips);
    if (*json) {
      nlohmann::json j = {{"cores", cores}, {"l1d_bytes", l1}, {"l2_bytes", l2}, {"version", version_text()}};
      j["core_round_trip_ns"] = trip ? nlohmann::json(*trip) : nlohmann::json(nullptr);
      std::cout << j.dump() << "\n";
    } else {
      std::printf("kiln:            %s\n", version_text().c_str());
      std::printf("cores:           %d\n", cores);
      std::printf("L1d per core:    %lld KiB\n", static_cast<long long>(l1 >> 10));
      std::printf("L2 per core:     %lld KiB\n", static_cast<long long>(l2 >> 10));
      if (trip) std::printf("core round trip: %.0f ns (a cache line between the first two cores and back)\n", *trip);
      else std::printf("core round trip: n/a (one core)\n");
    }
    exit_code = 0;
  });
}

}  // namespace kiln::cli
