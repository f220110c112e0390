// hold_team (backends/cpu/parallel.h): parallel loops inside a held team (an OpenMP region's or a
// PersistentTeam's) cover their range once, nest inline, leave threads past the range idle, and
// errors come out once the team is released.
#include <gtest/gtest.h>
#include <kiln/error.h>

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "backends/cpu/parallel.h"

namespace kiln::backends::cpu {
namespace {

// Counts how often each index of [0, n) is visited by parallel_for at `threads`.
std::vector<int> visits(int64_t n, int threads) {
  std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
  parallel_for(n, threads, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) seen[static_cast<size_t>(i)].fetch_add(1);
  });
  std::vector<int> out;
  for (auto& s : seen) out.push_back(s.load());
  return out;
}

TEST(HeldTeam, LoopsCoverTheirRangeOnce) {
  // More threads than cores hold no team (spinning workers would starve the others): the
  // loops then start their own.
  for (int threads : {2, 3, omp_get_num_procs() + 1}) {
    SCOPED_TRACE(threads);
    int jobs = 0;
    hold_team(threads, [&] {
      if (threads <= omp_get_num_procs()) {
        ASSERT_NE(HeldTeam::current(), nullptr);
        EXPECT_EQ(HeldTeam::current()->size(), threads);
      } else {
        EXPECT_EQ(HeldTeam::current(), nullptr);
      }
      // Many loops one after another, of every size around the team's (fewer items than
      // threads: the rest answer without running).
      for (int round = 0; round < 50; ++round)
        for (int64_t n : {1, 2, 3, 7, 1000}) {
          EXPECT_EQ(visits(n, threads), std::vector<int>(static_cast<size_t>(n), 1)) << "n=" << n;
          ++jobs;
        }
    });
    EXPECT_EQ(jobs, 250);
    EXPECT_EQ(HeldTeam::current(), nullptr);
  }
}

// HeldTeam::run hands each worker the job's arguments: copied into the slot where they fit
// (kInlineBytes), by pointer where they do not; every thread sees the values either way, and
// the next job's arguments replace the last's only after every worker answered.
TEST(HeldTeam, JobArgumentsReachEveryThreadInlineOrByPointer) {
  struct Small {
    int64_t a, b;
  };
  struct Large {
    int64_t v[6];
  };
  static_assert(sizeof(Small) <= HeldTeam::kInlineBytes && sizeof(Large) > HeldTeam::kInlineBytes);
  if (omp_get_num_procs() < 2) GTEST_SKIP() << "no team is held on one core";
  static std::atomic<int64_t> sums[2];  // a job is a plain function: no captures
  sums[0] = sums[1] = 0;
  hold_team(2, [&] {
    HeldTeam* team = HeldTeam::current();
    ASSERT_NE(team, nullptr);
    for (int64_t round = 1; round <= 100; ++round) {
      Small small{round, 2 * round};
      team->run(2, [](void* p, int t, int) {
        const Small& s = *static_cast<const Small*>(p);
        sums[t].fetch_add(s.a + s.b);
      }, &small, sizeof(small));
      Large large{{round, round, round, round, round, round}};
      team->run(2, [](void* p, int t, int) {
        const Large& l = *static_cast<const Large*>(p);
        int64_t s = 0;
        for (int64_t x : l.v) s += x;
        sums[t].fetch_add(s);
      }, &large, sizeof(large));
    }
  });
  // Per round: 3 * round from the small job, 6 * round from the large one; rounds 1..100.
  EXPECT_EQ(sums[0].load(), 9 * 5050);
  EXPECT_EQ(sums[1].load(), 9 * 5050);
}

// A loop of two shares in which the first (the holder's) waits until the second has begun, so
// that the holder cannot take the second for itself (HeldTeam::run): the worker runs it. Calls
// second() in the second share; false if it did not begin within seconds.
template <typename F>
bool meet(const F& second) {
  std::atomic<bool> begun{false}, in_time{true};
  parallel_for(2, 2, [&](int64_t b, int64_t) {
    if (b == 1) {
      begun = true;
      second();
      return;
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!begun.load())
      if (std::chrono::steady_clock::now() > until) {
        in_time = false;
        return;
      }
  });
  return in_time.load();
}

