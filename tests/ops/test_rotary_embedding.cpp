// RotaryEmbedding (opset 23) against a direct transcription of its definition: X transposed to
// [batch, seq, heads, head], pairs rotated by the cache's angles, transposed back.
#include <kiln/error.h>

#include "op_test_util.h"

namespace kiln::testing {

namespace {
using ir::Attribute;

// x4: [B, H, S, D]; cos/sin per (b, s): [half] rows given by row(b, s).
Tensor expected(const Tensor& x4, const Tensor& cos, const Tensor& sin, const std::vector<int64_t>& rows, int64_t rotary,
                bool interleaved) {
  const int64_t B = x4.dim(0), H = x4.dim(1), S = x4.dim(2), D = x4.dim(3), half = rotary / 2;
  Tensor y = x4.clone();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t s = 0; s < S; ++s) {
        const float* in = x4.data<float>() + ((b * H + h) * S + s) * D;
        float* out = y.data<float>() + ((b * H + h) * S + s) * D;
        const int64_t row = rows[b * S + s];
        for (int64_t i = 0; i < half; ++i) {
          const float c = cos.data<float>()[row * half + i], sn = sin.data<float>()[row * half + i];
          const int64_t a = interleaved ? 2 * i : i, bb = interleaved ? 2 * i + 1 : i + half;
          out[a] = c * in[a] - sn * in[bb];
          out[bb] = sn * in[a] + c * in[bb];
        }
      }
  return y;
}
}  // namespace

TEST(RotaryEmbedding, FourDWithPositionIdsPartialAndInterleaved) {
  const int64_t B = 2, H = 3, S = 5, D = 6, P = 11;
  Tensor x = random_float({B, H, S, D}, -1, 1, 3);
  for (int64_t rotary : {int64_t{6}, int64_t{4}})
    for (bool inter : {false, true}) {
      const int64_t half = rotary / 2;
      Tensor cos = random_float({P, half}, -1, 1, 4), sin = random_float({P, half}, -1, 1, 5);
      std::vector<int64_t> ids = {0, 3, 10, 2, 2, 7, 1, 9, 4, 6};
      Tensor pos = Tensor::from_vector<int64_t>({B, S}, ids);
      auto out = run_op({.op = "RotaryEmbedding",
                         .inputs = {x, cos, sin, pos},
                         .attrs = {{"interleaved", Attribute::of_int(inter)},
                                   {"rotary_embedding_dim", Attribute::of_int(rotary == D ? 0 : rotary)}},
                         .opset = 23});
      expect_near(out[0], expected(x, cos, sin, ids, rotary, inter), 1e-6, 1e-6);
    }
}

TEST(RotaryEmbedding, ThreeDInputWithoutPositionIds) {
  const int64_t B = 2, S = 3, H = 2, D = 4;
  Tensor x3 = random_float({B, S, H * D}, -1, 1, 8);
  Tensor cos = random_float({B, S, D / 2}, -1, 1, 9), sin = random_float({B, S, D / 2}, -1, 1, 10);
  auto out = run_op({.op = "RotaryEmbedding", .inputs = {x3, cos, sin}, .attrs = {{"num_heads", Attribute::of_int(H)}},
                     .opset = 23});
  // The same as the 4-D form of X ([B, S, H, D] transposed to [B, H, S, D]).
  Tensor x4(DType::Float, {B, H, S, D});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < D; ++d)
          x4.data<float>()[((b * H + h) * S + s) * D + d] = x3.data<float>()[((b * S + s) * H + h) * D + d];
  std::vector<int64_t> rows(B * S);
  for (int64_t i = 0; i < B * S; ++i) rows[i] = i;
  const Tensor e4 = expected(x4, cos, sin, rows, D, false);
  Tensor e3(DType::Float, {B, S, H * D});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < D; ++d)
          e3.data<float>()[((b * S + s) * H + h) * D + d] = e4.data<float>()[((b * H + h) * S + s) * D + d];
  expect_near(out[0], e3, 1e-6, 1e-6);
}

TEST(RotaryEmbedding, BadShapesAndPositionsAreErrors) {
  Tensor x = random_float({1, 2, 3, 4});
  Tensor c = random_float({8, 2}), s = random_float({8, 2});
  EXPECT_THROW(run_op({.op = "RotaryEmbedding", .inputs = {x, c, s, Tensor::from_vector<int64_t>({1, 3}, {0, 8, 1})},
                       .opset = 23}),
               kiln::Error);  // position 8 of 8 rows
  EXPECT_THROW(run_op({.op = "RotaryEmbedding", .inputs = {x, c, s, Tensor::from_vector<int64_t>({1, 3}, {0, 1, 2})},
                       .attrs = {{"rotary_embedding_dim", Attribute::of_int(3)}}, .opset = 23}),
               kiln::Error);  // odd rotary dim
  EXPECT_THROW(run_op({.op = "RotaryEmbedding", .inputs = {random_float({1, 3, 8}), random_float({1, 3, 2}), random_float({1, 3, 2})},
                       .opset = 23}),
               kiln::Error);  // 3-D without num_heads
  EXPECT_THROW(run_op({.op = "RotaryEmbedding", .inputs = {x, random_float({1, 3, 3}), random_float({1, 3, 3})}, .opset = 23}),
               kiln::Error);  // caches of the wrong width
}

}  // namespace kiln::testing
