// The schedule of a conv chain (kiln.ConvChain: convs and pools computed band by band, each
// intermediate tensor held only as a window of the rows its consumer still needs): which rows of
// which layer each step computes, where in the windows they go, and when a window's rows move.
// kiln's CPU backend plans its chains with it when it creates their kernels, and the C++ target
// at compile time, writing the steps into the code: one schedule for both.
//
// The last layer's output is computed a band of rows at a time; for each band, every earlier
// layer computes only the rows the band needs that its window does not hold yet. A window
// between two layers that read their input rows where they are (kiln's kernels) is a ring: row r
// in slot r % capacity, so a band moving on overwrites the rows no longer needed. Other windows
// (around a oneDNN primitive, which reads and writes contiguous rows) move the rows two bands
// share to their front. With several threads each runs the whole chain on its own share of the
// output rows (recomputing the few rows where two shares meet), in windows of its own.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <utility>
#include <vector>

#include "thread_scratch.h"

namespace kiln_kernels {

// One layer's rows: H input rows, OH output rows of row_floats floats, a window KH rows tall
// (dilation included), stride SH, top pad PT.
struct ChainLayer {
  int64_t H = 0, OH = 0, KH = 1, SH = 1, PT = 0, row_floats = 0;
  bool in_place = false;   // reads its input rows where they are, ring or not (kiln's kernels)
  bool pointwise = false;  // reads exactly its output rows, as one contiguous run (a 1x1 conv)
};

// A step: layer `layer` computes its output rows [row, row + rows), reading its input from
// src_offset rows into its source (the chain's input for layer 0, else window `layer`) and
// writing dst_offset rows into its destination (the chain's output for the last layer, else
// window layer + 1); src_row0 is the input row at the source window's start (not a ring). The
// input rows it reads are in_rows, with pad_top and pad_bottom rows of zero padding around them.
// Or (layer < 0) window `window` moves `rows` rows forward by `shift` rows.
struct ChainStep {
  int layer = -1;
  int window = 0;
  int64_t row = 0, rows = 0;
  int64_t src_offset = 0, dst_offset = 0, src_row0 = 0;
  int64_t in_rows = 0, pad_top = 0, pad_bottom = 0;
  int64_t shift = 0;
};

// The calling thread's buffer for a chain's windows, at least `floats` long, 64-byte aligned:
// the thread's scratch buffer (thread_scratch.h), shared with the other kernels that take one.
inline float* chain_windows(int64_t floats) {
  void* p = thread_scratch(static_cast<size_t>(floats) * sizeof(float));
  if (!p) std::abort();  // out of memory for a few MiB of windows: nothing sensible is left to do
  return static_cast<float*>(p);
}

class ChainSchedule {
 public:
  // Band height: the most output rows whose windows fit `budget` bytes, or `band_rows` > 0.
  // The output rows are split into min(threads, output rows) parts.
  ChainSchedule(std::vector<ChainLayer> layers, int threads, int64_t band_rows, int64_t budget)
      : layers_(std::move(layers)) {
    const int n = static_cast<int>(layers_.size());
    const int64_t out_rows = layers_.back().OH;
    for (int64_t r = 1; r <= out_rows; ++r) {
      if (band_rows > 0 ? r > band_rows : window_bytes(r) > budget) break;
      band_ = r;
    }
    capacity_.assign(n, 0);
    ring_.assign(n, false);
    const int parts = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, out_rows)));
    for (int t = 0; t < parts; ++t) parts_.push_back(plan(out_rows * t / parts, out_rows * (t + 1) / parts));
    // The windows' sizes known, those between two in-place layers become rings and the steps
    // are planned again (the same rows live at each step, so the same sizes).
    bool rings = false;
    for (int t = 1; t < n; ++t) rings |= ring_[t] = layers_[t - 1].in_place && layers_[t].in_place;
    if (rings) {
      parts_.clear();
      for (int t = 0; t < parts; ++t) parts_.push_back(plan(out_rows * t / parts, out_rows * (t + 1) / parts));
    }
  }

  int64_t band() const { return band_; }
  // Rows window t holds (t = 1 .. layers - 1: the input of layer t); whether it is a ring.
  int64_t capacity(int t) const { return capacity_[t]; }
  bool ring(int t) const { return ring_[t]; }
  int parts() const { return static_cast<int>(parts_.size()); }
  const std::vector<ChainStep>& steps(int part) const { return parts_[part]; }

 private:
  // Input rows of layer l that output rows [a, b) read, before clipping to the tensor.
  std::pair<int64_t, int64_t> input_rows(int l, int64_t a, int64_t b) const {
    const ChainLayer& L = layers_[l];
    return {a * L.SH - L.PT, (b - 1) * L.SH - L.PT + L.KH};
  }

  int64_t window_bytes(int64_t rows) const {
    int64_t bytes = 0;
    for (int l = static_cast<int>(layers_.size()) - 1; l > 0; --l) {
      const auto [lo, hi] = input_rows(l, 0, rows);
      rows = std::min(hi - lo, layers_[l].H);
      bytes += rows * layers_[l - 1].row_floats * 4;
    }
    return bytes;
  }

  // The steps that compute output rows [r0, r1), band by band; windows start empty.
  std::vector<ChainStep> plan(int64_t r0, int64_t r1) {
    const int n = static_cast<int>(layers_.size());
    std::vector<ChainStep> s;
    std::vector<int64_t> have_lo(n, -1), have_hi(n, -1), need_lo(n + 1), need_hi(n + 1);
    auto conv = [&](int l, int64_t a, int64_t b) {
      const ChainLayer& L = layers_[l];
      const bool ring_src = l > 0 && ring_[l], ring_dst = l < n - 1 && ring_[l + 1];
      // A ring's rows are contiguous up to its end: a step writing past it, or a 1x1 layer
      // reading past it, is split there.
      for (int64_t p = a, q; p < b; p = q) {
        q = b;
        if (ring_dst) q = std::min(q, (p / capacity_[l + 1] + 1) * capacity_[l + 1]);
        if (ring_src && L.pointwise) q = std::min(q, (p / capacity_[l] + 1) * capacity_[l]);
        const auto [lo, hi] = input_rows(l, p, q);
        const int64_t in_lo = std::max<int64_t>(lo, 0), in_hi = std::min(hi, L.H);
        ChainStep st;
        st.layer = l;
        st.row = p;
        st.rows = q - p;
        st.src_offset = l == 0 ? in_lo : ring_src ? in_lo % capacity_[l] : in_lo - have_lo[l];
        st.dst_offset = l == n - 1 ? p : ring_dst ? p % capacity_[l + 1] : p - have_lo[l + 1];
        st.src_row0 = l == 0 ? 0 : have_lo[l];
        st.in_rows = in_hi - in_lo;
        st.pad_top = in_lo - lo;
        st.pad_bottom = hi - in_hi;
        s.push_back(st);
      }
    };
    for (int64_t o0 = r0; o0 < r1; o0 += band_) {
      need_lo[n] = o0;
      need_hi[n] = std::min(o0 + band_, r1);
      for (int t = n - 1; t >= 1; --t) {
        const auto [lo, hi] = input_rows(t, need_lo[t + 1], need_hi[t + 1]);
        need_lo[t] = std::max<int64_t>(lo, 0);
        need_hi[t] = std::min(hi, layers_[t].H);
      }
      for (int t = 1; t < n; ++t) {
        if (have_lo[t] < 0) have_lo[t] = have_hi[t] = need_lo[t];
        if (need_lo[t] > have_lo[t]) {
          const int64_t keep = have_hi[t] - need_lo[t];
          if (keep > 0 && !ring_[t]) {
            ChainStep mv;
            mv.window = t;
            mv.rows = keep;
            mv.shift = need_lo[t] - have_lo[t];
            s.push_back(mv);
          }
          have_lo[t] = need_lo[t];
          have_hi[t] = std::max(have_hi[t], have_lo[t]);
        }
        if (need_hi[t] > have_hi[t]) {
          const int64_t a = have_hi[t];
          have_hi[t] = need_hi[t];
          conv(t - 1, a, need_hi[t]);
        }
        capacity_[t] = std::max(capacity_[t], have_hi[t] - have_lo[t]);
      }
      conv(n - 1, need_lo[n], need_hi[n]);
    }
    return s;
  }

  std::vector<ChainLayer> layers_;
  int64_t band_ = 1;
  std::vector<int64_t> capacity_;
  std::vector<bool> ring_;
  std::vector<std::vector<ChainStep>> parts_;
};

}  // namespace kiln_kernels
