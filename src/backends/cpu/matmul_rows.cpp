// MatMul and kiln.FusedMatMul with constant 2-D weights as kiln's 1x1-conv kernel on rows
// (PointwiseRows): A's leading dims are the rows, B^T the kernel's [N][K] weights, the bias and
// activation its epilogue. The linear layers of a transformer (bert_tiny's 128 x 256 x 256 and
// x 1024) then thread through parallel_for and run inside a held team (parallel.h) instead of
// starting oneDNN's OpenMP regions.
#include <vector>

#include "backends/cpu/activation_apply.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/onednn_common.h"
#include "backends/cpu/pointwise_conv.h"
#include "backends/cpu/simd.h"

namespace kiln::backends::cpu {

namespace {

std::unique_ptr<Kernel> make_matmul_rows(const ir::Node& node, int threads) {
  if (!has_avx512() || node.num_outputs() != 1) return nullptr;
  const bool fused = node.domain() == "kiln";
  if (node.num_inputs() != 2 && !(fused && node.num_inputs() == 3)) return nullptr;
  const ir::Value *a = node.input(0), *b = node.input(1), *y = node.output(0);
  const ir::Value* bias = node.num_inputs() == 3 ? node.input(2) : nullptr;
  if (!dnnl_util::static_float(a) || !dnnl_util::static_float(b) || !dnnl_util::static_float(y) || !b->is_constant())
    return nullptr;
  if (bias && (!dnnl_util::static_float(bias) || !bias->is_constant())) return nullptr;
  const auto ad = a->type.static_dims(), bd = b->type.static_dims(), yd = y->type.static_dims();
  if (ad.size() < 2 || bd.size() != 2 || yd.size() != ad.size()) return nullptr;
  const int64_t K = bd[0], N = bd[1];
  if (ad.back() != K || yd.back() != N || K < 1 || N < 1) return nullptr;
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < ad.size(); ++i) {
    if (yd[i] != ad[i]) return nullptr;
    rows *= ad[i];
  }
  if (rows < 2) return nullptr;  // one row: a matrix-vector product (gemv.cpp)
  if (bias && bias->type.static_dims() != std::vector<int64_t>{N}) return nullptr;
  const std::optional<ops::Activation> act = epilogue_of(node);
  if (!act) return nullptr;
  const float* w = b->constant().data<float>();
  std::vector<float> wt(static_cast<size_t>(N * K));  // [N][K], as a 1x1 conv's weights
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) wt[n * K + k] = w[k * N + n];
  return make_pointwise_rows_kernel(rows, K, N, wt.data(), bias ? bias->constant().data<float>() : nullptr, *act,
                                    threads);
}

}  // namespace

void add_matmul_rows_kernels(std::vector<KernelFactory>& table) {
  table.push_back({"", "MatMul", make_matmul_rows, "kiln_matmul_rows"});
  table.push_back({"kiln", "FusedMatMul", make_matmul_rows, "kiln_matmul_rows"});
}

}  // namespace kiln::backends::cpu
