// The CUDA target's op emitters: each writes an instruction's host function (EmitContext::lines,
// launching on c.stream) and the kernels it launches (EmitContext::device), with ctx.cuda set.
// Elementwise groups, views and copies (Concat, Slice, Split, Dropout) are the C++ target's
// emitters, whose loop nests become kernels (loop_nest.h); the rest are here.
#pragma once
#include "codegen/cpp/emit_context.h"

namespace kiln::codegen::cuda {

using cpp::EmitContext;
using cpp::OpEmitFn;

// The emitter for `n`, or nullptr when the CUDA target has none for its op.
OpEmitFn find_cuda_op_emitter(const ir::Node& n);

// cuda_window.cpp: channels-last kiln.FusedConv (im2col and cuBLAS, or a depthwise kernel), the
// kiln.Nhwc* pools.
void emit_conv(EmitContext& ctx);
void emit_pool(EmitContext& ctx);
void emit_global_pool(EmitContext& ctx);
// cuda_matmul.cpp: Gemm, MatMul and their fused forms on cuBLAS, the epilogue a kernel.
void emit_gemm(EmitContext& ctx);
void emit_matmul(EmitContext& ctx);
// cuda_rows.cpp: LayerNormalization, kiln.SkipLayerNorm, Softmax, kiln.Attention (a block per
// row), reductions (a block per output as a tree, or a thread per output) and Gather (a thread
// per output element).
void emit_layernorm(EmitContext& ctx);
void emit_skip_layernorm(EmitContext& ctx);
void emit_softmax(EmitContext& ctx);
void emit_attention(EmitContext& ctx);
void emit_reduce(EmitContext& ctx);
void emit_gather(EmitContext& ctx);
// cuda_resize.cpp: Resize and Upsample (at most two resized axes), a kernel over the output.
void emit_resize(EmitContext& ctx);
// cuda_recurrent.cpp: GRU and LSTM, the input projections on cuBLAS, the steps a block per
// sequence.
void emit_recurrent(EmitContext& ctx);

}  // namespace kiln::codegen::cuda
