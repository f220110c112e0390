// Identity and inference-mode Dropout: outputs alias their input.
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

KILN_REGISTER_OPS(identity) {
  reg.add({.name = "Identity", .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::ElemWise,
           .infer = infer_same_as_input,
           .kernel = [](KernelContext& ctx) { ctx.set_output(0, ctx.input(0)); }});

  // Inference only: training_mode (input 2) must be absent or false, or the ratio 0; the
  // optional mask output is all true.
  reg.add({.name = "Dropout", .min_inputs = 1, .max_inputs = 3, .min_outputs = 1, .max_outputs = 2,
           .pattern = PatternKind::ElemWise,
           .infer = [](InferContext& ctx) {
             infer_same_as_input(ctx);
             if (ctx.has_output(1)) {
               ir::TensorType t = ctx.input(0);
               t.dtype = DType::Bool;
               ctx.set_output(1, t);
             }
           },
           .kernel = [](KernelContext& ctx) {
             // Training mode with ratio 0 drops nothing; any other ratio draws random values
             // that cannot match another implementation's.
             if (ctx.has_input(2) && ctx.input(2).as_int64(0) != 0) {
               const double ratio = ctx.has_input(1) ? ctx.input(1).as_double(0) : 0.5;
               if (ratio != 0) throw UnsupportedError("Dropout in training mode (ratio > 0) is not supported");
             }
             ctx.set_output(0, ctx.input(0));
             if (ctx.has_output(1)) {
               Tensor& m = ctx.make_output(1, DType::Bool, ctx.input(0).dims());
               bool* p = m.data<bool>();
               for (int64_t i = 0; i < m.numel(); ++i) p[i] = true;
             }
           }});
}

}  // namespace kiln::ops
