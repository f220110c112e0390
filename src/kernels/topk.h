// TopK along one axis for kiln's CPU backend and emitted code: x viewed as [outer][n][inner], each
// of the outer x inner rows (stride inner) scanned once against the worst of the k best so far
// (a heap), so most elements cost one comparison, and the k kept sorted at the end. The order is
// the reference kernel's: NaN counts as the largest value, equal values keep the lower index
// first. values and indices are [outer][k][inner]; either may be null (an output nobody reads).
// The caller splits the rows between threads.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace kiln_kernels {

struct TopKShape {
  int64_t outer, n, inner, k;
  bool largest;
};

// Whether (a, ia) comes before (b, ib) in TopK's output.
inline bool topk_before(bool largest, float a, int64_t ia, float b, int64_t ib) {
  const bool na = std::isnan(a), nb = std::isnan(b);
  if (largest) {
    if (na != nb) return na;
    if (a != b && !na) return a > b;
  } else {
    if (na != nb) return nb;
    if (a != b && !na) return a < b;
  }
  return ia < ib;
}

// Rows [r0, r1) of the outer x inner rows.
inline void topk_rows(const TopKShape& s, const float* x, float* values, int64_t* indices, int64_t r0, int64_t r1) {
  std::vector<std::pair<float, int64_t>> heap;
  heap.reserve(static_cast<size_t>(s.k));
  // Ordered so that the heap's front is the worst kept (topk_before puts better ones first).
  auto worse_first = [&](const std::pair<float, int64_t>& a, const std::pair<float, int64_t>& b) {
    return topk_before(s.largest, a.first, a.second, b.first, b.second);
  };
  for (int64_t row = r0; row < r1; ++row) {
    const int64_t o = row / s.inner, i = row % s.inner;
    const float* src = x + o * s.n * s.inner + i;
    heap.clear();
    if (s.k > 0) {
      for (int64_t j = 0; j < s.n; ++j) {
        const float v = src[j * s.inner];
        if (static_cast<int64_t>(heap.size()) < s.k) {
          heap.emplace_back(v, j);
          std::push_heap(heap.begin(), heap.end(), worse_first);
        } else if (topk_before(s.largest, v, j, heap.front().first, heap.front().second)) {
          std::pop_heap(heap.begin(), heap.end(), worse_first);
          heap.back() = {v, j};
          std::push_heap(heap.begin(), heap.end(), worse_first);
        }
      }
    }
    std::sort(heap.begin(), heap.end(), worse_first);
    for (int64_t j = 0; j < s.k; ++j) {
      const int64_t at = (o * s.k + j) * s.inner + i;
      if (values) values[at] = heap[static_cast<size_t>(j)].first;
      if (indices) indices[at] = heap[static_cast<size_t>(j)].second;
    }
  }
}

}  // namespace kiln_kernels
