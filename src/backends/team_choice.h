// Whether a stretch of kernels runs on the backend's team of threads or on the calling thread
// alone, chosen by the latency each way measured on earlier runs of the same stretch. On a
// machine whose cores are busy with other work, a team splits each kernel evenly and then waits
// for its slowest thread, one that shares its core: then the calling thread alone finishes
// sooner (mobilenet_v2 with one other busy process on a 2-core machine: 6.4 ms on two threads,
// 3.9 ms on one). On a quiet machine the team is faster and stays chosen: one thread is timed
// once, and again only when the team's recent times come within an eighth of that time (the
// machine got busier). On one thread, the team is timed now and then (every 8 runs of the
// stretch, up to every 256 while the choice holds), so the choice follows the machine's load as
// it changes.
#pragma once
#include <atomic>
#include <cstdint>

namespace kiln::backends {

class TeamChoice {
 public:
  // Whether this run of the stretch uses the team.
  bool use_team();
  // The stretch took `ns` nanoseconds, on the team or not.
  void record(bool team, int64_t ns);

 private:
  bool prefer_team() const;
  // Running averages of the chosen way (each new time weighs 1/4); a probe of the other way
  // sets its average. 0 until the first time. The second time of each way replaces the first:
  // a session's first run pays for cold caches and first touches of memory, and an average
  // seeded with it made the first probe of one thread win on every stretch of the run at once.
  std::atomic<int64_t> team_ns_{0}, solo_ns_{0};
  std::atomic<uint32_t> team_times_{0}, solo_times_{0};
  std::atomic<uint32_t> runs_{0};
  std::atomic<uint32_t> probe_every_{8};
  std::atomic<bool> preferred_team_{true};
};

}  // namespace kiln::backends
