#include "backends/cpu/core_latency.h"

#include <immintrin.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace kiln::backends::cpu {

namespace {

void pin(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
}

}  // namespace

std::optional<double> core_round_trip_ns(int trips) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return std::nullopt;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  if (cpus.size() < 2 || trips < 1) return std::nullopt;
  constexpr int kSamples = 5;
  // Each on a line of its own: the ping thread writes `ping`, the other answers on `pong`.
  struct alignas(64) Line {
    std::atomic<long> v{0};
  };
  Line ping, pong;
  const long total = static_cast<long>(kSamples) * (trips + 1);
  std::thread other([&] {
    pin(cpus[1]);
    for (long i = 1; i <= total; ++i) {
      while (ping.v.load(std::memory_order_acquire) != i) _mm_pause();
      pong.v.store(i, std::memory_order_release);
    }
  });
  pin(cpus[0]);
  std::vector<double> samples;
  long i = 0;
  for (int s = 0; s < kSamples; ++s) {
    auto trip = [&] {
      ++i;
      ping.v.store(i, std::memory_order_release);
      while (pong.v.load(std::memory_order_acquire) != i) _mm_pause();
    };
    trip();  // both threads running before the clock starts
    const auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < trips; ++k) trip();
    samples.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / trips);
  }
  other.join();
  // The calling thread may run anywhere again.
  pthread_setaffinity_np(pthread_self(), sizeof(allowed), &allowed);
  std::sort(samples.begin(), samples.end());
  return samples[kSamples / 2];
}

}  // namespace kiln::backends::cpu
