// Recurrent layers: RNN, GRU and LSTM (opsets 7..14; opset 14 adds the batch-major layout).
//
// One reference kernel serves all three cells. Each (direction, batch element) pair is run as
// its own sequence, which makes sequence_lens trivial: a batch element simply stops after its
// length, its later Y rows stay zero and Y_h/Y_c hold the state after its last valid step.
// Gate pre-activations are dot products of contiguous rows of W/R with x_t and h_{t-1}.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <type_traits>

#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

enum class Cell { Rnn, Gru, Lstm };

// Gates per cell (rows of W are gate-major: RNN [i], GRU [z r h], LSTM [i o f c]) and
// activation functions per direction (RNN f; GRU f g; LSTM f g h).
int gates_of(Cell c) { return c == Cell::Rnn ? 1 : c == Cell::Gru ? 3 : 4; }
int acts_of(Cell c) { return c == Cell::Rnn ? 1 : c == Cell::Gru ? 2 : 3; }

// ---------------------------------------------------------------- activations

struct Activation {
  enum Kind { Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus };
  Kind kind = Tanh;
  float alpha = 0, beta = 0;

  template <typename C>
  C operator()(C x) const {
    const C a = static_cast<C>(alpha), b = static_cast<C>(beta);
    switch (kind) {
      case Relu: return x > C(0) ? x : C(0);
      case Tanh: return std::tanh(x);
      case Sigmoid: return C(1) / (C(1) + std::exp(-x));
      case Affine: return a * x + b;
      case LeakyRelu: return x >= C(0) ? x : a * x;
      case ThresholdedRelu: return x > a ? x : C(0);
      case ScaledTanh: return a * std::tanh(b * x);
      case HardSigmoid: return std::max(C(0), std::min(C(1), a * x + b));
      case Elu: return x >= C(0) ? x : a * (std::exp(x) - C(1));
      case Softsign: return x / (C(1) + std::fabs(x));
      case Softplus: return x > C(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
    }
    return x;
  }
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

struct ActSpec {
  Activation::Kind kind;
  bool uses_alpha, uses_beta;
  float alpha, beta;  // the defaults of the matching ONNX operators
};

bool act_spec(const std::string& name, ActSpec& s) {
  const std::string n = lower(name);
  using A = Activation;
  if (n == "relu") s = {A::Relu, false, false, 0, 0};
  else if (n == "tanh") s = {A::Tanh, false, false, 0, 0};
  else if (n == "sigmoid") s = {A::Sigmoid, false, false, 0, 0};
  else if (n == "affine") s = {A::Affine, true, true, 1.f, 0.f};
  else if (n == "leakyrelu") s = {A::LeakyRelu, true, false, 0.01f, 0};
  else if (n == "thresholdedrelu") s = {A::ThresholdedRelu, true, false, 1.f, 0};
  else if (n == "scaledtanh") s = {A::ScaledTanh, true, true, 1.f, 1.f};
  else if (n == "hardsigmoid") s = {A::HardSigmoid, true, true, 0.2f, 0.5f};
  else if (n == "elu") s = {A::Elu, true, false, 1.f, 0};
  else if (n == "softsign") s = {A::Softsign, false, false, 0, 0};
  else if (n == "softplus") s = {A::Softplus, false, false, 0, 0};
  else return false;
  return true;
}

int num_directions(const ir::Node& node, std::string* dir_out = nullptr) {
  const std::string dir = node.attr_string("direction", "forward");
  if (dir_out) *dir_out = dir;
  if (dir == "forward" || dir == "reverse") return 1;
  if (dir == "bidirectional") return 2;
  throw Error(node.describe() + ": direction must be forward, reverse or bidirectional, got '" + dir + "'");
}

// The activations for every direction, in order. alpha/beta values are consumed, in order, by
// the activations that take them (as onnxruntime does); the others use their ONNX defaults.
// A list naming one direction's functions is reused for both directions of a bidirectional op.
std::vector<Activation> activations_of(const ir::Node& node, Cell cell, int dirs) {
  const int per = acts_of(cell);
  std::vector<std::string> names = node.attr_strings("activations");
  if (names.empty()) {
    if (cell == Cell::Rnn) names = {"Tanh"};
    else if (cell == Cell::Gru) names = {"Sigmoid", "Tanh"};
    else names = {"Sigmoid", "Tanh", "Tanh"};
  }
  if (static_cast<int>(names.size()) == per && dirs == 2) {
    std::vector<std::string> twice = names;
    twice.insert(twice.end(), names.begin(), names.end());
    names = twice;
  }
  if (static_cast<int>(names.size()) != per * dirs)
    throw Error(node.describe() + ": expected " + std::to_string(per * dirs) + " activations (" + std::to_string(per) +
                " per direction), got " + std::to_string(names.size()));
  const std::vector<float> alphas = node.attr_floats("activation_alpha");
  const std::vector<float> betas = node.attr_floats("activation_beta");
  size_t ai = 0, bi = 0;
  std::vector<Activation> out;
  for (const std::string& n : names) {
    ActSpec s;
    if (!act_spec(n, s)) throw UnsupportedError(node.describe() + ": unsupported activation '" + n + "'");
    Activation a;
    a.kind = s.kind;
    a.alpha = s.alpha;
    a.beta = s.beta;
    if (s.uses_alpha && ai < alphas.size()) a.alpha = alphas[ai++];
    if (s.uses_beta && bi < betas.size()) a.beta = betas[bi++];
    out.push_back(a);
  }
  return out;
}

// ---------------------------------------------------------------- shape inference

void check_dim(InferContext& ctx, const ir::Dim& d, int64_t want, const std::string& what) {
  if (d.is_static() && d.value != want)
    ctx.fail(what + " is " + std::to_string(d.value) + ", expected " + std::to_string(want));
}

void infer_rnn(InferContext& ctx, Cell cell) {
  const ir::Node& node = ctx.node();
  const int dirs = num_directions(node);
  activations_of(node, cell, dirs);  // validates the attribute
  const int64_t layout = node.attr_int("layout", 0);
  if (layout != 0 && layout != 1) ctx.fail("layout must be 0 or 1, got " + std::to_string(layout));
  if (layout == 1 && ctx.opset() < 14) ctx.fail("the layout attribute needs opset 14");
  const ir::TensorType& x = ctx.input(0);
  const ir::TensorType& w = ctx.input(1);
  const ir::TensorType& r = ctx.input(2);
  if (!dtype_is_float(x.dtype) && x.dtype != DType::Undefined) ctx.fail("X must be floating-point, got " + x.str());
  for (int i = 1; i <= 2; ++i)
    if (ctx.input(i).dtype != x.dtype) ctx.fail("W and R must have X's dtype, got " + ctx.input(i).str());
  if (x.rank_known && x.rank() != 3) ctx.fail("X must be 3-D, got " + x.str());
  if (w.rank_known && w.rank() != 3) ctx.fail("W must be 3-D, got " + w.str());
  if (r.rank_known && r.rank() != 3) ctx.fail("R must be 3-D, got " + r.str());

  ir::Dim hidden = ctx.fresh_dim();
  if (node.has_attr("hidden_size")) {
    const int64_t h = node.attr_int("hidden_size", 0);
    if (h <= 0) ctx.fail("hidden_size must be positive, got " + std::to_string(h));
    hidden = ir::Dim(h);
  } else if (r.rank_known) {
    hidden = r.dims[2];
  }
  const int g = gates_of(cell);
  if (w.rank_known) {
    check_dim(ctx, w.dims[0], dirs, "W's direction dim");
    if (hidden.is_static()) check_dim(ctx, w.dims[1], g * hidden.value, "W's gate dim");
    if (x.rank_known && x.dims[2].is_static()) check_dim(ctx, w.dims[2], x.dims[2].value, "W's input dim");
  }
  if (r.rank_known) {
    check_dim(ctx, r.dims[0], dirs, "R's direction dim");
    if (hidden.is_static()) {
      check_dim(ctx, r.dims[1], g * hidden.value, "R's gate dim");
      check_dim(ctx, r.dims[2], hidden.value, "R's hidden dim");
    }
  }
  ir::Dim seq = ctx.fresh_dim(), batch = ctx.fresh_dim();
  if (x.rank_known) {
    seq = x.dims[layout == 0 ? 0 : 1];
    batch = x.dims[layout == 0 ? 1 : 0];
  }
  if (ctx.has_output(0)) {
    if (layout == 0) ctx.set_output(0, x.dtype, {seq, ir::Dim(dirs), batch, hidden});
    else ctx.set_output(0, x.dtype, {batch, seq, ir::Dim(dirs), hidden});
  }
  for (int i = 1; i < ctx.num_outputs(); ++i) {
    if (!ctx.has_output(i)) continue;
    if (layout == 0) ctx.set_output(i, x.dtype, {ir::Dim(dirs), batch, hidden});
    else ctx.set_output(i, x.dtype, {batch, ir::Dim(dirs), hidden});
  }
}

// ---------------------------------------------------------------- kernel

template <typename T, typename C>
std::vector<C> load(const Tensor& t) {
  const T* p = t.data<T>();
  std::vector<C> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = static_cast<C>(p[i]);
  return v;
}

template <typename C>
C dot(const C* a, const C* b, int64_t n) {
  C s = 0;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

struct Geometry {
  int64_t S = 0, B = 0, I = 0, H = 0, D = 0;
  bool batch_major = false;  // layout 1
  // Row offsets (in elements) of the innermost vectors in each layout.
  int64_t x_off(int64_t t, int64_t b) const { return (batch_major ? b * S + t : t * B + b) * I; }
  int64_t state_off(int64_t d, int64_t b) const { return (batch_major ? b * D + d : d * B + b) * H; }
  int64_t y_off(int64_t t, int64_t d, int64_t b) const {
    return (batch_major ? (b * S + t) * D + d : (t * D + d) * B + b) * H;
  }
};

void expect_dims(KernelContext& ctx, const Tensor& t, const std::vector<int64_t>& want, const char* what) {
  if (t.dims() != want) {
    std::string w = "[";
    for (size_t i = 0; i < want.size(); ++i) w += (i ? "," : "") + std::to_string(want[i]);
    ctx.fail(std::string(what) + " must have dims " + w + "], got " + t.describe());
  }
}

template <typename T>
void rnn_kernel_typed(KernelContext& ctx, Cell cell) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const ir::Node& node = ctx.node();
  std::string direction;
  Geometry g;
  g.D = num_directions(node, &direction);
  const std::vector<Activation> acts = activations_of(node, cell, static_cast<int>(g.D));
  g.batch_major = node.attr_int("layout", 0) == 1;
  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(1);
  const Tensor& R = ctx.input(2);
  if (X.rank() != 3 || W.rank() != 3 || R.rank() != 3)
    ctx.fail("X, W and R must be 3-D, got " + X.describe() + ", " + W.describe() + ", " + R.describe());
  g.S = X.dim(g.batch_major ? 1 : 0);
  g.B = X.dim(g.batch_major ? 0 : 1);
  g.I = X.dim(2);
  g.H = node.has_attr("hidden_size") ? node.attr_int("hidden_size", 0) : R.dim(2);
  if (g.H <= 0) ctx.fail("hidden_size must be positive");
  const int64_t G = gates_of(cell), GH = G * g.H, H = g.H, I = g.I;
  expect_dims(ctx, W, {g.D, GH, I}, "W");
  expect_dims(ctx, R, {g.D, GH, H}, "R");
  for (int i = 1; i < ctx.num_inputs(); ++i)
    if (i != 4 && ctx.has_input(i) && ctx.input(i).dtype() != X.dtype())
      ctx.fail("input " + std::to_string(i) + " must have X's dtype, got " + ctx.input(i).describe());

  const std::vector<C> x = load<T, C>(X), w = load<T, C>(W), r = load<T, C>(R);
  std::vector<C> bias(static_cast<size_t>(g.D * 2 * GH), C(0));
  if (ctx.has_input(3)) {
    expect_dims(ctx, ctx.input(3), {g.D, 2 * GH}, "B");
    bias = load<T, C>(ctx.input(3));
  }
  std::vector<int64_t> lens(static_cast<size_t>(g.B), g.S);
  if (ctx.has_input(4)) {
    const Tensor& sl = ctx.input(4);
    if (!dtype_is_integer(sl.dtype())) ctx.fail("sequence_lens must be an integer tensor, got " + sl.describe());
    expect_dims(ctx, sl, {g.B}, "sequence_lens");
    lens = sl.to_int64_vector();
    for (int64_t l : lens)
      if (l < 0 || l > g.S) ctx.fail("sequence_lens values must lie in [0, " + std::to_string(g.S) + "], got " + std::to_string(l));
  }
  const std::vector<int64_t> state_dims = g.batch_major ? std::vector<int64_t>{g.B, g.D, H} : std::vector<int64_t>{g.D, g.B, H};
  std::vector<C> h0(static_cast<size_t>(g.D * g.B * H), C(0)), c0 = h0;
  if (ctx.has_input(5)) {
    expect_dims(ctx, ctx.input(5), state_dims, "initial_h");
    h0 = load<T, C>(ctx.input(5));
  }
  std::vector<C> peep;
  if (cell == Cell::Lstm) {
    if (ctx.has_input(6)) {
      expect_dims(ctx, ctx.input(6), state_dims, "initial_c");
      c0 = load<T, C>(ctx.input(6));
    }
    if (ctx.has_input(7)) {
      expect_dims(ctx, ctx.input(7), {g.D, 3 * H}, "P");
      peep = load<T, C>(ctx.input(7));
    }
  }
  const bool has_clip = node.has_attr("clip");
  const C clip = static_cast<C>(node.attr_float("clip", 0.f));
  if (has_clip && !(clip > C(0))) ctx.fail("clip must be positive");
  auto clipped = [&](C v) { return has_clip ? std::max(-clip, std::min(clip, v)) : v; };
  const bool lbr = cell == Cell::Gru && node.attr_int("linear_before_reset", 0) != 0;
  const bool input_forget = cell == Cell::Lstm && node.attr_int("input_forget", 0) != 0;

  std::vector<C> y(static_cast<size_t>(g.S * g.D * g.B * H), C(0));
  std::vector<C> yh(static_cast<size_t>(g.D * g.B * H)), yc(yh.size());
  std::vector<C> gates(static_cast<size_t>(GH)), h(static_cast<size_t>(H)), c(h.size()), hn(h.size()), tmp(h.size());

  for (int64_t d = 0; d < g.D; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    const int na = acts_of(cell);
    const Activation& f = acts[d * na];
    const Activation& ga = acts[d * na + (na > 1 ? 1 : 0)];
    const Activation& ha = acts[d * na + (na > 2 ? 2 : 0)];
    const C* Wd = w.data() + d * GH * I;
    const C* Rd = r.data() + d * GH * H;
    const C* Wb = bias.data() + d * 2 * GH;
    const C* Rb = Wb + GH;
    const C* P = peep.empty() ? nullptr : peep.data() + d * 3 * H;
    for (int64_t b = 0; b < g.B; ++b) {
      std::copy_n(h0.data() + g.state_off(d, b), H, h.data());
      std::copy_n(c0.data() + g.state_off(d, b), H, c.data());
      const int64_t len = lens[b];
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = reverse ? len - 1 - s : s;
        const C* xt = x.data() + g.x_off(t, b);
        // Pre-activations x W^T + Wb (+ h R^T + Rb, except GRU's h gate, which needs r first).
        for (int64_t j = 0; j < GH; ++j) {
          C v = dot(xt, Wd + j * I, I) + Wb[j];
          if (!(cell == Cell::Gru && j >= 2 * H)) v += dot(h.data(), Rd + j * H, H) + Rb[j];
          gates[j] = v;
        }
        if (cell == Cell::Rnn) {
          for (int64_t j = 0; j < H; ++j) hn[j] = f(clipped(gates[j]));
        } else if (cell == Cell::Gru) {
          const C* z = gates.data();
          C* rg = gates.data() + H;
          for (int64_t j = 0; j < 2 * H; ++j) gates[j] = f(clipped(gates[j]));
          if (!lbr)
            for (int64_t j = 0; j < H; ++j) tmp[j] = rg[j] * h[j];
          for (int64_t j = 0; j < H; ++j) {
            const C* Rh = Rd + (2 * H + j) * H;
            const C rec = lbr ? rg[j] * (dot(h.data(), Rh, H) + Rb[2 * H + j]) : dot(tmp.data(), Rh, H) + Rb[2 * H + j];
            const C cand = ga(clipped(gates[2 * H + j] + rec));
            hn[j] = (C(1) - z[j]) * cand + z[j] * h[j];
          }
        } else {
          const C *gi = gates.data(), *go = gi + H, *gf = gi + 2 * H, *gc = gi + 3 * H;
          for (int64_t j = 0; j < H; ++j) {
            const C i_t = f(clipped(gi[j] + (P ? P[j] * c[j] : C(0))));
            const C f_t = input_forget ? C(1) - i_t : f(clipped(gf[j] + (P ? P[2 * H + j] * c[j] : C(0))));
            const C c_t = ga(clipped(gc[j]));
            const C cn = f_t * c[j] + i_t * c_t;
            const C o_t = f(clipped(go[j] + (P ? P[H + j] * cn : C(0))));
            hn[j] = o_t * ha(clipped(cn));
            c[j] = cn;
          }
        }
        h.swap(hn);
        std::copy_n(h.data(), H, y.data() + g.y_off(t, d, b));
      }
      std::copy_n(h.data(), H, yh.data() + g.state_off(d, b));
      std::copy_n(c.data(), H, yc.data() + g.state_off(d, b));
    }
  }

  auto emit = [&](int i, const std::vector<C>& v, std::vector<int64_t> dims) {
    if (!ctx.has_output(i)) return;
    Tensor& out = ctx.make_output(i, X.dtype(), std::move(dims));
    T* p = out.data<T>();
    for (size_t k = 0; k < v.size(); ++k) p[k] = static_cast<T>(v[k]);
  };
  emit(0, y, g.batch_major ? std::vector<int64_t>{g.B, g.S, g.D, H} : std::vector<int64_t>{g.S, g.D, g.B, H});
  emit(1, yh, state_dims);
  if (cell == Cell::Lstm) emit(2, yc, state_dims);
}

void rnn_kernel(KernelContext& ctx, Cell cell) {
  dispatch_float(ctx.input(0).dtype(), [&](auto tag) { rnn_kernel_typed<decltype(tag)>(ctx, cell); });
}

}  // namespace

