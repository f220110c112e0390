// Resize and Upsample: one kernel over the output, its separable axes' tap tables
// (ops/core/resize_geometry.h, as the C++ target and the reference kernel plan them) in the
// weights (kernels/cuda/device.cuh resize_separable).
#include <string>
#include <vector>

#include "codegen/cpp/code_text.h"
#include "codegen/cpp/op_emitters.h"
#include "codegen/cuda/cuda_ops.h"

namespace kiln::codegen::cuda {

using cpp::i64;

void emit_resize(EmitContext& ctx) {
  const Operand& x = ctx.step.inputs.at(0);
  const Operand& y = ctx.step.outputs.at(0);
  const std::optional<ops::SeparableResize> r = cpp::resize_plan(ctx);
  if (!r) return;  // a copy
  const bool two = r->axes.size() > 1;
  std::vector<std::string> idx, w;
  for (size_t k = 0; k < 2; ++k) {
    ops::ResizeAxisPlan p;
    if (k < r->axes.size()) p = r->plans[k];
    else p.idx = {0}, p.w = {1.0};
    const std::vector<float> wf(p.w.begin(), p.w.end());
    std::string key = "resize:" + ctx.node.name() + ":" + std::to_string(k) + ":" + std::to_string(ctx.step.index);
    idx.push_back(ctx.weights(key + ":idx",
                              std::string_view(reinterpret_cast<const char*>(p.idx.data()), p.idx.size() * sizeof(int64_t)),
                              DType::Int64));
    w.push_back(ctx.weights(key + ":w", wf));
  }
  const size_t a0 = r->axes[0], a1 = two ? r->axes[1] : 0;
  const std::vector<int64_t> shape = {r->outer, x.dims[a0], y.dims[a0], r->mid, two ? x.dims[a1] : 1, two ? y.dims[a1] : 1,
                                      r->inner, r->plans[0].taps, two ? r->plans[1].taps : 1};
  ctx.line("const kiln_kernels::ResizeShape s" + cpp::int_list(shape) + ";");
  ctx.line("KILN_LAUNCH(kiln_kernels::resize_separable, kiln_kernels::blocks_for(" + i64(y.numel()) +
           "), kiln_kernels::kThreads, c.stream)(s, " + idx[0] + ", " + w[0] + ", " + idx[1] + ", " + w[1] + ", " +
           ctx.in(0) + ", " + ctx.out(0) + ");");
}

}  // namespace kiln::codegen::cuda
