// Slice with compile-time starts/ends/axes/steps (constant inputs from opset 10, attributes
// before) on any plain element type: the sliced region is a strided view of the input, copied
// by StridedCopy (a memcpy per contiguous run when the innermost steps are 1). Runtime starts
// or ends are declined.
#include <algorithm>
#include <limits>
#include <memory>

#include "backends/cpu/kernels.h"
#include "backends/cpu/node_args.h"
#include "backends/cpu/strided_copy.h"

namespace kiln::backends::cpu {

namespace {

// numpy's clamping of one axis' slice (as src/ops/data_movement.cpp); returns the length.
int64_t clamp_slice(int64_t& start, int64_t end, int64_t step, int64_t dim) {
  if (start < 0) start = start < -dim ? -1 : start + dim;
  if (end < 0) end = end < -dim ? -1 : end + dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    return end > start ? (end - start - 1) / step + 1 : 0;  // no overflow with huge steps
  }
  start = std::clamp<int64_t>(start, -1, dim - 1);
  end = std::clamp<int64_t>(end, -1, dim - 1);
  return start > end ? (start - end - 1) / -step + 1 : 0;
}

std::unique_ptr<Kernel> make_slice(const ir::Node& node, int threads) {
  if (node.num_inputs() < 1 || node.num_outputs() != 1 || !node.output(0) || !node.owner()) return nullptr;
  const ir::Value* x = node.input(0);
  const ir::Value* y = node.output(0);
  const size_t es = plain_elem_size(x);
  if (!StridedCopy::supports(es) || plain_elem_size(y) != es || x->type.dtype != y->type.dtype) return nullptr;
  std::vector<int64_t> starts, ends, axes, steps;
  if (node.owner()->opset("") < 10) {
    if (node.num_inputs() != 1) return nullptr;
    starts = node.attr_ints("starts");
    ends = node.attr_ints("ends");
    axes = node.attr_ints("axes");
  } else {
    auto s = constant_ints(node, 1), e = constant_ints(node, 2);
    if (!s || !e) return nullptr;
    starts = *s;
    ends = *e;
    for (int i : {3, 4}) {
      if (!node.has_input(i)) continue;
      auto v = constant_ints(node, i);
      if (!v) return nullptr;
      (i == 3 ? axes : steps) = *v;
    }
  }
  const size_t n = starts.size();
  if (axes.empty())
    for (size_t i = 0; i < n; ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(n, 1);
  if (ends.size() != n || axes.size() != n || steps.size() != n) return nullptr;

  const std::vector<int64_t> xd = x->type.static_dims();
  const int64_t rank = static_cast<int64_t>(xd.size());
  std::vector<int64_t> dims = xd, strides(rank, 1);
  for (int64_t k = rank - 1; k > 0; --k) strides[k - 1] = strides[k] * xd[k];
  std::vector<bool> seen(rank, false);
  int64_t base = 0;
  for (size_t i = 0; i < n; ++i) {
    auto a = axis_in(axes[i], rank);
    if (!a || seen[*a] || steps[i] == 0 || steps[i] == std::numeric_limits<int64_t>::min()) return nullptr;
    seen[*a] = true;
    int64_t start = starts[i];
    dims[*a] = clamp_slice(start, ends[i], steps[i], xd[*a]);
    if (dims[*a] > 0) base += start * strides[*a];
    // A step only matters when the axis keeps two or more elements (then |step| < extent).
    if (dims[*a] > 1) strides[*a] *= steps[i];
  }
  if (y->type.static_dims() != dims) return nullptr;
  return std::make_unique<StridedCopyKernel>(StridedCopy(dims, strides, base, es, threads));
}

}  // namespace

void add_slice_kernels(std::vector<KernelFactory>& table) { table.push_back({"", "Slice", make_slice}); }

}  // namespace kiln::backends::cpu
