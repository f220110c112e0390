// GemvChain: which pairs of one-row products become kiln.GemvChain (the backend's predicate
// decides on the pair), and the same numbers as before (the reference kernel runs the body).
#include "lower/fuse_gemv_chain.h"

#include "../passes/pass_test_util.h"

namespace kiln::passes::testing {
namespace {

ir::Attributes linear(const char* act = "") {
  ir::Attributes a{{"transB", I(1)}};
  if (*act) a["activation"] = S(act);
  return a;
}

// A three-layer MLP at batch 1 (mlp_small's form): the predicate takes a pair whose second
// product has at most 16 outputs, so only the last two layers chain.
TEST(FuseGemvChain, TheLastTwoLayersOfAnMlp) {
  auto small_second = [](const ir::Node&, const ir::Node& second) {
    return second.output(0)->type.static_dims().back() <= 16;
  };
  auto g = check_lowering(
      [](Builder& b) {
        ir::Value* x = b.in("x", {1, 24});
        ir::Value* h1 = b.op("FusedGemm", {x, b.rand({40, 24}), b.rand({40})}, linear("Relu"), "kiln");
        ir::Value* h2 = b.op("FusedGemm", {h1, b.rand({33, 40}), b.rand({33})}, linear("Relu"), "kiln");
        b.out(b.op("Gemm", {h2, b.rand({5, 33}), b.rand({5})}, linear()));
      },
      [&](ir::Graph& graph) { return lower::fuse_gemv_chains(graph, small_second); }, 1);
  EXPECT_EQ(count(*g, "GemvChain"), 1);
  EXPECT_EQ(count(*g, "FusedGemm"), 1);
  EXPECT_EQ(count(*g, "Gemm"), 0);
}

// Declined: the first output is also a graph output, or read by two products; the predicate
// says no.
TEST(FuseGemvChain, OnlyASoleReaderJoins) {
  auto declined = [](const std::function<void(Builder&, ir::Value*)>& readers, bool predicate) {
    check_lowering(
        [&](Builder& b) {
          ir::Value* x = b.in("x", {1, 24});
          readers(b, b.op("FusedGemm", {x, b.rand({40, 24}), b.rand({40})}, linear("Relu"), "kiln"));
        },
        [&](ir::Graph& graph) {
          return lower::fuse_gemv_chains(graph, [&](const ir::Node&, const ir::Node&) { return predicate; });
        },
        0);
  };
  declined(
      [](Builder& b, ir::Value* h) {
        b.out(h);
        b.out(b.op("Gemm", {h, b.rand({5, 40})}, linear()));
      },
      true);
  declined(
      [](Builder& b, ir::Value* h) {
        b.out(b.op("Gemm", {h, b.rand({5, 40})}, linear()));
        b.out(b.op("Gemm", {h, b.rand({3, 40})}, linear()));
      },
      true);
  declined([](Builder& b, ir::Value* h) { b.out(b.op("Gemm", {h, b.rand({5, 40})}, linear())); }, false);
}

}  // namespace
}  // namespace kiln::passes::testing
