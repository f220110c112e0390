#include "codegen/cpp/emit_pointwise.h"

#include <vector>

#include "backends/cpu/cache_size.h"
#include "codegen/cpp/code_text.h"
#include "kernels/pointwise_rows.h"

namespace kiln::codegen::cpp {

PointwiseCall pointwise_call(EmitContext& ctx, const ir::Node& n, int64_t K, int64_t N, const float* w, bool k_major,
                             float alpha, const float* bias, const std::string& key) {
  namespace pd = kiln_kernels::pointwise_detail;
  const plan::KernelSpec& spec = ctx.step.instruction->spec;
  // The plan's choice where it ran this node on the kernel (its "depth", "pair", "split"),
  // else the kernel's defaults for this machine's L1.
  int64_t depth = pd::range_depth(backends::cpu::l1d_cache_bytes());
  bool pair = pd::pair_allowed(K, N), split = false;
  if (&n == &ctx.node && spec.params.count("depth") && spec.params.count("pair") && spec.params.count("split")) {
    depth = spec.get_int("depth");
    pair = spec.get_int("pair") != 0 && pd::pair_allowed(K, N);
    split = spec.get_string("split") == "outputs";
  }
  if (depth < 16 || depth > pd::kMaxRangeDepth || depth % 16) throw ctx.unsupported("the plan's pointwise depth " + i64(depth) + " is out of range");
  const kiln_kernels::PointwiseLayout layout(K, N, pair, depth, N);
  std::vector<float> scaled;
  if (alpha != 1.f) {
    scaled.assign(w, w + K * N);
    for (float& v : scaled) v *= alpha;
    w = scaled.data();
  }
  std::vector<float> packed(static_cast<size_t>(layout.packed_size()));
  layout.pack(w, k_major, packed.data());
  std::vector<float> b(static_cast<size_t>(kiln_kernels::PointwiseLayout::round16(N)), 0.f);
  if (bias) std::copy(bias, bias + N, b.begin());
  ctx.use_kernel("pointwise_rows.h");
  PointwiseCall c;
  c.layout = "kiln_kernels::PointwiseLayout(" + i64(K) + ", " + i64(N) + ", " + (pair ? "true" : "false") + ", " +
             i64(depth) + ", " + i64(N) + ")";
  const std::string k = key + ":pointwise:" + i64(depth) + (pair ? ":pair" : "") + ":" + literal_float(alpha);
  c.weights = ctx.weights(k, packed);
  c.bias = ctx.weights(k + ":bias", b);
  c.split_outputs = split;
  return c;
}

}  // namespace kiln::codegen::cpp
