// ChannelShuffle of the "kiln" domain, formed at lowering (src/lower/fuse_channel_shuffle.cpp):
//
//   ChannelShuffle(X1, ..., Xk) -> Y1, ..., Ym    attributes axis, group, ranges
//       Z = Concat(X1..Xk, axis); S = ShuffleNet's channel shuffle of Z along `axis` with
//       `group` groups (view the C channels as [group, C/group], swap, flatten: S[j] =
//       Z[(j % group) * (C/group) + j / group]); Ym = S[ranges[2m] : ranges[2m+1]] along axis.
//
// ShuffleNet's unit ends in Concat, Reshape, Transpose, Reshape and two Slices: five passes
// over the activation that this op makes one. Any element type (it only moves elements).
#include <cstring>
#include <string>
#include <vector>

#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

struct ShuffleArgs {
  int64_t axis, group;
  std::vector<int64_t> ranges;
};

template <typename Ctx>
ShuffleArgs shuffle_args(Ctx& ctx, int64_t rank, int64_t channels) {
  const ir::Node& n = ctx.node();
  ShuffleArgs a{n.attr_int("axis", 1), n.attr_int("group", 1), n.attr_ints("ranges")};
  if (a.axis < 0) a.axis += rank;
  if (a.axis < 0 || a.axis >= rank) ctx.fail("axis " + std::to_string(n.attr_int("axis", 1)) + " is out of range");
  if (a.ranges.size() != 2 * static_cast<size_t>(ctx.num_outputs()))
    ctx.fail("ranges needs a [start, end) pair per output");
  if (channels >= 0) {
    if (a.group < 1 || channels % a.group != 0)
      ctx.fail("group " + std::to_string(a.group) + " must divide the " + std::to_string(channels) + " channels");
    for (size_t i = 0; i < a.ranges.size(); i += 2)
      if (a.ranges[i] < 0 || a.ranges[i] > a.ranges[i + 1] || a.ranges[i + 1] > channels)
        ctx.fail("range [" + std::to_string(a.ranges[i]) + ", " + std::to_string(a.ranges[i + 1]) +
                 ") is outside the " + std::to_string(channels) + " channels");
  }
  return a;
}

void infer_channel_shuffle(InferContext& ctx) {
  const ir::TensorType& x0 = ctx.input(0);
  if (!x0.rank_known) {
    for (int m = 0; m < ctx.num_outputs(); ++m) ctx.set_output(m, ir::TensorType::unranked(x0.dtype));
    return;
  }
  const int64_t rank = x0.rank();
  int64_t axis = ctx.node().attr_int("axis", 1);
  if (axis < 0) axis += rank;
  int64_t channels = 0;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const ir::TensorType& x = ctx.input(i);
    if (!x.rank_known || x.rank() != rank || x.dtype != x0.dtype) ctx.fail("inputs must share rank and dtype");
    if (axis < 0 || axis >= rank || !x.dims[axis].is_static()) { channels = -1; break; }
    channels += x.dims[axis].value;
  }
  const ShuffleArgs a = shuffle_args(ctx, rank, channels);
  for (int m = 0; m < ctx.num_outputs(); ++m) {
    std::vector<ir::Dim> d = x0.dims;
    d[a.axis] = ir::Dim(a.ranges[2 * m + 1] - a.ranges[2 * m]);
    ctx.set_output(m, x0.dtype, d);
  }
}

void channel_shuffle_kernel(KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  const int64_t rank = x0.rank();
  int64_t axis = ctx.node().attr_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) ctx.fail("axis out of range");
  // Where each concatenated channel comes from.
  std::vector<std::pair<int, int64_t>> source;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& x = ctx.input(i);
    if (x.rank() != rank || x.dtype() != x0.dtype()) ctx.fail("inputs must share rank and dtype");
    for (int64_t k = 0; k < rank; ++k)
      if (k != axis && x.dim(static_cast<int>(k)) != x0.dim(static_cast<int>(k)))
        ctx.fail("inputs must have equal dims off the axis");
    for (int64_t c = 0; c < x.dim(static_cast<int>(axis)); ++c) source.push_back({i, c});
  }
  const int64_t channels = static_cast<int64_t>(source.size());
  const ShuffleArgs a = shuffle_args(ctx, rank, channels);
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= x0.dim(static_cast<int>(k));
  for (int64_t k = axis + 1; k < rank; ++k) inner *= x0.dim(static_cast<int>(k));
  const size_t esize = dtype_size(x0.dtype());
  const int64_t per_group = channels / a.group;
  for (int m = 0; m < ctx.num_outputs(); ++m) {
    std::vector<int64_t> d = x0.dims();
    const int64_t begin = a.ranges[2 * m], width = a.ranges[2 * m + 1] - begin;
    d[a.axis] = width;
    char* y = static_cast<char*>(ctx.make_output(m, x0.dtype(), d).raw());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < width; ++j) {
        const int64_t s = begin + j;
        const auto [in, c] = source[(s % a.group) * per_group + s / a.group];
        const Tensor& x = ctx.input(in);
        const int64_t xc = x.dim(static_cast<int>(axis));
        std::memcpy(y + ((o * width + j) * inner) * esize,
                    static_cast<const char*>(x.raw()) + ((o * xc + c) * inner) * esize, inner * esize);
      }
  }
}

}  // namespace

KILN_REGISTER_OPS(kiln_shuffle) {
  reg.add({.name = "ChannelShuffle", .domain = "kiln", .min_inputs = 1, .max_inputs = -1, .min_outputs = 1,
           .max_outputs = -1, .pattern = PatternKind::Injective, .infer = infer_channel_shuffle,
           .kernel = channel_shuffle_kernel});
}

}  // namespace kiln::ops
