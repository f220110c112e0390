// RNN, GRU and LSTM, float32, with their default activations (tanh; sigmoid gates, tanh
// candidates), any direction, either layout, initial states, LSTM peepholes and input_forget;
// sequence_lens, clip and other activations stay on the reference kernel (src/ops/rnn.cpp holds
// the semantics).
//
// The input projections of every step, direction and batch element (x_t W^T + Wb: no dependence
// between steps) come first, as one matrix product per direction over all the rows of X (the
// 1x1-conv kernel, pointwise_rows.h, at the FMA rate rather than a matrix-vector product's), the
// team splitting the rows. Then each (direction, batch element) pair is one independent
// sequence, split over the team, whose steps run in order: the recurrent projection h R^T is a
// matrix-vector product on R packed in column blocks (packed_gemv.h; a model's R, [gates * H, H], stays in
// cache across steps), and the cell update is one vectorized pass over H.
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/kernels.h"
#include "backends/cpu/node_args.h"
#include "backends/cpu/packed_gemv.h"
#include "backends/cpu/onednn_common.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/pointwise_conv.h"
#include "backends/cpu/simd.h"
#include "ops/core/recurrent_form.h"

namespace kiln::backends::cpu {

namespace {

enum class Cell { Rnn, Gru, Lstm };

struct Geometry {
  Cell cell = Cell::Gru;
  int64_t seq = 0, batch = 0, input = 0, H = 0, dirs = 1, G = 3;  // G gates per cell
  bool reverse_only = false, batch_major = false, lbr = false, input_forget = false;
};

// The cell updates, one pass over H each, on the vectorizable sigmoid and tanh.
KILN_SIMD void gru_reset(const float* xr, const float* rr, const float* h, float* rh, int64_t H) {
  for (int64_t j = 0; j < H; ++j) rh[j] = simd::sigmoid(xr[j] + rr[j]) * h[j];
}

// xt, rec: the z, r and h rows' projections; with linear_before_reset the h row's recurrent part
// is scaled by r, else it was made from r * h already.
KILN_SIMD void gru_update(const float* xt, const float* rec, float* h, int64_t H, bool lbr) {
  if (lbr) {
    for (int64_t j = 0; j < H; ++j) {
      const float z = simd::sigmoid(xt[j] + rec[j]), rg = simd::sigmoid(xt[H + j] + rec[H + j]);
      const float cand = simd::tanh(xt[2 * H + j] + rg * rec[2 * H + j]);
      h[j] = (1.f - z) * cand + z * h[j];
    }
  } else {
    for (int64_t j = 0; j < H; ++j) {
      const float z = simd::sigmoid(xt[j] + rec[j]);
      const float cand = simd::tanh(xt[2 * H + j] + rec[2 * H + j]);
      h[j] = (1.f - z) * cand + z * h[j];
    }
  }
}

// h = tanh(x W^T + Wb + h R^T + Rb): xt and rec its two projections.
KILN_SIMD void rnn_update(const float* xt, const float* rec, float* h, int64_t H) {
  for (int64_t j = 0; j < H; ++j) h[j] = simd::tanh(xt[j] + rec[j]);
}

// Gate rows i o f c; peepholes [i o f] (or null).
KILN_SIMD void lstm_update(const float* xt, const float* rec, const float* peep, float* h, float* c, int64_t H,
                           bool input_forget) {
  for (int64_t j = 0; j < H; ++j) {
    const float pi = peep ? peep[j] * c[j] : 0.f, pf = peep ? peep[2 * H + j] * c[j] : 0.f;
    const float i = simd::sigmoid(xt[j] + rec[j] + pi);
    const float f = input_forget ? 1.f - i : simd::sigmoid(xt[2 * H + j] + rec[2 * H + j] + pf);
    const float cand = simd::tanh(xt[3 * H + j] + rec[3 * H + j]);
    const float cn = f * c[j] + i * cand;
    const float o = simd::sigmoid(xt[H + j] + rec[H + j] + (peep ? peep[H + j] * cn : 0.f));
    c[j] = cn;
    h[j] = o * simd::tanh(cn);
  }
}

class RecurrentKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  // w [dirs][G*H][input], r [dirs][G*H][H] (row-major, packed here), wb/rb [dirs][G*H] (zeros
  // when absent), p [dirs][3H] peepholes (empty when absent). GRU without linear_before_reset
  // needs r before the h row's recurrent product, so its R is packed as the z, r rows and the h row.
  RecurrentKernel(Geometry g, const float* w, const float* r, std::vector<float> wb, std::vector<float> rb,
                  std::vector<float> p, int threads)
      : g_(g), wb_(std::move(wb)), rb_(std::move(rb)), p_(std::move(p)), threads_(threads) {
    const int64_t H = g.H, GH = g.G * H, split = g.cell == Cell::Gru && !g.lbr ? 2 * H : GH;
    for (int64_t d = 0; d < g.dirs; ++d) {
      if (has_avx512())
        w_rows_.emplace_back(g.input, GH, RowWeights(w + d * GH * g.input), wb_.data() + d * GH, ops::Activation{},
                             GH, threads);
      else w_.emplace_back(w + d * GH * g.input, false, 1.f, GH, g.input, "kiln_recurrent/w");
      r_.emplace_back(r + d * GH * H, false, 1.f, split, H, "kiln_recurrent/r");
      if (split < GH) r_h_.emplace_back(r + d * GH * H + split * H, false, 1.f, GH - split, H, "kiln_recurrent/r");
    }
  }

