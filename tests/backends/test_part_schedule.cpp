// Dealing a composite kernel's parts to a team (src/backends/cpu/part_schedule.h): longest
// first, each to the least loaded thread; the deal chosen only where it comes out even.
#include "backends/cpu/part_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace kiln::backends::cpu {
namespace {

TEST(PartSchedule, DealsLongestFirstToTheLeastLoaded) {
  // Inception's 35x35 block at 160 pixels, in multiply-adds per pixel (Winograd's reduced).
  const std::vector<double> costs = {12288, 76800, 20736, 6144};
  const auto by_thread = deal_parts(costs, 2);
  ASSERT_EQ(by_thread.size(), 2u);
  EXPECT_EQ(by_thread[0], (std::vector<int>{1}));
  EXPECT_EQ(by_thread[1], (std::vector<int>{2, 0, 3}));
  EXPECT_NEAR(dealt_imbalance(costs, by_thread), 76800 / (115968 / 2.0), 1e-9);
  EXPECT_EQ(part_schedule_rule(costs, 2), "split");  // one branch carries two thirds
  // Inception's 17x17 blocks: four even branches.
  EXPECT_EQ(part_schedule_rule({147456, 215040, 215040, 147456}, 2), "parts");
  EXPECT_EQ(part_schedule_rule({147456, 215040, 215040, 147456}, 1), "split");
  EXPECT_EQ(part_schedule_rule({1000}, 2), "split");
}

TEST(PartSchedule, EveryPartOnceWithinGrahamsBound) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> cost(1, 100);
  for (int trial = 0; trial < 300; ++trial) {
    const int parts = 1 + trial % 9, threads = 1 + trial % 4;
    std::vector<double> costs(static_cast<size_t>(parts));
    for (double& c : costs) c = cost(rng);
    const auto by_thread = deal_parts(costs, threads);
    ASSERT_EQ(by_thread.size(), static_cast<size_t>(threads));
    std::vector<int> seen;
    for (const auto& t : by_thread) seen.insert(seen.end(), t.begin(), t.end());
    std::sort(seen.begin(), seen.end());
    for (int p = 0; p < parts; ++p) ASSERT_EQ(seen[static_cast<size_t>(p)], p);
    // A list schedule ends at most the largest part after the even share (Graham's bound).
    double total = 0, largest = 0;
    for (double c : costs) total += c, largest = std::max(largest, c);
    const double makespan = dealt_imbalance(costs, by_thread) * total / threads;
    EXPECT_LE(makespan, total / threads + (1 - 1.0 / threads) * largest + 1e-9) << "trial " << trial;
    EXPECT_GE(makespan, std::max(total / threads, largest) - 1e-9) << "trial " << trial;
  }
}

}  // namespace
}  // namespace kiln::backends::cpu
