// Packed weights recorded and replayed (backends/packed_weights.h): a replay uses the stored
// buffers in order without filling them; a spec, key or size that differs packs afresh.
#include <gtest/gtest.h>

#include <cstring>

#include "backends/packed_weights.h"

namespace kiln::testing {

namespace {
using backends::PackedWeights;
using backends::PackedWeightsScope;
using Mode = PackedWeightsScope::Mode;

// Two buffers, as a kernel with weights and a bias would pack them; counts fills.
std::pair<std::shared_ptr<void>, std::shared_ptr<void>> build(int* fills, const std::string& second_key = "bias") {
  auto a = backends::packed_buffer(256, "weights", [&](void* p) {
    ++*fills;
    std::memset(p, 7, 256);
  });
  auto b = backends::packed_buffer(64, second_key, [&](void* p) {
    ++*fills;
    std::memset(p, 9, 64);
  });
  return {a, b};
}
}  // namespace

TEST(PackedWeights, OutsideAScopeBuffersAreFilled) {
  int fills = 0;
  EXPECT_FALSE(backends::packing_in_scope());
  auto [a, b] = build(&fills);
  EXPECT_EQ(fills, 2);
  EXPECT_EQ(static_cast<unsigned char*>(a.get())[255], 7);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.get()) % 64, 0u);
}

TEST(PackedWeights, ReplayUsesTheRecordedBuffersUnfilled) {
  PackedWeights w;
  int fills = 0;
  std::pair<std::shared_ptr<void>, std::shared_ptr<void>> recorded;
  {
    PackedWeightsScope scope(w, Mode::Record, "cpu:k{x=1}@1");
    EXPECT_TRUE(backends::packing_in_scope());
    recorded = build(&fills);
  }
  EXPECT_FALSE(backends::packing_in_scope());
  ASSERT_EQ(w.buffers.size(), 2u);
  EXPECT_EQ(w.buffers[0].key, "weights");
  EXPECT_EQ(w.buffers[1].bytes, 64u);
  EXPECT_EQ(w.spec, "cpu:k{x=1}@1");

  fills = 0;
  PackedWeightsScope scope(w, Mode::Replay, "cpu:k{x=1}@1");
  auto [a, b] = build(&fills);
  EXPECT_EQ(fills, 0);
  EXPECT_EQ(a, recorded.first);
  EXPECT_EQ(b, recorded.second);
  EXPECT_EQ(scope.replayed(), 2u);
  EXPECT_FALSE(scope.repacked());
}

TEST(PackedWeights, AnotherSpecOrKeyPacksAfresh) {
  PackedWeights w;
  int fills = 0;
  {
    PackedWeightsScope scope(w, Mode::Record, "cpu:k{x=1}@1");
    build(&fills);
  }
  {  // an edited spec: nothing stored is used
    fills = 0;
    PackedWeightsScope scope(w, Mode::Replay, "cpu:k{x=2}@1");
    build(&fills);
    EXPECT_EQ(fills, 2);
    EXPECT_EQ(scope.replayed(), 0u);
    EXPECT_TRUE(scope.repacked());
  }
  {  // the second buffer's format differs: the first is used, the second packed
    fills = 0;
    PackedWeightsScope scope(w, Mode::Replay, "cpu:k{x=1}@1");
    build(&fills, "bias/v2");
    EXPECT_EQ(fills, 1);
    EXPECT_EQ(scope.replayed(), 1u);
    EXPECT_TRUE(scope.repacked());
  }
}

}  // namespace kiln::testing
