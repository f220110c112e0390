// Slice's arguments: starts, ends, axes and steps from attributes (opset < 10) or constant
// inputs, clamped by numpy's rules. Shape inference, the reference kernel and code generation
// read a Slice through these.
#pragma once
#include <kiln/error.h>
#include <kiln/tensor.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "ir/graph.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

struct SliceArgs {
  std::vector<int64_t> starts, ends, axes, steps;
};

// Gathers starts/ends/axes/steps from attributes (opset < 10) or inputs. Returns false when an
// input is present but its value is unknown (inference only).
template <typename GetInput>
bool slice_args(const ir::Node& node, int64_t opset, GetInput&& get, SliceArgs& a) {
  if (opset < 10) {
    a.starts = node.attr_ints("starts");
    a.ends = node.attr_ints("ends");
    a.axes = node.attr_ints("axes");
  } else {
    const Tensor* s = get(1);
    const Tensor* e = get(2);
    if (!s || !e) return false;
    a.starts = s->to_int64_vector();
    a.ends = e->to_int64_vector();
    if (node.has_input(3)) {
      const Tensor* ax = get(3);
      if (!ax) return false;
      a.axes = ax->to_int64_vector();
    }
    if (node.has_input(4)) {
      const Tensor* st = get(4);
      if (!st) return false;
      a.steps = st->to_int64_vector();
    }
  }
  const size_t n = a.starts.size();
  if (a.ends.size() != n) throw Error(node.describe() + ": starts and ends have different lengths");
  if (a.axes.empty())
    for (size_t i = 0; i < n; ++i) a.axes.push_back(static_cast<int64_t>(i));
  if (a.steps.empty()) a.steps.assign(n, 1);
  if (a.axes.size() != n || a.steps.size() != n)
    throw Error(node.describe() + ": starts, ends, axes and steps must have the same length");
  return true;
}

// Clamps one axis' slice (numpy rules) to an extent; returns the output length.
inline int64_t clamp_slice(int64_t& start, int64_t end, int64_t step, int64_t dim, const ir::Node& node) {
  if (step == 0) throw Error(node.describe() + ": slice step cannot be 0");
  if (start < 0) start = start < -dim ? -1 : start + dim;  // written to avoid overflow with INT64_MIN
  if (end < 0) end = end < -dim ? -1 : end + dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    // Written so huge steps (INT64_MAX) cannot overflow: ceil(n / step) = (n - 1) / step + 1.
    return end > start ? (end - start - 1) / step + 1 : 0;
  }
  start = std::clamp<int64_t>(start, -1, dim - 1);
  end = std::clamp<int64_t>(end, -1, dim - 1);
  const int64_t mag = step == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -step;
  return start > end ? (start - end - 1) / mag + 1 : 0;
}

inline std::vector<int64_t> slice_axes(const SliceArgs& a, int64_t rank, const ir::Node& node) {
  std::vector<int64_t> axes = normalize_axes(a.axes, rank, node);
  std::vector<bool> seen(rank, false);
  for (int64_t x : axes) {
    if (seen[x]) throw Error(node.describe() + ": axes contain duplicates");
    seen[x] = true;
  }
  return axes;
}

}  // namespace kiln::ops
