#include "backends/cpu/kernels.h"

#include <algorithm>

namespace kiln::backends::cpu {

void add_onednn_conv_kernels(std::vector<KernelFactory>& table);
void add_conv_concat_kernels(std::vector<KernelFactory>& table);
void add_conv_chain_kernels(std::vector<KernelFactory>& table);
void add_conv_chain_channel_kernels(std::vector<KernelFactory>& table);
void add_depthwise_kernels(std::vector<KernelFactory>& table);
void add_grouped_conv_kernels(std::vector<KernelFactory>& table);
void add_pointwise_conv_kernels(std::vector<KernelFactory>& table);
void add_prologue_conv_kernels(std::vector<KernelFactory>& table);
void add_kiln_winograd_kernels(std::vector<KernelFactory>& table);
void add_stem_conv_kernels(std::vector<KernelFactory>& table);
void add_onednn_pool_kernels(std::vector<KernelFactory>& table);
void add_nhwc_global_pool_kernels(std::vector<KernelFactory>& table);
void add_nhwc_pool_kernels(std::vector<KernelFactory>& table);
void add_elementwise_kernels(std::vector<KernelFactory>& table);
void add_gemv_kernels(std::vector<KernelFactory>& table);
void add_onednn_matmul_kernels(std::vector<KernelFactory>& table);
void add_matmul_rows_kernels(std::vector<KernelFactory>& table);
void add_softmax_kernels(std::vector<KernelFactory>& table);
void add_layernorm_kernels(std::vector<KernelFactory>& table);
void add_group_norm_kernels(std::vector<KernelFactory>& table);
void add_arg_reduce_kernels(std::vector<KernelFactory>& table);
void add_onednn_lrn_kernels(std::vector<KernelFactory>& table);
void add_lrn_kernels(std::vector<KernelFactory>& table);
void add_tile_kernels(std::vector<KernelFactory>& table);
void add_attention_kernels(std::vector<KernelFactory>& table);
void add_onnx_attention_kernels(std::vector<KernelFactory>& table);
void add_recurrent_kernels(std::vector<KernelFactory>& table);
void add_gelu_kernels(std::vector<KernelFactory>& table);
void add_transpose_kernels(std::vector<KernelFactory>& table);
void add_concat_kernels(std::vector<KernelFactory>& table);
void add_cast_kernels(std::vector<KernelFactory>& table);
void add_depth_space_kernels(std::vector<KernelFactory>& table);
void add_pad_kernels(std::vector<KernelFactory>& table);
void add_topk_kernels(std::vector<KernelFactory>& table);
void add_compare_kernels(std::vector<KernelFactory>& table);
void add_split_kernels(std::vector<KernelFactory>& table);
void add_slice_kernels(std::vector<KernelFactory>& table);
void add_gather_kernels(std::vector<KernelFactory>& table);
void add_resize_kernels(std::vector<KernelFactory>& table);
void add_reduce_kernels(std::vector<KernelFactory>& table);
void add_skip_layernorm_kernels(std::vector<KernelFactory>& table);
void add_fused_reduce_kernels(std::vector<KernelFactory>& table);
void add_channel_shuffle_kernels(std::vector<KernelFactory>& table);
void add_gemv_chain_kernels(std::vector<KernelFactory>& table);

namespace {
thread_local const std::vector<std::string>* disabled_names = nullptr;
}  // namespace

bool kernel_enabled(const std::string& name) {
  return !disabled_names || std::find(disabled_names->begin(), disabled_names->end(), name) == disabled_names->end();
}

DisabledKernels::DisabledKernels(const std::vector<std::string>* names) : previous_(disabled_names) {
  disabled_names = names;
}
DisabledKernels::~DisabledKernels() { disabled_names = previous_; }

// Kernels register here as they are written (see docs/architecture.md, "Backends").
const std::vector<KernelFactory>& kernel_factories() {
  static const std::vector<KernelFactory> table = [] {
    std::vector<KernelFactory> t;
    add_gemv_kernels(t);  // before oneDNN: the rule takes the first that accepts
    add_gemv_chain_kernels(t);
    add_depthwise_kernels(t);  // before oneDNN: faster on depthwise convs (depthwise_conv.cpp)
    add_grouped_conv_kernels(t);  // before oneDNN: groups of 2-16 channels (grouped_conv.h)
    add_pointwise_conv_kernels(t);  // before oneDNN: few pixels, weights from L3
    add_kiln_winograd_kernels(t);
    add_stem_conv_kernels(t);  // before oneDNN: convs on 1-8 input channels (stems)
    add_onednn_conv_kernels(t);
    add_conv_concat_kernels(t);
    add_conv_chain_channel_kernels(t);  // before the banded chain: where a team splits channels
    add_conv_chain_kernels(t);
    add_prologue_conv_kernels(t);
    add_nhwc_global_pool_kernels(t);  // before oneDNN: splits pixels, not channels
    add_nhwc_pool_kernels(t);
    add_onednn_pool_kernels(t);
    add_elementwise_kernels(t);
    add_matmul_rows_kernels(t);  // before oneDNN: constant weights, threads in a held team
    add_onednn_matmul_kernels(t);
    add_softmax_kernels(t);
    add_layernorm_kernels(t);
    add_group_norm_kernels(t);
    add_arg_reduce_kernels(t);
    add_onednn_lrn_kernels(t);
    add_lrn_kernels(t);
    add_tile_kernels(t);
    add_attention_kernels(t);
    add_onnx_attention_kernels(t);
    add_recurrent_kernels(t);
    add_gelu_kernels(t);
    add_transpose_kernels(t);
    add_concat_kernels(t);
    add_cast_kernels(t);
    add_depth_space_kernels(t);
    add_pad_kernels(t);
    add_topk_kernels(t);
    add_compare_kernels(t);
    add_split_kernels(t);
    add_slice_kernels(t);
    add_gather_kernels(t);
    add_resize_kernels(t);
    add_reduce_kernels(t);
    add_skip_layernorm_kernels(t);
    add_fused_reduce_kernels(t);
    add_channel_shuffle_kernels(t);
    return t;
  }();
  return table;
}

}  // namespace kiln::backends::cpu
