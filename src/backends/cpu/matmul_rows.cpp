// MatMul and kiln.FusedMatMul with constant 2-D weights as kiln's 1x1-conv kernel on rows
// (PointwiseRows): A's leading dims are the rows, B^T the kernel's [N][K] weights, the bias and
// activation its epilogue. The linear layers of a transformer (bert_tiny's 128 x 256 x 256 and
// x 1024) then thread through parallel_for and run inside a held team (parallel.h) instead of
// starting oneDNN's OpenMP regions.
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/activation_apply.h"
#include "backends/cpu/cache_size.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/onednn_common.h"
#include "backends/cpu/pointwise_conv.h"
#include "backends/cpu/simd.h"

namespace kiln::backends::cpu {

namespace {

// K and N of B ([K, N]).
std::optional<std::pair<int64_t, int64_t>> rows_dims(const ir::Node& node) {
  const ir::Value* b = node.num_inputs() > 1 ? node.input(1) : nullptr;
  if (!b || !b->type.is_static() || b->type.rank() != 2) return std::nullopt;
  const auto bd = b->type.static_dims();
  if (bd[0] < 1 || bd[1] < 1) return std::nullopt;
  return std::make_pair(bd[0], bd[1]);
}

// The rows of A (its leading dims), or 0 when they are not static.
int64_t rows_of(const ir::Node& node) {
  const ir::Value* a = node.num_inputs() > 0 ? node.input(0) : nullptr;
  if (!a || !a->type.is_static() || a->type.rank() < 2) return 0;
  const auto ad = a->type.static_dims();
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < ad.size(); ++i) rows *= ad[i];
  return rows;
}

// The rule's parameters for a team of `threads`: the pointwise rule with its rows split
// (kRowsSplitMinWeightBytes), or its outputs wherever they share out where the weights dominate
// (matmul_rows_split_outputs).
std::map<std::string, plan::ParamValue> matmul_rows_params(const ir::Node& node, int threads) {
  const auto kn = rows_dims(node);
  if (!kn) return {};
  const auto [K, N] = *kn;
  const bool outputs = matmul_rows_split_outputs(rows_of(node), K, N, threads);
  return pointwise_params(pointwise_rule(K, N, threads, outputs ? 0 : kRowsSplitMinWeightBytes));
}

std::unique_ptr<Kernel> make_matmul_rows(const ir::Node& node, const plan::KernelSpec& spec) {
  const auto kn = rows_dims(node);
  if (!kn) return nullptr;
  const auto choice = pointwise_choice_of(spec, kn->first, kn->second);
  if (!choice) return nullptr;
  const int threads = spec.threads;
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
  return make_pointwise_rows_kernel(rows, K, N, RowWeights(b->constant().data<float>(), /*k_major=*/true),
                                    bias ? bias->constant().data<float>() : nullptr, *act, threads, *choice);
}

}  // namespace

bool matmul_rows_split_outputs(int64_t rows, int64_t K, int64_t N, int threads) {
  if (threads < 2 || rows < 1) return false;
  const double weights = 4.0 * static_cast<double>(K) * static_cast<double>(N);
  const double activations = 4.0 * static_cast<double>(rows) * static_cast<double>(K + N);
  return weights > static_cast<double>(l2_cache_bytes()) && weights >= 2 * activations;
}

void add_matmul_rows_kernels(std::vector<KernelFactory>& table) {
  const auto choose = matmul_rows_params;
  const auto choices = pointwise_lister(rows_dims);
  for (const char* domain : {"", "kiln"})
    table.push_back({.domain = domain,
                     .op = std::string(domain).empty() ? "MatMul" : "FusedMatMul",
                     .make = nullptr,
                     .name = "kiln_matmul_rows",
                     .choose = choose,
                     .make_spec = make_matmul_rows,
                     .choices = choices,
                     .thread_params = {"depth", "split"}});
}

}  // namespace kiln::backends::cpu