  // inputs: X, W, R, B, sequence_lens (absent), initial_h, [initial_c, P]; outputs: Y, Y_h, [Y_c].
  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out) const override {
    const Geometry& g = g_;
    auto input = [&](size_t i) { return in.size() > i && in[i] ? in[i]->data<float>() : nullptr; };
    auto output = [&](size_t i) { return out.size() > i && out[i] ? out[i]->data<float>() : nullptr; };
    const float* x = in[0]->data<float>();
    const float* h0 = input(5);
    const float* c0 = g.cell == Cell::Lstm ? input(6) : nullptr;
    float *y = output(0), *yh = output(1), *yc = g.cell == Cell::Lstm ? output(2) : nullptr;
    const int64_t H = g.H, GH = g.G * H, rows = g.seq * g.batch;
    // xw[d][row of X][GH]: the calling thread's scratch, shared with its team for this run.
    float* xw = static_cast<float*>(dnnl_util::scratch(static_cast<size_t>(g.dirs * rows * GH) * sizeof(float)));
    parallel_for(g.dirs * rows, threads_, [&](int64_t r0, int64_t r1) {
      for (int64_t d = r0 / rows; d < g.dirs && d * rows < r1; ++d) {
        const int64_t m0 = std::max(r0 - d * rows, int64_t{0}), m1 = std::min(r1 - d * rows, rows);
        float* xwd = xw + d * rows * GH;
        if (!w_rows_.empty()) {
          w_rows_[static_cast<size_t>(d)].rows(x, m0, m1, xwd, nullptr, nullptr);
        } else {
          w_[static_cast<size_t>(d)].apply_rows(x + m0 * g.input, m1 - m0, g.input, wb_.data() + d * GH,
                                                 xwd + m0 * GH, GH);
        }
      }
    });
    parallel_for(g.dirs * g.batch, threads_, [&](int64_t p0, int64_t p1) {
      std::vector<float> rec(static_cast<size_t>(GH)), h(static_cast<size_t>(H)), c(static_cast<size_t>(H)),
          rh(static_cast<size_t>(H));
      for (int64_t pair = p0; pair < p1; ++pair) {
        const int64_t d = pair / g.batch, b = pair % g.batch;
        const bool backward = g.reverse_only || d == 1;
        const float* rb = rb_.data() + d * GH;
        const float* peep = p_.empty() ? nullptr : p_.data() + d * 3 * H;
        const float* xwd = xw + d * rows * GH;
        for (int64_t j = 0; j < H; ++j) {
          h[j] = h0 ? h0[state(d, b) + j] : 0.f;
          c[j] = c0 ? c0[state(d, b) + j] : 0.f;
        }
        for (int64_t step = 0; step < g.seq; ++step) {
          const int64_t t = backward ? g.seq - 1 - step : step;
          const float* xt = xwd + x_row(t, b) * GH;
          if (g.cell == Cell::Gru) {
            gru_step(d, rb, xt, h.data(), rh.data(), rec.data());
          } else if (g.cell == Cell::Lstm) {
            lstm_step(d, rb, peep, xt, h.data(), c.data(), rec.data());
          } else {
            r_[static_cast<size_t>(d)].apply(h.data(), rb, rec.data());
            rnn_update(xt, rec.data(), h.data(), H);
          }
          if (y) std::copy(h.begin(), h.end(), y + yrow(t, d, b));
        }
        if (yh) std::copy(h.begin(), h.end(), yh + state(d, b));
        if (yc) std::copy(c.begin(), c.end(), yc + state(d, b));
      }
    });
  }

