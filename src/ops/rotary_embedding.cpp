// RotaryEmbedding (opset 23): rotates the first rotary_embedding_dim features of each head by
// per-position angles given as cos and sin caches. X is [batch, heads, seq, head] or, with the
// num_heads attribute, [batch, seq, heads * head]; the caches are [batch, seq, rotary/2], or
// [max_position, rotary/2] read at position_ids [batch, seq]. Pairs are the two halves of the
// rotated features, or (interleaved) neighbours; features past the rotary dim pass through.
#include <kiln/error.h>

#include <string>
#include <vector>

#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

struct RopeShape {
  int64_t batch, heads, seq, head, rotary;
  bool seq_major;  // 3-D X: [batch, seq, heads * head]
};

template <typename Ctx>
RopeShape rope_shape(const Ctx& ctx, const std::vector<int64_t>& x) {
  const ir::Node& n = ctx.node();
  RopeShape r{};
  const int64_t num_heads = n.attr_int("num_heads", 0);
  if (x.size() == 4) {
    r = {x[0], x[1], x[2], x[3], 0, false};
  } else if (x.size() == 3) {
    if (num_heads <= 0) ctx.fail("a 3-D input [batch, seq, hidden] needs the num_heads attribute");
    if (x[2] % num_heads != 0)
      ctx.fail("hidden size " + std::to_string(x[2]) + " is not a multiple of num_heads " + std::to_string(num_heads));
    r = {x[0], num_heads, x[1], x[2] / num_heads, 0, true};
  } else {
    ctx.fail("input must be 3-D or 4-D, got rank " + std::to_string(x.size()));
  }
  r.rotary = n.attr_int("rotary_embedding_dim", 0);
  if (r.rotary == 0) r.rotary = r.head;
  if (r.rotary < 0 || r.rotary > r.head || r.rotary % 2 != 0)
    ctx.fail("rotary_embedding_dim " + std::to_string(r.rotary) + " must be even and at most the head size " +
             std::to_string(r.head));
  return r;
}

void infer_rotary(InferContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (!dtype_is_float(x.dtype)) ctx.fail("input must be floating-point, got " + x.str());
  for (int i : {1, 2})
    if (ctx.input(i).dtype != x.dtype) ctx.fail("cos_cache and sin_cache must have the input's type, got " + ctx.input(i).str());
  if (ctx.has_input(3) && ctx.input(3).dtype != DType::Int64) ctx.fail("position_ids must be int64, got " + ctx.input(3).str());
  if (x.rank_known && x.is_static()) rope_shape(ctx, x.static_dims());
  else if (x.rank_known && x.rank() != 3 && x.rank() != 4) ctx.fail("input must be 3-D or 4-D, got " + x.str());
  ctx.set_output(0, x);
}

void rotary_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& cos = ctx.input(1);
  const Tensor& sin = ctx.input(2);
  const Tensor* pos = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  const RopeShape r = rope_shape(ctx, x.dims());
  const int64_t half = r.rotary / 2;
  const bool interleaved = ctx.node().attr_int("interleaved", 0) != 0;
  // The cache row of (b, s): position_ids index a [max_position, half] cache; without them the
  // cache is [batch, seq, half].
  const std::vector<int64_t> want =
      pos ? std::vector<int64_t>{cos.dims().empty() ? 0 : cos.dim(0), half} : std::vector<int64_t>{r.batch, r.seq, half};
  if (cos.dims() != want || sin.dims() != want)
    ctx.fail("cos_cache " + cos.describe() + " and sin_cache " + sin.describe() + " must both be [" +
             (pos ? "max_position" : std::to_string(r.batch) + ", " + std::to_string(r.seq)) + ", " +
             std::to_string(half) + "]");
  if (pos && pos->dims() != std::vector<int64_t>{r.batch, r.seq})
    ctx.fail("position_ids must be [" + std::to_string(r.batch) + ", " + std::to_string(r.seq) + "], got " + pos->describe());
  const int64_t max_pos = pos ? cos.dim(0) : 0;
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* px = x.data<T>();
    const T* pc = cos.data<T>();
    const T* ps = sin.data<T>();
    T* py = ctx.make_output(0, x.dtype(), x.dims()).template data<T>();
    for (int64_t b = 0; b < r.batch; ++b)
      for (int64_t s = 0; s < r.seq; ++s) {
        int64_t row = b * r.seq + s;
        if (pos) {
          row = pos->data<int64_t>()[b * r.seq + s];
          if (row < 0 || row >= max_pos)
            ctx.fail("position id " + std::to_string(row) + " is outside the caches' " + std::to_string(max_pos) + " rows");
        }
        const T* c = pc + row * half;
        const T* sn = ps + row * half;
        for (int64_t h = 0; h < r.heads; ++h) {
          const int64_t at = r.seq_major ? ((b * r.seq + s) * r.heads + h) * r.head : ((b * r.heads + h) * r.seq + s) * r.head;
          const T* in = px + at;
          T* out = py + at;
          for (int64_t i = 0; i < half; ++i) {
            const int64_t i1 = interleaved ? 2 * i : i, i2 = interleaved ? 2 * i + 1 : i + half;
            const C x1 = static_cast<C>(in[i1]), x2 = static_cast<C>(in[i2]);
            const C cv = static_cast<C>(c[i]), sv = static_cast<C>(sn[i]);
            out[i1] = static_cast<T>(cv * x1 - sv * x2);
            out[i2] = static_cast<T>(sv * x1 + cv * x2);
          }
          for (int64_t d = r.rotary; d < r.head; ++d) out[d] = in[d];
        }
      }
  });
}

}  // namespace

KILN_REGISTER_OPS(rotary_embedding) {
  reg.add({.name = "RotaryEmbedding", .since_version = 23, .max_version = 23, .min_inputs = 3, .max_inputs = 4,
           .pattern = PatternKind::Opaque, .infer = infer_rotary, .kernel = rotary_kernel});
}

}  // namespace kiln::ops
