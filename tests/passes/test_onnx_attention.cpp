// The opset-23 Attention op rewritten to kiln.Attention where it means the same: outputs
// unchanged on random inputs (the reference kernels of both ops), and the forms it must leave
// alone left alone.
#include "pass_test_util.h"

namespace kiln::passes::testing {

namespace {
std::unique_ptr<ir::Graph> rewrite(const std::function<void(Builder&)>& build) {
  return check_rewrite(
      [&](Builder& b) {
        b.g->opsets[""] = 23;
        b.g->opsets["kiln"] = 1;
        build(b);
      },
      passes_of(make_onnx_attention(), make_transpose_folding()), 1e-4);
}
int kiln_attention(const ir::Graph& g) {
  int n = 0;
  for (const ir::Node* node : g.nodes()) n += node->domain() == "kiln" && node->op_type() == "Attention";
  return n;
}
}  // namespace

TEST(OnnxAttention, FourDWithMaskAndScale) {
  auto g = rewrite([](Builder& b) {
    ir::Value* q = b.in("q", {2, 3, 5, 4});
    ir::Value* k = b.in("k", {2, 3, 7, 4});
    ir::Value* v = b.in("v", {2, 3, 7, 6});
    ir::Value* mask = b.in("mask", {5, 7});
    b.out(b.op("Attention", {q, k, v, mask}, {{"scale", F(0.3f)}}));
  });
  EXPECT_EQ(kiln_attention(*g), 1);
  EXPECT_EQ(count(*g, "Transpose"), 1);  // K to K_T
}

TEST(OnnxAttention, FourDDefaultScaleAndOneKvHead) {
  auto g = rewrite([](Builder& b) {
    ir::Value* q = b.in("q", {1, 4, 3, 8});
    ir::Value* k = b.in("k", {1, 1, 9, 8});
    ir::Value* v = b.in("v", {1, 1, 9, 5});
    b.out(b.op("Attention", {q, k, v}));
  });
  EXPECT_EQ(kiln_attention(*g), 1);
}

TEST(OnnxAttention, KeysTransposedByTheExporterFoldAway) {
  // K arrives as Transpose(K_T): the two transposes cancel.
  auto g = rewrite([](Builder& b) {
    ir::Value* q = b.in("q", {2, 2, 3, 4});
    ir::Value* k_t = b.in("k_t", {2, 2, 4, 6});
    ir::Value* v = b.in("v", {2, 2, 6, 4});
    ir::Value* k = b.op("Transpose", {k_t}, {{"perm", Is({0, 1, 3, 2})}});
    b.out(b.op("Attention", {q, k, v}));
  });
  EXPECT_EQ(kiln_attention(*g), 1);
  EXPECT_EQ(count(*g, "Transpose"), 0);
}

TEST(OnnxAttention, ThreeDWithHeads) {
  auto g = rewrite([](Builder& b) {
    ir::Value* q = b.in("q", {2, 5, 12});
    ir::Value* k = b.in("k", {2, 7, 12});
    ir::Value* v = b.in("v", {2, 7, 9});
    ir::Value* mask = b.in("mask", {2, 1, 5, 7});
    b.out(b.op("Attention", {q, k, v, mask}, {{"q_num_heads", I(3)}, {"kv_num_heads", I(3)}}));
  });
  EXPECT_EQ(kiln_attention(*g), 1);
}

TEST(OnnxAttention, OtherFormsKeepTheOnnxOp) {
  auto causal = rewrite([](Builder& b) {
    ir::Value* q = b.in("q", {1, 2, 4, 4});
    b.out(b.op("Attention", {q, b.in("k", {1, 2, 4, 4}), b.in("v", {1, 2, 4, 4})}, {{"is_causal", I(1)}}));
  });
  EXPECT_EQ(kiln_attention(*causal), 0);
  auto softcap = rewrite([](Builder& b) {
    ir::Value* q = b.in("q", {1, 2, 4, 4});
    b.out(b.op("Attention", {q, b.in("k", {1, 2, 4, 4}), b.in("v", {1, 2, 4, 4})}, {{"softcap", F(2.f)}}));
  });
  EXPECT_EQ(kiln_attention(*softcap), 0);
  auto grouped = rewrite([](Builder& b) {  // 4 Q heads over 2 KV heads
    ir::Value* q = b.in("q", {1, 4, 3, 4});
    b.out(b.op("Attention", {q, b.in("k", {1, 2, 5, 4}), b.in("v", {1, 2, 5, 4})}));
  });
  EXPECT_EQ(kiln_attention(*grouped), 0);
  auto bool_mask = rewrite([](Builder& b) {
    ir::Value* q = b.in("q", {1, 2, 3, 4});
    ir::Value* mask = b.op("Greater", {b.in("m", {3, 5}), b.scalar(0.f)});
    b.out(b.op("Attention", {q, b.in("k", {1, 2, 5, 4}), b.in("v", {1, 2, 5, 4}), mask}));
  });
  EXPECT_EQ(kiln_attention(*bool_mask), 0);
  auto short_mask = rewrite([](Builder& b) {  // a mask shorter than the keys pads with masked keys
    ir::Value* q = b.in("q", {1, 2, 3, 4});
    b.out(b.op("Attention", {q, b.in("k", {1, 2, 5, 4}), b.in("v", {1, 2, 5, 4}), b.in("mask", {3, 4})}));
  });
  EXPECT_EQ(kiln_attention(*short_mask), 0);
}

TEST(OnnxAttention, PresentOutputsInUseKeepTheOnnxOp) {
  auto g = rewrite([](Builder& b) {
    ir::Value* q = b.in("q", {1, 2, 3, 4});
    ir::Value *k = b.in("k", {1, 2, 3, 4}), *v = b.in("v", {1, 2, 3, 4});
    ir::Value* y = b.g->add_value("y");
    ir::Value* present = b.g->add_value("present_key");
    b.g->add_node("Attention", {q, k, v, nullptr, b.in("past_k", {1, 2, 2, 4}), b.in("past_v", {1, 2, 2, 4})},
                  {y, present}, {}, "attn");
    b.out(y);
    b.out(present);
  });
  EXPECT_EQ(kiln_attention(*g), 0);
}

}  // namespace kiln::passes::testing
