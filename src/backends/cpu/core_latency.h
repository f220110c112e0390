// How long a cache line takes to travel between two cores of this machine and back: what every
// hand-off of a held team's job and every line one thread reads of another's output pays. On a
// virtual machine it changes while the machine runs (two vCPUs on cores that share an L3, or on
// different dies), and with it how much a second thread gains; benchmarks record it beside
// their times (`kiln machine`, bench/compare.sh).
#pragma once
#include <optional>

namespace kiln::backends::cpu {

// The median round trip, in nanoseconds, of a line written alternately by two threads pinned
// to the first two CPUs this process may run on (`trips` round trips per sample, 5 samples);
// nullopt where it may run on fewer than two.
std::optional<double> core_round_trip_ns(int trips = 2000);

}  // namespace kiln::backends::cpu
