// The plain RNN, GRU and LSTM with their default activations (tanh for the RNN; sigmoid gates,
// tanh candidates), for emitted code: any direction, either layout, initial states, LSTM peepholes and input_forget, GRU's
// linear_before_reset (ops/core/recurrent_form.h says which nodes take it; src/ops/rnn.cpp holds
// the semantics). Each (direction, batch element) pair is one sequence whose steps run in order:
// the input projections of all steps first (one product over the rows of X, four rows per
// weight load), then per step the recurrent products and the cell update over the hidden units
// (W and R packed in gemv.h's column blocks: one vector FMA per 16 outputs, R staying in cache
// across steps). Plain loops the compiler vectorizes for the CPU it compiles for; one
// thread.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "gemv.h"
#include "thread_scratch.h"

namespace kiln_kernels {

struct RecurrentShape {
  bool lstm = false;  // else GRU or (rnn) the plain RNN; gates 4 (i o f c), 3 (z r h) or 1 (h)
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  bool reverse_only = false, batch_major = false, linear_before_reset = false, input_forget = false;
  bool rnn = false;
  int64_t gates() const { return lstm ? 4 : rnn ? 1 : 3; }
  // GRU without linear_before_reset takes r * h into the candidate's recurrent product: R's
  // first rows (z and r, or all of them) and its candidate rows are packed apart.
  int64_t direct_rows() const { return lstm || rnn || linear_before_reset ? gates() * hidden : 2 * hidden; }
  GemvLayout w_layout() const { return {gates() * hidden, input}; }
  GemvLayout r_layout() const { return {direct_rows(), hidden}; }
  GemvLayout r_candidate_layout() const { return {gates() * hidden - direct_rows(), hidden}; }
  // Floats per direction of the packed W and of the packed R (both parts).
  int64_t w_packed() const { return w_layout().packed_size(); }
  int64_t r_packed() const { return r_layout().packed_size() + r_candidate_layout().packed_size(); }
  // Packs the node's W [dirs][G*H][input] and R [dirs][G*H][H] (row-major) into wp (dirs *
  // w_packed() floats) and rp (dirs * r_packed()).
  void pack(const float* w, const float* r, float* wp, float* rp) const {
    const int64_t GH = gates() * hidden, direct = direct_rows();
    for (int64_t d = 0; d < dirs; ++d) {
      w_layout().pack(w + d * GH * input, false, 1.f, wp + d * w_packed());
      r_layout().pack(r + d * GH * hidden, false, 1.f, rp + d * r_packed());
      if (direct < GH)
        r_candidate_layout().pack(r + (d * GH + direct) * hidden, false, 1.f,
                                  rp + d * r_packed() + r_layout().packed_size());
    }
  }
};

namespace recurrent_detail {

inline float sigmoid(float v) { return 1.f / (1.f + std::exp(-v)); }

// y[0, L.n) = bias + W x, W packed by L.
inline void product(const GemvLayout& L, const float* packed, const float* x, const float* bias, float* y) {
  alignas(64) float acc[GemvLayout::kBlock];
  for (int64_t blk = 0; blk < L.blocks(); ++blk) {
    gemv_block(L, packed, blk, x, 0, L.k, acc);
    const int64_t n0 = blk * GemvLayout::kBlock;
    for (int64_t i = 0; i < L.block_outputs(blk); ++i) y[n0 + i] = acc[i] + bias[n0 + i];
  }
}

// Rows [0, n) of x (stride `input` floats) times W packed by L, plus bias, into y (stride L.n):
// four rows at a time, so each weight loaded serves four rows (the input projections of every
// step, which do not depend on each other, as one product).
template <int W>
inline void rows_block(const float* w, const float* const* x, int rows, int64_t k, float (*acc)[GemvLayout::kBlock]) {
  float a[4][W] = {};
  for (int64_t j = 0; j < k; ++j) {
    const float* wr = w + j * W;
    for (int r = 0; r < 4; ++r) {
      const float xv = r < rows ? x[r][j] : 0.f;
      for (int l = 0; l < W; ++l) a[r][l] += wr[l] * xv;
    }
  }
  for (int r = 0; r < rows; ++r)
    for (int l = 0; l < W; ++l) acc[r][l] = a[r][l];
}

inline void rows_product(const GemvLayout& L, const float* packed, const float* x, int64_t n, int64_t input,
                         const float* bias, float* y) {
  alignas(64) float acc[4][GemvLayout::kBlock];
  for (int64_t r0 = 0; r0 < n; r0 += 4) {
    const int rows = static_cast<int>(n - r0 < 4 ? n - r0 : 4);
    const float* xr[4];
    for (int r = 0; r < 4; ++r) xr[r] = x + (r0 + (r < rows ? r : 0)) * input;
    for (int64_t blk = 0; blk < L.blocks(); ++blk) {
      const float* w = packed + L.offset(blk);
      switch (L.width(blk)) {
        case 16: rows_block<16>(w, xr, rows, L.k, acc); break;
        case 32: rows_block<32>(w, xr, rows, L.k, acc); break;
        case 48: rows_block<48>(w, xr, rows, L.k, acc); break;
        default: rows_block<64>(w, xr, rows, L.k, acc); break;
      }
      const int64_t n0 = blk * GemvLayout::kBlock;
      for (int r = 0; r < rows; ++r)
        for (int64_t i = 0; i < L.block_outputs(blk); ++i) y[(r0 + r) * L.n + n0 + i] = acc[r][i] + bias[n0 + i];
    }
  }
}

}  // namespace recurrent_detail

// x as the node's X; wp, rp its W and R packed by g.pack; wb, rb [dirs][G*H] their biases; p
// [dirs][3H] the peepholes or null; h0, c0 the initial states or null; y, yh, yc the outputs or
// null (each in the layout's order).
inline void recurrent(const RecurrentShape& g, const float* x, const float* wp, const float* rp, const float* wb,
                      const float* rb, const float* p, const float* h0, const float* c0, float* y, float* yh,
                      float* yc) {
  using recurrent_detail::product;
  using recurrent_detail::sigmoid;
  const int64_t H = g.hidden, GH = g.gates() * H;
  auto x_row = [&](int64_t t, int64_t b) { return g.batch_major ? b * g.seq + t : t * g.batch + b; };
  auto y_row = [&](int64_t t, int64_t d, int64_t b) {
    return (g.batch_major ? (b * g.seq + t) * g.dirs + d : (t * g.dirs + d) * g.batch + b) * H;
  };
  auto state = [&](int64_t d, int64_t b) { return (g.batch_major ? b * g.dirs + d : d * g.batch + b) * H; };
  // Every step's input projection first (rows of X in the layout's order), per direction.
  const int64_t rows = g.seq * g.batch;
  // xw [rows][GH], then rg [GH], h, c, rh [H]: the thread's scratch, kept from run to run (a
  // fresh allocation of a long sequence's projections would map and fault in pages every run).
  const size_t floats = static_cast<size_t>(rows * GH + GH + 3 * H);
  std::vector<float> fallback;
  float* xw = static_cast<float*>(thread_scratch(floats * sizeof(float)));
  if (!xw) {
    fallback.resize(floats);
    xw = fallback.data();
  }
  float* rg = xw + rows * GH;
  float* h = rg + GH;
  float* c = h + H;
  float* rh = c + H;
  for (int64_t d = 0; d < g.dirs; ++d) {
    const float* wd = wp + d * g.w_packed();
    const float* rd = rp + d * g.r_packed();
    const float* wbd = wb + d * GH;
    const float* rbd = rb + d * GH;
    const float* pd = p ? p + d * 3 * H : nullptr;
    recurrent_detail::rows_product(g.w_layout(), wd, x, rows, g.input, wbd, xw);
    for (int64_t b = 0; b < g.batch; ++b) {
      for (int64_t j = 0; j < H; ++j) {
        h[j] = h0 ? h0[state(d, b) + j] : 0.f;
        c[j] = c0 ? c0[state(d, b) + j] : 0.f;
      }
      for (int64_t step = 0; step < g.seq; ++step) {
        const int64_t t = g.reverse_only || d == 1 ? g.seq - 1 - step : step;
        const float* xg = xw + x_row(t, b) * GH;
        product(g.r_layout(), rd, h, rbd, rg);
        if (g.lstm) {
          for (int64_t j = 0; j < H; ++j) {
            const float pi = pd ? pd[j] * c[j] : 0.f, pf = pd ? pd[2 * H + j] * c[j] : 0.f;
            const float i = sigmoid(xg[j] + rg[j] + pi);
            const float f = g.input_forget ? 1.f - i : sigmoid(xg[2 * H + j] + rg[2 * H + j] + pf);
            const float cand = std::tanh(xg[3 * H + j] + rg[3 * H + j]);
            const float cn = f * c[j] + i * cand;
            const float o = sigmoid(xg[H + j] + rg[H + j] + (pd ? pd[H + j] * cn : 0.f));
            c[j] = cn;
            h[j] = o * std::tanh(cn);
          }
        } else if (g.rnn) {
          for (int64_t j = 0; j < H; ++j) h[j] = std::tanh(xg[j] + rg[j]);
        } else {
          if (!g.linear_before_reset) {
            for (int64_t j = 0; j < H; ++j) rh[j] = sigmoid(xg[H + j] + rg[H + j]) * h[j];
            product(g.r_candidate_layout(), rd + g.r_layout().packed_size(), rh, rbd + 2 * H, rg + 2 * H);
          }
          for (int64_t j = 0; j < H; ++j) {
            const float z = sigmoid(xg[j] + rg[j]);
            const float hr = g.linear_before_reset ? sigmoid(xg[H + j] + rg[H + j]) * rg[2 * H + j] : rg[2 * H + j];
            const float cand = std::tanh(xg[2 * H + j] + hr);
            h[j] = (1.f - z) * cand + z * h[j];
          }
        }
        if (y)
          for (int64_t j = 0; j < H; ++j) y[y_row(t, d, b) + j] = h[j];
      }
      if (yh)
        for (int64_t j = 0; j < H; ++j) yh[state(d, b) + j] = h[j];
      if (yc)
        for (int64_t j = 0; j < H; ++j) yc[state(d, b) + j] = c[j];
    }
  }
}

}  // namespace kiln_kernels