TEST(HeldTeam, SharesRunOnDifferentThreads) {
  std::atomic<int> outside{0};
  hold_team(2, [&] {
    const int self = omp_get_thread_num();
    EXPECT_TRUE(meet([&] { outside = omp_get_thread_num() != self ? 1 : -1; }));
  });
  EXPECT_EQ(outside.load(), 1);
}

// A share whose worker has not begun it when the holder is done with its own runs on the holder
// (a worker whose core is busy with another process costs a job that share's time, not the time
// until the worker runs again); a worker coming later finds it taken and runs nothing of it.
TEST(HeldTeam, TheHolderRunsAShareItsWorkerHasNotBegun) {
  HeldTeam team(2);
  static std::atomic<int> runs[2];
  static std::atomic<int> ran_elsewhere{0};
  static thread_local int on_holder = 0;
  runs[0] = runs[1] = 0;
  ran_elsewhere = 0;
  auto job = [](void*, int t, int) {
    runs[t].fetch_add(1);
    if (!on_holder) ran_elsewhere.fetch_add(1);
  };
  on_holder = 1;
  // No worker serves the team yet: the holder runs both shares of every job.
  for (int i = 0; i < 3; ++i) team.run(2, job, nullptr);
  EXPECT_EQ(runs[0].load(), 3);
  EXPECT_EQ(runs[1].load(), 3);
  // A worker now: it skips the jobs already done, and every later job runs each share once,
  // wherever it ran.
  std::thread worker([&] { team.serve(1); });
  for (int i = 0; i < 200; ++i) team.run(2, job, nullptr);
  team.stop();
  worker.join();
  EXPECT_EQ(runs[0].load(), 203);
  EXPECT_EQ(runs[1].load(), 203);
  EXPECT_LE(ran_elsewhere.load(), 200);
}

TEST(HeldTeam, NestedLoopsRunInline) {
  std::vector<int> counts;
  hold_team(2, [&] {
    std::vector<std::atomic<int>> seen(64);
    parallel_for(4, 2, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)  // inside a share: this loop must not hand out work
        parallel_for(16, 2, [&](int64_t c, int64_t d) {
          for (int64_t j = c; j < d; ++j) seen[static_cast<size_t>(i * 16 + j)].fetch_add(1);
        });
    });
    for (auto& s : seen) counts.push_back(s.load());
    // A held team inside the held team is the same team.
    int inner = 0;
    hold_team(2, [&] { inner = visits(9, 2) == std::vector<int>(9, 1); });
    EXPECT_EQ(inner, 1);
  });
  EXPECT_EQ(counts, std::vector<int>(64, 1));
}

TEST(HeldTeam, OneThreadRunsPlainly) {
  bool ran = false;
  hold_team(1, [&] {
    EXPECT_EQ(HeldTeam::current(), nullptr);
    EXPECT_EQ(visits(5, 1), std::vector<int>(5, 1));
    ran = true;
  });
  EXPECT_TRUE(ran);
}

TEST(HeldTeam, ErrorsComeOutAfterTheTeamIsReleased) {
  EXPECT_THROW(hold_team(2, [&] {
                 EXPECT_EQ(visits(10, 2), std::vector<int>(10, 1));
                 throw Error("node X: bad input");
               }),
               Error);
  EXPECT_EQ(HeldTeam::current(), nullptr);
  // The threads are free again: a plain loop and another held team both work.
  EXPECT_EQ(visits(10, 2), std::vector<int>(10, 1));
  hold_team(2, [&] { EXPECT_EQ(visits(10, 2), std::vector<int>(10, 1)); });
}

