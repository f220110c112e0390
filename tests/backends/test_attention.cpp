// The cpu backend's kiln.Attention against the reference kernel, both implementations:
// kiln_attention_rows (the default with AVX-512) and oneDNN's matmuls ("kiln").
#include "kernel_check.h"
#include "backends/cpu/simd.h"

namespace kiln {
namespace {

using kernel_check::Case;
using kernel_check::check;

ir::Attributes scale(float s) { return {{"scale", ir::Attribute::of_float(s)}}; }

// `c` on each implementation, at 1 and 2 threads.
void check_both(Case c) {
  for (bool rows : {true, false}) {
    if (rows && !backends::cpu::has_avx512()) continue;
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::string(rows ? "kiln_attention_rows" : "oneDNN") + ", threads " + std::to_string(threads));
      c.threads = threads;
      c.disabled = rows ? std::vector<std::string>{} : std::vector<std::string>{"kiln_attention_rows"};
      c.impl = rows ? "kiln_attention_rows" : "kiln";
      check(c);
    }
  }
}

TEST(CpuAttention, NoMask) {
  // Q [2,3,7,13], K_T [2,3,13,11], V [2,3,11,5]
  check_both({"Attention", "kiln", {{2, 3, 7, 13}, {2, 3, 13, 11}, {2, 3, 11, 5}}, {false, false, false},
              {{2, 3, 7, 5}}, scale(0.3f)});
  check_both({"Attention", "kiln", {{7, 13}, {13, 11}, {11, 5}}, {false, false, false}, {{7, 5}}});
  // Rows not a multiple of the register tile's 6, scores and values wider than 64 columns
  // (a masked last block), depths not a multiple of 16.
  Case wide{"Attention", "kiln", {{2, 2, 13, 33}, {2, 2, 33, 70}, {2, 2, 70, 67}}, {false, false, false},
            {{2, 2, 13, 67}}, scale(0.17f)};
  wide.tol = 2e-4f;
  check_both(wide);
}

TEST(CpuAttention, MaskShapes) {
  // BERT's padding mask [B,1,1,Sk], a full [Sq,Sk] mask, a per-query column [B,H,Sq,1], a 1-D one.
  for (std::vector<int64_t> m : {std::vector<int64_t>{2, 1, 1, 11}, {7, 11}, {2, 3, 7, 1}, {11}, {1}}) {
    SCOPED_TRACE(m.size());
    Case c{"Attention", "kiln", {{2, 3, 7, 13}, {2, 3, 13, 11}, {2, 3, 11, 5}, m}, {false, false, false, false},
           {{2, 3, 7, 5}}, scale(0.125f)};
    c.fill = [](size_t i, Tensor& t) {  // a padding-style mask: 0 or -10000
      if (i == 3)
        for (int64_t k = 0; k < t.numel(); ++k) t.data<float>()[k] = t.data<float>()[k] > 0.5f ? -10000.f : 0.f;
    };
    c.concurrent = true;
    check_both(c);
  }
}

TEST(CpuAttention, BroadcastBatch) {
  // K_T and V shared across heads; Q broadcast across the batch.
  check_both({"Attention", "kiln", {{1, 3, 7, 13}, {2, 1, 13, 11}, {2, 1, 11, 5}}, {false, false, false},
              {{2, 3, 7, 5}}});
}

TEST(CpuAttention, PermutedOperands) {
  // A transformer's heads read in place: Q, K and V as [B, S, H, D], the output written as
  // [B, S, H, Dv] (the perms that src/lower/fold_attention_layout.cpp folds); the keys also as
  // K's rows of a [B, H, S, D] tensor, and with a mask.
  auto perms = [](std::vector<int64_t> q, std::vector<int64_t> k, std::vector<int64_t> v, std::vector<int64_t> o) {
    ir::Attributes a = scale(0.25f);
    a["q_perm"] = ir::Attribute::of_ints(q);
    a["k_perm"] = ir::Attribute::of_ints(k);
    a["v_perm"] = ir::Attribute::of_ints(v);
    if (!o.empty()) a["out_perm"] = ir::Attribute::of_ints(o);
    return a;
  };
  check_both({"Attention", "kiln", {{2, 13, 3, 9}, {2, 11, 3, 9}, {2, 11, 3, 5}}, {false, false, false},
              {{2, 13, 3, 5}}, perms({0, 2, 1, 3}, {0, 2, 3, 1}, {0, 2, 1, 3}, {0, 2, 1, 3})});
  check_both({"Attention", "kiln", {{2, 3, 13, 9}, {2, 3, 11, 9}, {2, 3, 11, 70}, {2, 1, 1, 11}},
              {false, false, false, false}, {{2, 13, 3, 70}},
              perms({0, 1, 2, 3}, {0, 1, 3, 2}, {0, 1, 2, 3}, {0, 2, 1, 3})});
  // The batch dims permuted as well: Q [H, B, S, D] read as [B, H, S, D].
  check_both({"Attention", "kiln", {{3, 2, 7, 9}, {2, 3, 9, 11}, {2, 3, 11, 5}}, {false, false, false},
              {{2, 3, 7, 5}}, perms({1, 0, 2, 3}, {0, 1, 2, 3}, {0, 1, 2, 3}, {})});
}

TEST(CpuAttention, PackedQkv) {
  // Q, K and V out of one [B, S, 3, H, D] tensor (perm [2, 0, 3, 1, 4], then index 0, 1, 2; the
  // keys read as K's rows), the output written as [B, S, H, D].
  ir::Attributes a = scale(0.3f);
  a["q_perm"] = ir::Attribute::of_ints({2, 0, 3, 1, 4});
  a["k_perm"] = ir::Attribute::of_ints({2, 0, 3, 4, 1});
  a["v_perm"] = ir::Attribute::of_ints({2, 0, 3, 1, 4});
  a["q_index"] = ir::Attribute::of_int(0);
  a["k_index"] = ir::Attribute::of_int(1);
  a["v_index"] = ir::Attribute::of_int(2);
  a["out_perm"] = ir::Attribute::of_ints({0, 2, 1, 3});
  check_both({"Attention", "kiln", {{2, 13, 3, 3, 9}, {2, 13, 3, 3, 9}, {2, 13, 3, 3, 9}}, {false, false, false},
              {{2, 13, 3, 9}}, a});
}

TEST(CpuAttention, ColumnsOutOfPlaceRunOnOnednn) {
  // Q read down its columns: not kiln_attention_rows' layout, oneDNN's matmuls take it.
  ir::Attributes a = scale(0.5f);
  a["q_perm"] = ir::Attribute::of_ints({0, 1, 3, 2});
  Case c{"Attention", "kiln", {{2, 3, 9, 7}, {2, 3, 9, 11}, {2, 3, 11, 5}}, {false, false, false}, {{2, 3, 7, 5}}, a};
  c.impl = "kiln";
  check(c);
}

TEST(CpuAttention, Declines) {
  // A mask that widens the batch beyond Q·K_T's.
  check({"Attention", "kiln", {{1, 7, 13}, {1, 13, 11}, {1, 11, 5}, {2, 7, 11}}, {false, false, false, false},
         {{2, 7, 5}}},
        false);
}

}  // namespace
}  // namespace kiln
