// How often this machine stops each CPU for a while: one thread per CPU this process may run on,
// each pinned and reading the clock in a tight loop, counts the gaps over 10, 20, 50 and 100 us
// and their total. On a VM those pauses (the host's timer and other exits, other guests) land on
// every thread of a team, and a team of N waits for the pauses of all N CPUs
// (bench/results/experiments-20261207-session48.md).
//
//   g++ -O2 -std=c++20 -pthread bench/host_pauses.cpp -o /tmp/host_pauses && /tmp/host_pauses [seconds]
#include <pthread.h>
#include <sched.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 5.0;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return 1;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  struct Count {
    long over10 = 0, over20 = 0, over50 = 0, over100 = 0;
    double total_us = 0;
  };
  std::vector<Count> counts(cpus.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < cpus.size(); ++i)
    threads.emplace_back([&, i] {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpus[i], &one);
      pthread_setaffinity_np(pthread_self(), sizeof one, &one);
      using clock = std::chrono::steady_clock;
      const auto start = clock::now();
      auto last = start;
      Count& c = counts[i];
      while (last - start < std::chrono::duration<double>(seconds)) {
        const auto t = clock::now();
        const double gap = std::chrono::duration<double, std::micro>(t - last).count();
        if (gap > 10) ++c.over10, c.total_us += gap;
        if (gap > 20) ++c.over20;
        if (gap > 50) ++c.over50;
        if (gap > 100) ++c.over100;
        last = t;
      }
    });
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < cpus.size(); ++i) {
    const Count& c = counts[i];
    std::printf("cpu %d: %ld pauses over 10 us (over 20: %ld, 50: %ld, 100: %ld) in %.1f s, %.1f ms in all (%.2f%%)\n",
                cpus[i], c.over10, c.over20, c.over50, c.over100, seconds, c.total_us / 1e3,
                c.total_us / (seconds * 1e4));
  }
  return 0;
}