// A PersistentTeam: its own threads serve one holder at a time across holds, block after a
// while without a job and wake for the next; nested loops on them run inline; a second caller
// while it is held makes a team of its own; errors release it.
TEST(HeldTeam, PersistentTeamServesHoldsAcrossIdleTimes) {
  if (omp_get_num_procs() < 2) GTEST_SKIP() << "no team is held on one core";
  PersistentTeam persistent(2);
  std::thread::id caller = std::this_thread::get_id();
  for (int hold = 0; hold < 6; ++hold) {
    SCOPED_TRACE(hold);
    std::atomic<int> on_other{0}, nested_elsewhere{0};
    hold_team(2, [&] {
      ASSERT_NE(HeldTeam::current(), nullptr);
      for (int64_t n : {1, 2, 3, 1000}) EXPECT_EQ(visits(n, 2), std::vector<int>(static_cast<size_t>(n), 1));
      EXPECT_TRUE(meet([&] {
        const std::thread::id self = std::this_thread::get_id();
        if (self != caller) on_other = 1;
        parallel_for(8, 2, [&](int64_t, int64_t) {  // inline: on this same thread
          if (std::this_thread::get_id() != self) nested_elsewhere = 1;
        });
      }));
    }, nullptr, &persistent);
    EXPECT_EQ(on_other.load(), 1);
    EXPECT_EQ(nested_elsewhere.load(), 0);
    EXPECT_EQ(HeldTeam::current(), nullptr);
    // Idle past the workers' spin (they block), then hold again.
    if (hold % 2 == 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_THROW(hold_team(2, [&] { throw Error("node X: bad input"); }, nullptr, &persistent), Error);
  EXPECT_EQ(HeldTeam::current(), nullptr);
  hold_team(2, [&] { EXPECT_EQ(visits(10, 2), std::vector<int>(10, 1)); }, nullptr, &persistent);
}

// workers_waiting (a global pool's split asks it): not at a hold's first job (an OpenMP region's
// workers are still starting), nor after a PersistentTeam's workers blocked while idle; after a
// job they answered, yes. A PersistentTeam's worker blocks after a millisecond without a job, so
// a holder preempted that long between a job and the question (a busy machine) sees it blocked:
// those checks ask for the answer in one of several tries, not in each.
TEST(HeldTeam, WorkersWaitOnlyOnceTheyAnsweredAJob) {
  if (omp_get_num_procs() < 2) GTEST_SKIP() << "no team is held on one core";
  hold_team(2, [&] {
    ASSERT_NE(HeldTeam::current(), nullptr);
    EXPECT_FALSE(HeldTeam::current()->workers_waiting());
    EXPECT_TRUE(meet([] {}));
    EXPECT_TRUE(HeldTeam::current()->workers_waiting());  // an OpenMP region's workers never block
  });
  PersistentTeam persistent(2);
  bool saw_waiting = false;
  for (int attempt = 0; attempt < 5 && !saw_waiting; ++attempt)
    hold_team(2, [&] {
      EXPECT_TRUE(meet([] {}));
      saw_waiting = HeldTeam::current()->workers_waiting();
    }, nullptr, &persistent);
  EXPECT_TRUE(saw_waiting);
  // Idle well past the workers' spin (they block; a busy machine may keep one from getting
  // there in one try), then hold again: blocked workers are not waiting until a job woke them.
  bool saw_blocked = false, saw_woken = false;
  for (int attempt = 0; attempt < 5 && !(saw_blocked && saw_woken); ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    hold_team(2, [&] {
      const bool blocked = !HeldTeam::current()->workers_waiting();
      EXPECT_TRUE(meet([] {}));
      const bool woken = HeldTeam::current()->workers_waiting();
      saw_blocked = saw_blocked || blocked;
      saw_woken = saw_woken || (blocked && woken);
    }, nullptr, &persistent);
  }
  EXPECT_TRUE(saw_blocked);
  EXPECT_TRUE(saw_woken);
}

TEST(HeldTeam, PersistentTeamHasOneHolderAtATime) {
  if (omp_get_num_procs() < 2) GTEST_SKIP() << "no team is held on one core";
  PersistentTeam persistent(2);
  std::atomic<int> wrong{0};
  auto caller = [&] {
    for (int round = 0; round < 200; ++round)
      hold_team(2, [&] {
        if (visits(257, 2) != std::vector<int>(257, 1)) wrong = 1;
      }, nullptr, &persistent);
  };
  std::thread a(caller), b(caller);
  a.join();
  b.join();
  EXPECT_EQ(wrong.load(), 0);
}

#ifdef __linux__
// 2000 turns between two threads on one CPU that give it up (sched_yield) while waiting for
// theirs: what taking turns on one core costs on this machine now, with whatever else it runs.
double one_core_turns_seconds(int cpu) {
  std::atomic<int> turn{0};
  auto player = [&](int me) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    sched_setaffinity(0, sizeof one, &one);
    for (int i = 0; i < 2000; ++i) {
      while (turn.load() != me) sched_yield();
      turn.store(1 - me);
    }
  };
  const auto t0 = std::chrono::steady_clock::now();
  std::thread a(player, 0), b(player, 1);
  a.join();
  b.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Two threads of a team on one core (the scheduler put a worker beside its holder, or the
// process may run on one CPU only): each waits for the other to take the core, so a wait that
// only paused held each job up for a scheduler tick or the worker's whole spin before blocking
// (milliseconds a job: seconds for these 2000); waits that give the core up now and then take
// tens of milliseconds for them, or, with other processes on that core, a few times what plain
// yielding turns take there (measured beside it: each yield may hand the core to another
// process for its time slice).
TEST(HeldTeam, PersistentTeamOnOneCoreTakesTurns) {
  if (omp_get_num_procs() < 2) GTEST_SKIP() << "no team is held on one core";
  // hold_team counts the cores once, on its first call, as the calling thread may use them: make
  // that call here, not from the thread pinned below (which would count one core, hold no team
  // and time OpenMP regions instead).
  hold_team(1, [] {});
  std::chrono::duration<double> took{};
  std::atomic<int> wrong{0};
  const int cpu = sched_getcpu();
  const double turns = one_core_turns_seconds(cpu);
  std::thread pinned([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    PersistentTeam persistent(2);  // its worker inherits the one CPU
    const auto t0 = std::chrono::steady_clock::now();
    hold_team(2, [&] {
      for (int job = 0; job < 2000; ++job)
        if (visits(2, 2) != std::vector<int>(2, 1)) wrong = 1;
    }, nullptr, &persistent);
    took = std::chrono::steady_clock::now() - t0;
  });
  pinned.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_LT(took.count(), std::max(1.0, 20 * turns)) << "plain yielding turns took " << turns << " s";
}

// A worker starts on a CPU other than its creator's, and is not pinned there: its CPUs are
// still all those the process may use.
TEST(HeldTeam, PersistentTeamWorkersStartAwayFromTheirCreator) {
  if (omp_get_num_procs() < 2) GTEST_SKIP() << "no team is held on one core";
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
  if (CPU_COUNT(&mine) < 2) GTEST_SKIP() << "this process may run on one CPU";
  for (int attempt = 0; attempt < 5; ++attempt) {
    const int here = sched_getcpu();
    PersistentTeam persistent(2);
    std::atomic<int> worker_cpu{-1};
    cpu_set_t worker_mask;
    CPU_ZERO(&worker_mask);
    hold_team(2, [&] {
      EXPECT_TRUE(meet([&] {
        worker_cpu = sched_getcpu();
        sched_getaffinity(0, sizeof worker_mask, &worker_mask);
      }));
    }, nullptr, &persistent);
    EXPECT_TRUE(CPU_EQUAL(&worker_mask, &mine));
    if (sched_getcpu() != here) continue;  // the creator moved meanwhile: look again
    EXPECT_NE(worker_cpu.load(), here);
    return;
  }
}
#endif

}  // namespace
}  // namespace kiln::backends::cpu

// A kernel of products splits by its work, not only by its output count: a late layer's 1x1
// conv on a 3x3 image (9 pixels, 2048 -> 448) has fewer outputs than an elementwise op worth
// splitting but millions of multiply-adds; a tiny product stays on one thread.
TEST(HeldTeam, ProductsSplitByTheirMultiplyAdds) {
  using namespace kiln::backends::cpu;
  EXPECT_EQ(product_team(9 * 448, int64_t{9} * 448 * 2048, 2), 2);
  EXPECT_EQ(product_team(kParallelMinElements, kParallelMinElements, 2), 2);  // the elementwise rule
  EXPECT_EQ(product_team(16, 16 * 64, 2), 1);
  EXPECT_EQ(product_team(16, kParallelMinMacs, 4), 4);
  EXPECT_EQ(product_team(16, kParallelMinMacs - 1, 4), 1);
}
