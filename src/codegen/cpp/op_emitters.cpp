#include "codegen/cpp/op_emitters.h"

#include <map>
#include <string>

#include "codegen/cpp/loop_nest.h"

namespace kiln::codegen::cpp {

OpEmitFn find_op_emitter(const ir::Node& n) {
  static const std::map<std::string, OpEmitFn> kiln_ops = {
      {"FusedElementwise", emit_fused_elementwise},
      {"FusedReduce", emit_fused_reduce},
      {"FusedConv", emit_conv},
      {"ConvChain", emit_conv_chain},
      {"NhwcMaxPool", emit_pool},
      {"NhwcAveragePool", emit_pool},
      {"NhwcGlobalAveragePool", emit_global_pool},
      {"NhwcGlobalMaxPool", emit_global_pool},
      {"NhwcConvTranspose", emit_conv_transpose},
      {"NhwcInstanceNormalization", emit_group_norm},
      {"NhwcGroupNormalization", emit_group_norm},
      {"FusedGemm", emit_gemm},
      {"FusedMatMul", emit_matmul},
      {"SkipLayerNorm", emit_skip_layernorm},
      {"Attention", emit_attention},
      {"NhwcDepthToSpace", emit_depth_space},
      {"NhwcSpaceToDepth", emit_depth_space},
  };
  static const std::map<std::string, OpEmitFn> onnx_ops = {
      {"Conv", emit_conv},
      {"ConvTranspose", emit_conv_transpose},
      {"MaxPool", emit_pool_nd},
      {"AveragePool", emit_pool_nd},
      {"GlobalAveragePool", emit_global_pool_nd},
      {"GlobalMaxPool", emit_global_pool_nd},
      {"Gemm", emit_gemm},
      {"MatMul", emit_matmul},
      {"Concat", emit_concat},
      {"Slice", emit_slice},
      {"Split", emit_split},
      {"Gather", emit_gather},
      {"GatherND", emit_gather_nd},
      {"Pad", emit_pad},
      {"Tile", emit_tile},
      {"DepthToSpace", emit_depth_space},
      {"SpaceToDepth", emit_depth_space},
      {"Dropout", emit_dropout},
      {"Resize", emit_resize},
      {"Upsample", emit_resize},
      {"RNN", emit_recurrent},
      {"GRU", emit_recurrent},
      {"LSTM", emit_recurrent},
      {"LayerNormalization", emit_layernorm},
      {"Softmax", emit_softmax},
      {"InstanceNormalization", emit_group_norm},
      {"GroupNormalization", emit_group_norm},
      {"LRN", emit_lrn},
      {"ArgMax", emit_arg_reduce},
      {"ArgMin", emit_arg_reduce},
      {"TopK", emit_topk},
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
  if (loop_nest_supports(n)) return emit_elementwise_node;
  return nullptr;
}

}  // namespace kiln::codegen::cpp
