// ReduceSum, ReduceMean, ReduceMax and ReduceMin over any set of axes, float32. Unit axes are
// dropped and adjacent axes with the same role merged, which turns the common reductions into
// [outer, R, inner] with R reduced: inner == 1 reduces contiguous rows (lane-parallel partial
// results), inner > 1 adds whole rows into an accumulator row. Patterns with two separate
// reduced groups ([R, K, R]) run on the reference kernel. Axes follow src/ops/reduce.cpp: an
// attribute before opset 13 (ReduceSum) or 18 (the others), a constant input from then on.
//
// Accumulation is in float (the reference kernel uses double), kept accurate by partial sums:
// 16 lanes along a row, blocks of kBlockRows rows down a column.
#include <algorithm>
#include <map>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>

#include "backends/cpu/kernels.h"
#include "backends/cpu/node_args.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/reduce_spec.h"
#include "backends/cpu/simd.h"
#include "backends/cpu/simd_reduce.h"

namespace kiln::backends::cpu {

namespace {

using Kind = ReduceKind;

constexpr int64_t kParallelBytes = 256 << 10;
constexpr int64_t kCols = 256;       // accumulator columns per work item (stay in L1)
constexpr int64_t kBlockRows = 64;   // rows summed into a block before it joins the total

KILN_SIMD void reduce_rows(const float* x, float* y, int64_t rows, int64_t n, Kind kind, float scale) {
  for (int64_t o = 0; o < rows; ++o) {
    const float* row = x + o * n;
    if (kind == Kind::Sum || kind == Kind::Mean) y[o] = simd::sum(row, n) * scale;
    else y[o] = simd::extreme(row, n, kind == Kind::Max);
  }
}

// y[c] = reduction over r < n of x[r * stride + c], for c < w (w <= kCols).
KILN_SIMD void reduce_columns(const float* x, float* y, int64_t n, int64_t stride, int64_t w, Kind kind, float scale) {
  if (kind == Kind::Max || kind == Kind::Min) {
    const bool is_max = kind == Kind::Max;
    std::memcpy(y, x, static_cast<size_t>(w) * sizeof(float));
    for (int64_t r = 1; r < n; ++r) {
      const float* row = x + r * stride;
      for (int64_t c = 0; c < w; ++c) y[c] = simd::pick(y[c], row[c], is_max);
    }
    return;
  }
  float block[kCols];
  std::fill(y, y + w, 0.f);
  for (int64_t r0 = 0; r0 < n; r0 += kBlockRows) {
    const int64_t re = std::min(n, r0 + kBlockRows);
    std::memcpy(block, x + r0 * stride, static_cast<size_t>(w) * sizeof(float));
    for (int64_t r = r0 + 1; r < re; ++r) {
      const float* row = x + r * stride;
      for (int64_t c = 0; c < w; ++c) block[c] += row[c];
    }
    for (int64_t c = 0; c < w; ++c) y[c] += block[c];
  }
  for (int64_t c = 0; c < w; ++c) y[c] *= scale;
}

class ReduceKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  // outer x n x inner with n reduced; n == 0 means nothing is reduced (a copy).
  ReduceKernel(Kind kind, int64_t outer, int64_t n, int64_t inner, int threads)
      : kind_(kind), outer_(outer), n_(n), inner_(inner), threads_(threads) {}

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    const float* x = inputs[0]->data<float>();
    float* y = outputs[0]->data<float>();
    if (n_ == 0) {
      std::memcpy(y, x, outputs[0]->nbytes());
      return;
    }
    const float scale = kind_ == Kind::Mean ? 1.f / static_cast<float>(n_) : 1.f;
    const int threads = outer_ * n_ * inner_ * 4 >= kParallelBytes ? threads_ : 1;
    const int64_t n = n_, inner = inner_;
    const Kind kind = kind_;
    if (inner == 1) {
      parallel_for(outer_, threads, [&](int64_t b, int64_t e) { reduce_rows(x + b * n, y + b, e - b, n, kind, scale); });
      return;
    }
    const int64_t chunks = (inner + kCols - 1) / kCols;
    parallel_for(outer_ * chunks, threads, [&](int64_t b, int64_t e) {
      for (int64_t item = b; item < e; ++item) {
        const int64_t o = item / chunks, c0 = item % chunks * kCols, w = std::min(kCols, inner - c0);
        reduce_columns(x + o * n * inner + c0, y + o * inner + c0, n, inner, w, kind, scale);
      }
    });
  }