KILN_REGISTER_OPS(rnn) {
  reg.add({.name = "RNN", .since_version = 7, .min_inputs = 3, .max_inputs = 6, .min_outputs = 0, .max_outputs = 2,
           .pattern = PatternKind::Opaque,
           .infer = [](InferContext& ctx) { infer_rnn(ctx, Cell::Rnn); },
           .kernel = [](KernelContext& ctx) { rnn_kernel(ctx, Cell::Rnn); }});
  reg.add({.name = "GRU", .since_version = 7, .min_inputs = 3, .max_inputs = 6, .min_outputs = 0, .max_outputs = 2,
           .pattern = PatternKind::Opaque,
           .infer = [](InferContext& ctx) { infer_rnn(ctx, Cell::Gru); },
           .kernel = [](KernelContext& ctx) { rnn_kernel(ctx, Cell::Gru); }});
  reg.add({.name = "LSTM", .since_version = 7, .min_inputs = 3, .max_inputs = 8, .min_outputs = 0, .max_outputs = 3,
           .pattern = PatternKind::Opaque,
           .infer = [](InferContext& ctx) { infer_rnn(ctx, Cell::Lstm); },
           .kernel = [](KernelContext& ctx) { rnn_kernel(ctx, Cell::Lstm); }});
}

}  // namespace kiln::ops
