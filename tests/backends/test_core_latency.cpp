// core_round_trip_ns (core_latency.cpp): a round trip between the first two cores this process
// may run on, where there are two.
#include "backends/cpu/core_latency.h"

#include <gtest/gtest.h>
#include <sched.h>

namespace kiln {
namespace {

TEST(CoreLatency, RoundTripBetweenTwoCores) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  const std::optional<double> ns = backends::cpu::core_round_trip_ns(200);
  if (CPU_COUNT(&allowed) < 2) {
    EXPECT_FALSE(ns.has_value());
    return;
  }
  ASSERT_TRUE(ns.has_value());
  // A line's round trip is tens of nanoseconds on one die to a few microseconds across a busy
  // host's sockets; never zero, never a millisecond.
  EXPECT_GT(*ns, 1.0);
  EXPECT_LT(*ns, 1e6);
  // The caller may run on every CPU it could before.
  cpu_set_t after;
  ASSERT_EQ(sched_getaffinity(0, sizeof(after), &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&allowed, &after));
}

TEST(CoreLatency, NoTripsNoAnswer) { EXPECT_FALSE(backends::cpu::core_round_trip_ns(0).has_value()); }

}  // namespace
}  // namespace kiln