 private:
  // The row of X holding x_t for batch element b; offsets of Y's row (t, d, b) and of a state's
  // row (d, b).
  int64_t x_row(int64_t t, int64_t b) const { return g_.batch_major ? b * g_.seq + t : t * g_.batch + b; }
  int64_t yrow(int64_t t, int64_t d, int64_t b) const {
    return (g_.batch_major ? (b * g_.seq + t) * g_.dirs + d : (t * g_.dirs + d) * g_.batch + b) * g_.H;
  }
  int64_t state(int64_t d, int64_t b) const { return (g_.batch_major ? b * g_.dirs + d : d * g_.batch + b) * g_.H; }

  // z, r, candidate (gate rows z r h) of direction d; h updated in place.
  void gru_step(int64_t d, const float* rb, const float* xt, float* h, float* rh, float* rec) const {
    const int64_t H = g_.H;
    r_[static_cast<size_t>(d)].apply(h, rb, rec);  // z and r rows (and h's with linear_before_reset)
    if (!g_.lbr) {
      gru_reset(xt + H, rec + H, h, rh, H);
      r_h_[static_cast<size_t>(d)].apply(rh, rb + 2 * H, rec + 2 * H);
    }
    gru_update(xt, rec, h, H, g_.lbr);
  }

  void lstm_step(int64_t d, const float* rb, const float* peep, const float* xt, float* h, float* c, float* rec) const {
    r_[static_cast<size_t>(d)].apply(h, rb, rec);
    lstm_update(xt, rec, peep, h, c, g_.H, g_.input_forget);
  }

  Geometry g_;
  std::vector<float> wb_, rb_, p_;
  std::vector<PointwiseRows> w_rows_;    // per direction, with AVX-512
  std::vector<PackedGemv> w_, r_, r_h_;  // per direction (w_ without AVX-512)
  int threads_;
};

std::unique_ptr<Kernel> make_recurrent(const ir::Node& n, int threads) {
  const std::optional<ops::RecurrentForm> f = ops::recurrent_form(n);
  if (!f || !plain_elem_size(n.input(0))) return nullptr;
  for (int i = 0; i < n.num_outputs(); ++i)
    if (n.output(i) && !plain_elem_size(n.output(i))) return nullptr;
  for (int i = 5; i <= 6 && i < n.num_inputs(); ++i)
    if (n.input(i) && !plain_elem_size(n.input(i))) return nullptr;
  Geometry g;
  g.cell = f->lstm ? Cell::Lstm : f->rnn ? Cell::Rnn : Cell::Gru;
  g.G = f->gates;
  g.seq = f->seq;
  g.batch = f->batch;
  g.input = f->input;
  g.H = f->hidden;
  g.dirs = f->dirs;
  g.reverse_only = f->reverse_only;
  g.batch_major = f->batch_major;
  g.lbr = f->linear_before_reset;
  g.input_forget = f->input_forget;
  return std::make_unique<RecurrentKernel>(g, n.input(1)->constant().data<float>(), n.input(2)->constant().data<float>(),
                                           f->w_bias, f->r_bias, f->peepholes, threads);
}

}  // namespace

void add_recurrent_kernels(std::vector<KernelFactory>& table) {
  table.push_back({"", "RNN", make_recurrent});
  table.push_back({"", "GRU", make_recurrent});
  table.push_back({"", "LSTM", make_recurrent});
}

}  // namespace kiln::backends::cpu
