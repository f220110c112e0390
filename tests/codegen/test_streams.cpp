// StreamScheduler: independent branches on their own streams, every dependency (dataflow and
// reuse of bytes) kept by stream order or a wait, no wait a vector clock already implies, and
// a random plan's schedule checked against the dependencies it must keep.
#include "codegen/streams.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "stream_order.h"

namespace kiln::codegen {
namespace {

Region bytes(int64_t begin, int64_t end) { return {0, begin, end}; }

TEST(StreamScheduler, BranchesOfAnInceptionBlockRunOnTheirOwnStreams) {
  StreamScheduler s(4);
  // x [0,100) -> b1 [100,200), b2 [200,300), b3 [300,400) -> concat [400,700)
  const StreamStep x = s.add(0, {}, {bytes(0, 100)});
  const StreamStep b1 = s.add(1, {bytes(0, 100)}, {bytes(100, 200)});
  const StreamStep b2 = s.add(2, {bytes(0, 100)}, {bytes(200, 300)});
  const StreamStep b3 = s.add(3, {bytes(0, 100)}, {bytes(300, 400)});
  const StreamStep cat = s.add(4, {bytes(100, 400)}, {bytes(400, 700)});
  EXPECT_EQ(x.stream, 0);
  EXPECT_EQ(b1.stream, 0);  // the chain continues, no wait
  EXPECT_TRUE(b1.waits.empty());
  EXPECT_EQ(b2.stream, 1);
  EXPECT_EQ(b2.waits, std::vector<int>{0});
  EXPECT_EQ(b3.stream, 2);
  EXPECT_EQ(b3.waits, std::vector<int>{0});
  EXPECT_EQ(cat.stream, 2);  // the latest dependency's stream
  EXPECT_EQ(cat.waits, (std::vector<int>{1, 2}));
  EXPECT_EQ(s.streams(), 3);
}

TEST(StreamScheduler, ReusedBytesOrderTheirReaderBeforeTheNextWriter) {
  StreamScheduler s(4);
  s.add(0, {}, {bytes(0, 64)});                            // a
  s.add(1, {bytes(0, 64)}, {bytes(64, 128)});              // b reads a
  const StreamStep c = s.add(2, {}, {bytes(128, 192)});    // independent
  const StreamStep d = s.add(3, {bytes(128, 192)}, {bytes(0, 32)});  // writes over a's bytes
  EXPECT_EQ(c.stream, 1);
  EXPECT_EQ(d.stream, 1);
  EXPECT_EQ(d.waits, std::vector<int>{1});  // b (the last reader of a) before d overwrites it
}

TEST(StreamScheduler, NoWaitThatAnEarlierWaitImplies) {
  StreamScheduler s(4);
  s.add(0, {}, {bytes(0, 10)});                          // stream 0
  s.add(1, {bytes(0, 10)}, {bytes(10, 20)});             // stream 0
  const StreamStep b = s.add(2, {bytes(0, 10)}, {bytes(20, 30)});  // stream 1, waits 0
  const StreamStep c = s.add(3, {bytes(0, 30)}, {bytes(30, 40)});  // waits for 1 on stream 0 only
  EXPECT_EQ(b.waits, std::vector<int>{0});
  EXPECT_EQ(c.stream, 1);
  EXPECT_EQ(c.waits, std::vector<int>{1});  // 0 is implied by 1 (same stream, earlier)
}

TEST(StreamScheduler, OneStreamKeepsThePlanOrder) {
  StreamScheduler s(1);
  for (int i = 0; i < 6; ++i) {
    const StreamStep st = s.add(i, {bytes(0, 10)}, {bytes(10 * (i + 1), 10 * (i + 2))});
    EXPECT_EQ(st.stream, 0);
    EXPECT_TRUE(st.waits.empty());
  }
  EXPECT_EQ(s.streams(), 1);
}

TEST(StreamScheduler, RandomPlansKeepEveryDependency) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 40), max_streams = 1 + static_cast<int>(rng() % 5);
    StreamScheduler s(max_streams);
    std::vector<std::vector<Region>> reads(n), writes(n);
    std::vector<StreamStep> out(n);
    auto region = [&] {
      const int space = static_cast<int>(rng() % 3);
      const int64_t b = static_cast<int64_t>(rng() % 100), len = 1 + static_cast<int64_t>(rng() % 20);
      return Region{space, b, b + len};
    };
    for (int i = 0; i < n; ++i) {
      for (int k = static_cast<int>(rng() % 3); k > 0; --k) reads[i].push_back(region());
      for (int k = 1 + static_cast<int>(rng() % 2); k > 0; --k) writes[i].push_back(region());
      out[i] = s.add(i, reads[i], writes[i]);
      ASSERT_LT(out[i].stream, max_streams);
    }
    for (int i = 0; i < n; ++i)
      for (int w : out[i].waits) ASSERT_NE(out[w].stream, out[i].stream) << "a wait on the same stream";
    const std::vector<std::set<int>> before = happens_before(out, max_streams);
    auto meets = [](const std::vector<Region>& a, const std::vector<Region>& b) {
      for (const Region& x : a)
        for (const Region& y : b)
          if (x.space == y.space && x.begin < y.end && y.begin < x.end) return true;
      return false;
    };
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < i; ++j) {
        if (meets(writes[j], reads[i]) || meets(writes[j], writes[i]) || meets(reads[j], writes[i])) {
          EXPECT_TRUE(before[i].count(j)) << "trial " << trial << ": step " << i << " may run with " << j;
        }
      }
  }
}

}  // namespace
}  // namespace kiln::codegen
