// place_for_streams: buffers that may be live at once on different streams never share bytes;
// buffers whose accesses are ordered still do; aliases move with their roots. Checked on an
// inception-like block and on random plans against a happens-before relation built from the
// streams and waits alone.
#include "codegen/stream_memory.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "stream_order.h"

namespace kiln::codegen {
namespace {

plan::ExecutablePlan plan_of(const std::vector<int64_t>& sizes) {
  plan::ExecutablePlan p;
  p.arenas.push_back({"cpu", 0});
  for (size_t i = 0; i < sizes.size(); ++i) {
    plan::PlanBuffer b;
    b.id = static_cast<int>(i);
    b.value = "v" + std::to_string(i);
    b.bytes = sizes[i];
    b.arena = 0;
    b.offset = 0;
    p.buffers.push_back(b);
  }
  return p;
}

Region buf(int id) { return {-1 - id, 0, 1}; }

bool overlap(const plan::ExecutablePlan& p, int a, int b) {
  const auto& x = p.buffers[static_cast<size_t>(a)];
  const auto& y = p.buffers[static_cast<size_t>(b)];
  return x.offset < y.offset + y.bytes && y.offset < x.offset + x.bytes;
}

TEST(PlaceForStreams, BranchesGetTheirOwnBytesAndOrderedBuffersShare) {
  // a -> b (stream 0), a -> c (stream 1), (b, c) -> d
  plan::ExecutablePlan p = plan_of({256, 256, 256, 256, 128});
  p.buffers[4].alias_of = 3;  // a view of d, 64 bytes in
  p.buffers[4].offset = 64;
  StreamScheduler s(4);
  std::vector<ScheduledAccess> steps;
  steps.push_back({s.add(0, {}, {buf(0)}), {0}});
  steps.push_back({s.add(1, {buf(0)}, {buf(1)}), {0, 1}});
  steps.push_back({s.add(2, {buf(0)}, {buf(2)}), {0, 2}});
  steps.push_back({s.add(3, {buf(1), buf(2)}, {buf(3)}), {1, 2, 3}});
  ASSERT_EQ(steps[2].step.stream, 1);
  place_for_streams(p, steps);
  EXPECT_FALSE(overlap(p, 1, 2));  // b and c may be live at once
  EXPECT_FALSE(overlap(p, 0, 1));
  EXPECT_FALSE(overlap(p, 0, 2));
  EXPECT_TRUE(overlap(p, 0, 3));   // a has ended on every stream before d is written
  EXPECT_EQ(p.buffers[4].offset, p.buffers[3].offset + 64);
  EXPECT_EQ(p.arenas[0].bytes, 3 * 256);
}

TEST(PlaceForStreams, RandomPlansShareBytesOnlyWhenOrdered) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 100; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 30), max_streams = 1 + static_cast<int>(rng() % 4);
    std::vector<int64_t> sizes;
    for (int i = 0; i < n; ++i) sizes.push_back(64 * (1 + static_cast<int64_t>(rng() % 8)));
    plan::ExecutablePlan p = plan_of(sizes);
    StreamScheduler s(max_streams);
    std::vector<ScheduledAccess> steps;
    for (int i = 0; i < n; ++i) {  // step i writes buffer i, reading up to two earlier ones
      std::vector<Region> reads;
      std::vector<int> roots{i};
      for (int k = static_cast<int>(rng() % 3); k > 0 && i > 0; --k) {
        const int r = static_cast<int>(rng() % static_cast<unsigned>(i));
        reads.push_back(buf(r));
        roots.push_back(r);
      }
      steps.push_back({s.add(i, reads, {buf(i)}), roots});
    }
    place_for_streams(p, steps);
    std::vector<StreamStep> schedule;
    for (const ScheduledAccess& a : steps) schedule.push_back(a.step);
    const std::vector<std::set<int>> before = happens_before(schedule, max_streams);
    std::vector<std::vector<int>> access(n);
    for (int i = 0; i < n; ++i)
      for (int r : steps[i].roots) access[r].push_back(i);
    auto ordered = [&](int x, int y) {
      for (int a : access[x])
        for (int b : access[y])
          if (!before[b].count(a)) return false;
      return true;
    };
    for (int x = 0; x < n; ++x) {
      EXPECT_LE(p.buffers[x].offset + p.buffers[x].bytes, p.arenas[0].bytes);
      for (int y = x + 1; y < n; ++y) {
        if (overlap(p, x, y)) {
          EXPECT_TRUE(ordered(x, y) || ordered(y, x)) << "trial " << trial << ": buffers " << x << ", " << y;
        }
      }
    }
  }
}

}  // namespace
}  // namespace kiln::codegen