 private:
  Kind kind_;
  int64_t outer_, n_, inner_;
  int threads_;
};

std::unique_ptr<Kernel> make_reduce(const ir::Node& node, int threads) {
  auto spec = reduce_spec(node);
  if (!spec) return nullptr;
  return std::make_unique<ReduceKernel>(spec->kind, spec->outer, spec->n, spec->inner, threads);
}

}  // namespace

std::optional<ReduceSpec> reduce_spec(const ir::Node& node) {
  static const std::map<std::string, std::pair<ReduceKind, int64_t>> ops = {
      {"ReduceSum", {ReduceKind::Sum, 13}}, {"ReduceMean", {ReduceKind::Mean, 18}},
      {"ReduceMax", {ReduceKind::Max, 18}}, {"ReduceMin", {ReduceKind::Min, 18}}};
  auto op = ops.find(node.op_type());
  if (!node.domain().empty() || op == ops.end()) return std::nullopt;
  const auto [kind, axes_input_since] = op->second;
  if (node.num_inputs() < 1 || node.num_inputs() > 2 || node.num_outputs() != 1 || !node.output(0) || !node.owner())
    return std::nullopt;
  const ir::Value* x = node.input(0);
  const ir::Value* y = node.output(0);
  if (!plain_elem_size(x) || !plain_elem_size(y) || x->type.dtype != DType::Float || y->type.dtype != DType::Float)
    return std::nullopt;
  std::vector<int64_t> axes;
  if (node.owner()->opset("") >= axes_input_since) {
    if (node.has_attr("axes")) return std::nullopt;
    if (node.has_input(1)) {
      auto a = constant_ints(node, 1);
      if (!a) return std::nullopt;
      axes = *a;
    }
  } else {
    if (node.has_input(1)) return std::nullopt;
    axes = node.attr_ints("axes");
  }
  const std::vector<int64_t> xd = x->type.static_dims();
  const int64_t rank = static_cast<int64_t>(xd.size());
  const bool keep = node.attr_int("keepdims", 1) != 0;
  const bool noop = axes.empty() && node.attr_int("noop_with_empty_axes", 0) != 0;
  std::vector<bool> reduced(rank, axes.empty() && !noop);
  for (int64_t a : axes) {
    auto k = axis_in(a, rank);
    if (!k) return std::nullopt;
    reduced[*k] = true;
  }
  std::vector<int64_t> want;
  for (int64_t k = 0; k < rank; ++k) {
    if (!reduced[k]) want.push_back(xd[k]);
    else if (keep) want.push_back(1);
  }
  if (noop) want = xd;
  if (y->type.static_dims() != want || dims_product(xd, 0, xd.size()) == 0) return std::nullopt;
  // Collapse to groups of kept (K) and reduced (R) axes; at most K R K is handled.
  std::vector<std::pair<int64_t, bool>> groups;
  for (int64_t k = 0; k < rank; ++k) {
    if (xd[k] == 1) continue;
    if (!groups.empty() && groups.back().second == reduced[k]) groups.back().first *= xd[k];
    else groups.push_back({xd[k], reduced[k]});
  }
  int64_t outer = 1, n = 0, inner = 1;
  size_t g = 0;
  if (g < groups.size() && !groups[g].second) outer = groups[g++].first;
  if (g < groups.size()) n = groups[g++].first;
  if (g < groups.size()) inner = groups[g++].first;
  if (g != groups.size()) return std::nullopt;
  if (n == 0) inner = outer, outer = 1;  // nothing reduced: the kernel copies
  return ReduceSpec{kind, outer, n, inner, std::move(reduced)};
}

void add_reduce_kernels(std::vector<KernelFactory>& table) {
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"}) table.push_back({"", op, make_reduce});
}

}  // namespace kiln::backends::cpu
