// Pad's arguments: the pads over every axis (from the attribute before opset 11, the constant
// input after, spread over `axes` from opset 18) and the mode. Shape inference, the reference
// kernel and code generation read a Pad through these.
#pragma once
#include <kiln/error.h>
#include <kiln/tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

// Input coordinate for output coordinate o on one axis of extent `dim` padded by `begin` in
// front, or -1 for the constant fill.
inline int64_t pad_source(int64_t o, int64_t begin, int64_t dim, const std::string& mode) {
  int64_t c = o - begin;
  if (c >= 0 && c < dim) return c;
  if (mode == "constant" || dim == 0) return -1;
  if (mode == "edge") return c < 0 ? 0 : dim - 1;
  if (mode == "wrap") return (c % dim + dim) % dim;  // opset 19: circular
  if (dim == 1) return 0;
  const int64_t period = 2 * (dim - 1);  // reflect without repeating the edge
  c %= period;
  if (c < 0) c += period;
  return c < dim ? c : period - c;
}

struct PadArgs {
  std::vector<int64_t> pads;  // [begin_0..begin_{r-1}, end_0..end_{r-1}] over all axes
  std::string mode;
};

template <typename GetInput>
bool pad_args(const ir::Node& node, int64_t opset, int64_t rank, GetInput&& get, PadArgs& p) {
  p.mode = node.attr_string("mode", "constant");
  if (p.mode != "constant" && p.mode != "reflect" && p.mode != "edge" && !(p.mode == "wrap" && opset >= 19))
    throw UnsupportedError(node.describe() + ": Pad mode '" + p.mode + "' is not supported");
  std::vector<int64_t> raw;
  std::vector<int64_t> axes;
  if (opset < 11) {
    raw = node.attr_ints(opset < 2 ? "paddings" : "pads");
  } else {
    const Tensor* t = get(1);
    if (!t) return false;
    raw = t->to_int64_vector();
    if (opset >= 18 && node.has_input(3)) {
      const Tensor* ax = get(3);
      if (!ax) return false;
      axes = normalize_axes(ax->to_int64_vector(), rank, node);
    }
  }
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  const size_t n = axes.size();
  if (raw.size() != 2 * n)
    throw Error(node.describe() + ": pads has " + std::to_string(raw.size()) + " entries, expected " + std::to_string(2 * n));
  p.pads.assign(2 * rank, 0);
  for (size_t i = 0; i < n; ++i) {
    p.pads[axes[i]] = raw[i];
    p.pads[axes[i] + rank] = raw[i + n];
  }
  return true;
}

}  // namespace kiln::ops
