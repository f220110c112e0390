// attention_layout: the Transposes around kiln.Attention become its perms, and the reference
// kernel on the folded node gives the numbers of the Transposes and the plain node (so these
// tests also pin the perms' meaning); Transposes that would leave an operand's columns strided,
// or that others read, stay.
#include "lower/fold_attention_layout.h"

#include "../passes/pass_test_util.h"

namespace kiln::passes::testing {
namespace {

ir::Attributes scale(float s) { return {{"scale", F(s)}}; }
ir::Attributes perm(std::vector<int64_t> p) { return {{"perm", Is(std::move(p))}}; }

// BERT's and GPT's heads: [B, S, H, D] split by Transpose [0, 2, 1, 3] (the keys [0, 2, 3, 1]),
// the output joined back by the inverse and a Reshape.
TEST(FoldAttentionLayout, ATransformersHeadTransposes) {
  auto g = check_lowering(
      [](Builder& b) {
        ir::Value* q = b.op("Transpose", {b.in("q", {2, 7, 3, 5})}, perm({0, 2, 1, 3}));
        ir::Value* kt = b.op("Transpose", {b.in("k", {2, 6, 3, 5})}, perm({0, 2, 3, 1}));
        ir::Value* v = b.op("Transpose", {b.in("v", {2, 6, 3, 4})}, perm({0, 2, 1, 3}));
        ir::Value* o = b.op("Attention", {q, kt, v, b.in("mask", {2, 1, 1, 6})}, scale(0.4f), "kiln");
        b.out(b.op("Reshape", {b.op("Transpose", {o}, perm({0, 2, 1, 3})), b.ints({2, 7, 12})}));
      },
      [](ir::Graph& graph) { return lower::fold_attention_layouts(graph); }, 4);
  EXPECT_EQ(count(*g, "Transpose"), 0);
  ASSERT_EQ(count(*g, "Attention"), 1);
  for (const ir::Node* n : g->nodes())
    if (n->op_type() == "Attention") {
      EXPECT_EQ(n->attr_ints("q_perm"), (std::vector<int64_t>{0, 2, 1, 3}));
      EXPECT_EQ(n->attr_ints("k_perm"), (std::vector<int64_t>{0, 2, 3, 1}));
      EXPECT_EQ(n->attr_ints("out_perm"), (std::vector<int64_t>{0, 2, 1, 3}));
      EXPECT_EQ(n->output(0)->type.static_dims(), (std::vector<int64_t>{2, 7, 3, 4}));
    }
}

// ViT's keys: K [B, H, S, D] transposed to K_T by [0, 1, 3, 2]: read as K's rows.
TEST(FoldAttentionLayout, KeysAsRows) {
  check_lowering(
      [](Builder& b) {
        ir::Value* kt = b.op("Transpose", {b.in("k", {1, 2, 9, 8})}, perm({0, 1, 3, 2}));
        b.out(b.op("Attention", {b.in("q", {1, 2, 5, 8}), kt, b.in("v", {1, 2, 9, 3})}, scale(0.3f), "kiln"));
      },
      [](ir::Graph& graph) { return lower::fold_attention_layouts(graph); }, 1);
}

// ViT's and Swin's packed QKV: [B, S, 3, H, D] by Transpose [2, 0, 3, 1, 4] and a Gather for each
// of Q, K and V (K then to K_T), Q scaled by a constant: all read from the packed tensor, the
// factor in the node's scale, the copies gone.
TEST(FoldAttentionLayout, APackedQkv) {
  auto g = check_lowering(
      [](Builder& b) {
        ir::Value* qkv = b.op("Transpose", {b.in("qkv", {2, 7, 3, 2, 4})}, perm({2, 0, 3, 1, 4}));
        auto head = [&](int64_t i) {
          return b.op("Gather", {qkv, b.c(Tensor::from_vector<int64_t>({}, {i}))}, {{"axis", I(0)}});
        };
        ir::Value* kt = b.op("Transpose", {head(1)}, perm({0, 1, 3, 2}));
        // Q scaled before the attention, as Swin's is.
        ir::Value* q = b.op("Mul", {head(0), b.c(Tensor::from_vector<float>({}, {0.7f}))});
        ir::Value* o = b.op("Attention", {q, kt, head(-1)}, scale(0.5f), "kiln");
        b.out(b.op("Reshape", {b.op("Transpose", {o}, perm({0, 2, 1, 3})), b.ints({2, 7, 8})}));
      },
      [](ir::Graph& graph) { return lower::fold_attention_layouts(graph); }, 5);
  EXPECT_EQ(count(*g, "Transpose"), 0);
  EXPECT_EQ(count(*g, "Gather"), 0);
  EXPECT_EQ(count(*g, "Mul"), 0);
  for (const ir::Node* n : g->nodes())
    if (n->op_type() == "Attention") {
      EXPECT_EQ(n->attr_ints("k_perm"), (std::vector<int64_t>{2, 0, 3, 4, 1}));
      EXPECT_EQ(n->attr_int("v_index", -1), 2);
    }
}

// Left alone: a Q transposed down its columns, a V Transpose another node reads too, an output
// Transpose that is the graph's output (its value keeps its name there).
TEST(FoldAttentionLayout, OnlyRowsOfContiguousColumns) {
  auto g = check_lowering(
      [](Builder& b) {
        ir::Value* q = b.op("Transpose", {b.in("q", {2, 5, 7})}, perm({0, 2, 1}));
        ir::Value* v = b.op("Transpose", {b.in("v", {2, 3, 6})}, perm({0, 2, 1}));
        ir::Value* kt = b.op("Transpose", {b.in("k", {5, 2, 6})}, perm({1, 0, 2}));
        ir::Value* o = b.op("Attention", {q, kt, v}, scale(0.5f), "kiln");
        b.out(b.op("Transpose", {o}, perm({0, 2, 1})));
        b.out(b.op("Relu", {v}));
      },
      [](ir::Graph& graph) { return lower::fold_attention_layouts(graph); }, 1);
  // Only K_T's Transpose (batch and rows swapped, columns in place) folds.
  EXPECT_EQ(count(*g, "Transpose"), 3);
}

}  // namespace
}  // namespace kiln::passes::testing
