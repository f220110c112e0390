// ArgMax and ArgMin of float32 over one axis: the tensor as [outer, n, inner], the reduced axis
// walked row by row so that each step compares a contiguous run of `inner` values (a
// segmentation head's ArgMax over NCHW channels compares whole planes), best values and indices
// kept in a chunk of registers-sized buffers; the team splits the (outer, inner chunk) pairs.
// The comparisons are the reference kernel's (src/ops/reduce.cpp): strict unless
// select_last_index, so NaN is never taken over an earlier value.
#include <algorithm>
#include <memory>

#include "backends/cpu/kernels.h"
#include "backends/cpu/onednn_common.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/simd.h"

namespace kiln::backends::cpu {

namespace {

constexpr int64_t kChunk = 1024;  // inner values per work item: 4 KiB of best values in L1

// One step: where row[i] beats best[i], take it and index j.
template <bool IsMax, bool Last>
KILN_SIMD void arg_step(const float* row, float* best, int32_t* idx, int64_t n, int32_t j) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = row[i];
    const bool better = IsMax ? (Last ? v >= best[i] : v > best[i]) : (Last ? v <= best[i] : v < best[i]);
    best[i] = better ? v : best[i];
    idx[i] = better ? j : idx[i];
  }
}

class ArgReduceKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  ArgReduceKernel(int64_t outer, int64_t n, int64_t inner, bool is_max, bool last, int threads)
      : outer_(outer), n_(n), inner_(inner), is_max_(is_max), last_(last),
        team_(product_team(outer * n * inner, 0, threads)) {}

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const float* x = inputs[0]->data<float>();
    int64_t* y = outputs[0]->data<int64_t>();
    const int64_t chunks = (inner_ + kChunk - 1) / kChunk;
    parallel_for(outer_ * chunks, team_, [&](int64_t w0, int64_t w1) {
      alignas(64) float best[kChunk];
      alignas(64) int32_t idx[kChunk];
      for (int64_t w = w0; w < w1; ++w) {
        const int64_t o = w / chunks, c0 = w % chunks * kChunk, len = std::min(kChunk, inner_ - c0);
        const float* base = x + o * n_ * inner_ + c0;
        std::copy(base, base + len, best);
        std::fill(idx, idx + len, 0);
        for (int64_t j = 1; j < n_; ++j) {
          const float* row = base + j * inner_;
          const int32_t jj = static_cast<int32_t>(j);
          if (is_max_) last_ ? arg_step<true, true>(row, best, idx, len, jj) : arg_step<true, false>(row, best, idx, len, jj);
          else last_ ? arg_step<false, true>(row, best, idx, len, jj) : arg_step<false, false>(row, best, idx, len, jj);
        }
        std::copy(idx, idx + len, y + o * inner_ + c0);
      }
    });
  }

 private:
  int64_t outer_, n_, inner_;
  bool is_max_, last_;
  int team_;
};

std::unique_ptr<Kernel> make_arg_reduce(const ir::Node& node, int threads) {
  if (node.num_inputs() != 1 || node.num_outputs() != 1) return nullptr;
  const ir::Value* x = node.input(0);
  const ir::Value* y = node.output(0);
  if (!dnnl_util::static_float(x) || !y || y->type.dtype != DType::Int64 || !y->type.is_static()) return nullptr;
  const std::vector<int64_t> d = x->type.static_dims();
  const int64_t rank = static_cast<int64_t>(d.size());
  int64_t axis = node.attr_int("axis", 0);
  if (rank == 0 || axis < -rank || axis >= rank) return nullptr;
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? outer : inner) *= i == axis ? 1 : d[static_cast<size_t>(i)];
  const int64_t n = d[static_cast<size_t>(axis)];
  if (n < 1 || n > (int64_t{1} << 31) - 1 || outer * inner == 0) return nullptr;
  return std::make_unique<ArgReduceKernel>(outer, n, inner, node.op_type() == "ArgMax",
                                           node.attr_int("select_last_index", 0) != 0, threads);
}

}  // namespace

void add_arg_reduce_kernels(std::vector<KernelFactory>& table) {
  table.push_back({"", "ArgMax", make_arg_reduce});
  table.push_back({"", "ArgMin", make_arg_reduce});
}

}  // namespace kiln::backends::cpu
