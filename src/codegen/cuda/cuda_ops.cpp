#include "codegen/cuda/cuda_ops.h"

#include <map>
#include <string>

#include "codegen/cpp/loop_nest.h"
#include "codegen/cpp/op_emitters.h"

namespace kiln::codegen::cuda {

namespace {

// Dropout in inference is a copy (a kernel); its mask output, when asked for, is written on the
// CPU (the C++ target's loop), so refuse it here.
void emit_dropout(EmitContext& ctx) {
  if (ctx.step.outputs.size() > 1 && ctx.step.outputs[1].buffer >= 0)
    throw ctx.unsupported("Dropout's mask output has no CUDA kernel");
  cpp::emit_dropout(ctx);
}

}  // namespace

OpEmitFn find_cuda_op_emitter(const ir::Node& n) {
  static const std::map<std::string, OpEmitFn> kiln_ops = {
      {"FusedElementwise", cpp::emit_fused_elementwise},
      {"FusedConv", emit_conv},
      {"NhwcMaxPool", emit_pool},
      {"NhwcAveragePool", emit_pool},
      {"NhwcGlobalAveragePool", emit_global_pool},
      {"NhwcGlobalMaxPool", emit_global_pool},
      {"FusedGemm", emit_gemm},
      {"FusedMatMul", emit_matmul},
      {"SkipLayerNorm", emit_skip_layernorm},
      {"Attention", emit_attention},
      {"NhwcDepthToSpace", cpp::emit_depth_space},
      {"NhwcSpaceToDepth", cpp::emit_depth_space},
  };
  static const std::map<std::string, OpEmitFn> onnx_ops = {
      {"Gemm", emit_gemm},
      {"MatMul", emit_matmul},
      {"Concat", cpp::emit_concat},
      {"Slice", cpp::emit_slice},
      {"Split", cpp::emit_split},
      {"Gather", emit_gather},
      {"Pad", cpp::emit_pad},
      {"DepthToSpace", cpp::emit_depth_space},
      {"SpaceToDepth", cpp::emit_depth_space},
      {"Resize", emit_resize},
      {"Upsample", emit_resize},
      {"RNN", emit_recurrent},
      {"GRU", emit_recurrent},
      {"LSTM", emit_recurrent},
      {"Dropout", emit_dropout},
      {"LayerNormalization", emit_layernorm},
      {"Softmax", emit_softmax},
      {"ReduceMean", emit_reduce},
      {"ReduceSum", emit_reduce},
      {"ReduceMax", emit_reduce},
      {"ReduceMin", emit_reduce},
  };
  const auto& table = n.domain() == "kiln" ? kiln_ops : onnx_ops;
  if (n.domain() == "kiln" || n.domain().empty()) {
    auto it = table.find(n.op_type());
    if (it != table.end()) return it->second;
  }
  if (cpp::loop_nest_supports(n)) return cpp::emit_elementwise_node;
  return nullptr;
}

}  // namespace kiln::codegen::cuda
