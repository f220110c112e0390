#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "backends/cpu/background_builds.h"

namespace kiln::testing {

TEST(BackgroundBuilds, RunInSubmissionOrderOnOneThread) {
  std::vector<int> order;  // written by the build thread only, read after every future is done
  std::vector<std::thread::id> threads(20);
  std::vector<std::future<void>> done;
  for (int i = 0; i < 20; ++i)
    done.push_back(backends::cpu::run_in_background([&order, &threads, i] {
      order.push_back(i);
      threads[i] = std::this_thread::get_id();
    }));
  for (auto& f : done) f.get();
  ASSERT_EQ(order.size(), 20u);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(order[i], i);
    EXPECT_EQ(threads[i], threads[0]);
  }
  EXPECT_NE(threads[0], std::this_thread::get_id());
}

TEST(BackgroundBuilds, AnExceptionReachesTheFutureAndLaterBuildsStillRun) {
  auto failed = backends::cpu::run_in_background([] { throw std::runtime_error("no kernel"); });
  std::atomic<bool> ran{false};
  auto next = backends::cpu::run_in_background([&ran] { ran = true; });
  EXPECT_THROW(failed.get(), std::runtime_error);
  next.get();
  EXPECT_TRUE(ran);
}

TEST(BackgroundBuilds, SubmittedFromManyThreadsEachRunsOnce) {
  std::atomic<int> count{0};
  std::vector<std::thread> submitters;
  std::vector<std::future<void>> done(64);
  for (int t = 0; t < 4; ++t)
    submitters.emplace_back([&, t] {
      for (int i = 0; i < 16; ++i) done[t * 16 + i] = backends::cpu::run_in_background([&count] { ++count; });
    });
  for (auto& s : submitters) s.join();
  for (auto& f : done) f.get();
  EXPECT_EQ(count.load(), 64);
}

}  // namespace kiln::testing
