// The C++ target's op emitters: one function per op family writes an instruction's body as a
// call of a kernel under src/kernels/ with the node's constant parameters, or as a loop
// nest (loop_nest.h). find_op_emitter says which one serves a node.
#pragma once
#include <optional>

#include "codegen/cpp/emit_context.h"
#include "ops/core/resize_geometry.h"

namespace kiln::codegen::cpp {

// The emitter for `n`, or nullptr when the C++ target has none for its op.
OpEmitFn find_op_emitter(const ir::Node& n);

// emit_elementwise.cpp: kiln.FusedElementwise, one elementwise or view node.
void emit_fused_elementwise(EmitContext& ctx);
void emit_elementwise_node(EmitContext& ctx);
// emit_conv.cpp: channels-last kiln.FusedConv and the kiln.Nhwc* pools (window ops).
void emit_conv(EmitContext& ctx);
void emit_pool(EmitContext& ctx);
void emit_global_pool(EmitContext& ctx);
// emit_conv_nd.cpp: channels-first convs and pools of 1 to 3 spatial dims (kernels/conv_nd.h).
void emit_conv_nd(EmitContext& ctx);
void emit_pool_nd(EmitContext& ctx);
void emit_global_pool_nd(EmitContext& ctx);
void emit_conv_transpose(EmitContext& ctx);
// emit_onednn.cpp: whether the plan runs this instruction on oneDNN and the project may call
// it; a channels-last kiln.FusedConv as a oneDNN convolution (kernels/onednn_conv.h).
bool runs_on_onednn(const EmitContext& ctx);
void emit_onednn_conv(EmitContext& ctx);
// emit_conv_chain.cpp: kiln.ConvChain, banded.
void emit_conv_chain(EmitContext& ctx);
// emit_matmul.cpp: Gemm, kiln.FusedGemm, MatMul, kiln.FusedMatMul; a 1x1 conv of one pixel
// the plan runs on gemv.
void emit_gemm(EmitContext& ctx);
void emit_matmul(EmitContext& ctx);
void emit_gemv_conv(EmitContext& ctx);
// emit_data_movement.cpp: Concat, Slice, Split, Gather, Pad (constant), Dropout (inference), MatMul
// of two computed operands.
void emit_pad(EmitContext& ctx);
void emit_tile(EmitContext& ctx);
void emit_depth_space(EmitContext& ctx);
void emit_dropout(EmitContext& ctx);
void emit_matmul_runtime(EmitContext& ctx);
void emit_concat(EmitContext& ctx);
void emit_slice(EmitContext& ctx);
void emit_split(EmitContext& ctx);
void emit_gather(EmitContext& ctx);
void emit_gather_nd(EmitContext& ctx);
// emit_norm.cpp: kiln.SkipLayerNorm, LayerNormalization, Softmax, kiln.Attention; reductions,
// alone and as kiln.FusedReduce (with their elementwise prologue and epilogue).
void emit_skip_layernorm(EmitContext& ctx);
void emit_layernorm(EmitContext& ctx);
void emit_softmax(EmitContext& ctx);
void emit_group_norm(EmitContext& ctx);
void emit_arg_reduce(EmitContext& ctx);
void emit_topk(EmitContext& ctx);
void emit_lrn(EmitContext& ctx);
void emit_attention(EmitContext& ctx);
void emit_reduce(EmitContext& ctx);
void emit_fused_reduce(EmitContext& ctx);
// emit_resize.cpp: Resize and Upsample (nearest, linear, cubic; up to two resized axes).
void emit_resize(EmitContext& ctx);
// The resize as at most two separable axes with their tap tables, or nullopt when it copies
// its input unchanged (then that copy is already written into ctx); an UnsupportedError
// naming the node for what kernels cannot run. Shared by the targets' Resize emitters.
std::optional<ops::SeparableResize> resize_plan(EmitContext& ctx);
// emit_recurrent.cpp: GRU and LSTM with the default activations (kernels/recurrent.h).
void emit_recurrent(EmitContext& ctx);

}  // namespace kiln::codegen::cpp
