// TeamChoice (backends/team_choice.h): a stretch keeps the faster of team and one thread, times
// the other way now and then (less often while the choice holds), and follows a change of the
// machine's load; hold_team runs a stretch chosen for one thread as a team of one.
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "backends/cpu/parallel.h"
#include "backends/team_choice.h"

namespace kiln::backends {
namespace {

// Runs `runs` stretches on `c`, each taking team_ns or solo_ns; returns how many used the team.
int simulate(TeamChoice& c, int runs, int64_t team_ns, int64_t solo_ns) {
  int teams = 0;
  for (int i = 0; i < runs; ++i) {
    const bool team = c.use_team();
    teams += team;
    c.record(team, team ? team_ns : solo_ns);
  }
  return teams;
}

TEST(TeamChoice, KeepsTheFasterWayAndProbesTheOtherLessOften) {
  TeamChoice c;
  // A quiet machine: the team is faster. One thread is timed once, and not again while the
  // team keeps its speed (times within a quarter of its best).
  const int early = simulate(c, 64, 1000, 1600);
  EXPECT_EQ(early, 63) << "one thread should be timed once";
  EXPECT_EQ(simulate(c, 512, 1000, 1600) + simulate(c, 512, 1200, 1600), 1024) << "no probe while the team keeps its speed";
  // The machine gets busy: one thread becomes faster, and the choice follows within a few probes.
  simulate(c, 1024, 4000, 2500);
  const int busy = simulate(c, 256, 4000, 2500);
  EXPECT_LE(busy, 256 / 8 + 1);
  // And back.
  simulate(c, 1024, 1000, 1600);
  EXPECT_GE(simulate(c, 256, 1000, 1600), 256 - 256 / 8 - 1);
}

// A session's first run is cold (page faults, empty caches): its time must not make the first
// probe of one thread look faster than the team, which put every stretch of runs 8-15 on one
// thread at once (mnasnet at 160 pixels: a median of 2.6 ms over runs 6-15 against 1.4 ms).
TEST(TeamChoice, AColdFirstRunDoesNotDecide) {
  TeamChoice c;
  ASSERT_TRUE(c.use_team());
  c.record(true, 10000);
  EXPECT_GE(1 + simulate(c, 63, 1000, 1600), 56);
}

TEST(TeamChoice, AStretchRunOnOneThreadCoversItsLoopsInline) {
  if (omp_get_num_procs() < 2) GTEST_SKIP() << "one core: no team is held";
  TeamChoice c;
  simulate(c, 64, 4000, 1000);  // one thread preferred from now on
  int solo_runs = 0;
  for (int round = 0; round < 16; ++round) {
    std::vector<std::atomic<int>> seen(1000);
    bool inline_only = true;
    cpu::hold_team(
        2,
        [&] {
          const cpu::HeldTeam* held = cpu::HeldTeam::current();
          ASSERT_NE(held, nullptr);
          inline_only = held->size() == 1;
          cpu::parallel_for(1000, 2, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) seen[static_cast<size_t>(i)].fetch_add(1);
          });
        },
        &c);
    solo_runs += inline_only;
    for (auto& s : seen) ASSERT_EQ(s.load(), 1);
  }
  // The rounds time themselves, so later ones may choose the team again (a solo round that a
  // context switch slowed); the first ones run on the choice the simulation left.
  EXPECT_GE(solo_runs, 1);
}

}  // namespace
}  // namespace kiln::backends
