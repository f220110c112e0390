#include "backends/team_choice.h"

namespace kiln::backends {

namespace {
constexpr uint32_t kFirstProbe = 8, kLastProbe = 256;
}  // namespace

bool TeamChoice::prefer_team() const {
  const int64_t team = team_ns_.load(std::memory_order_relaxed), solo = solo_ns_.load(std::memory_order_relaxed);
  return solo == 0 || team == 0 || team <= solo;
}

bool TeamChoice::use_team() {
  const uint32_t n = runs_.fetch_add(1, std::memory_order_relaxed) + 1;
  const bool team = preferred_team_.load(std::memory_order_relaxed);
  if (n % probe_every_.load(std::memory_order_relaxed) != 0) return team;
  // Now and then the other way, to see whether the machine's load has changed. While the team is
  // chosen, one thread is timed once, then again only when the team has slowed to near that
  // time: a busier machine does not make one thread faster than it was, so before then a probe
  // could not change the choice, and each costs its run the team's speed-up (a model of many
  // stretches probing in different runs put a probe into every tenth run: its 90th percentile
  // at the one-thread time).
  if (team) {
    const int64_t solo = solo_ns_.load(std::memory_order_relaxed);
    if (solo > 0 && team_ns_.load(std::memory_order_relaxed) < solo - solo / 8) return team;
  }
  return !team;
}

void TeamChoice::record(bool team, int64_t ns) {
  std::atomic<int64_t>& avg = team ? team_ns_ : solo_ns_;
  const int64_t old = avg.load(std::memory_order_relaxed);
  const uint32_t times = (team ? team_times_ : solo_times_).fetch_add(1, std::memory_order_relaxed) + 1;
  // A probe of the way not chosen replaces its average: that one is runs old, from a machine
  // that may have been loaded otherwise.
  const bool probe = team != preferred_team_.load(std::memory_order_relaxed);
  avg.store(old == 0 || probe || times == 2 ? ns : old + (ns - old) / 4, std::memory_order_relaxed);

  const bool now = prefer_team();
  if (now != preferred_team_.exchange(now, std::memory_order_relaxed)) {
    probe_every_.store(kFirstProbe, std::memory_order_relaxed);
  } else if (team != now) {  // a probe that changed nothing: look less often
    const uint32_t p = probe_every_.load(std::memory_order_relaxed);
    probe_every_.store(p < kLastProbe ? 2 * p : p, std::memory_order_relaxed);
  }
}

}  // namespace kiln::backends
