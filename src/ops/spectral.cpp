// Signal processing ops of opset 17: DFT, STFT, the window generators (Hann, Hamming,
// Blackman) and MelWeightMatrix.
//
// Complex tensors are real tensors with a trailing dim of 2 (re, im); a trailing dim of 1 is a
// real signal. Transforms run in double through a twiddle table (O(n^2) per signal, exact for
// every length, no power-of-two requirement), which is plenty for a reference kernel.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

constexpr double kPi = std::numbers::pi;

// A scalar (or one-element) integer input's value; fails otherwise.
template <typename Ctx>
int64_t scalar_int(const Ctx& ctx, const Tensor& t, const char* what) {
  if (!dtype_is_integer(t.dtype()) || t.numel() != 1 || t.rank() > 1)
    ctx.fail(std::string(what) + " must be an integer scalar, got " + t.describe());
  return t.as_int64(0);
}

template <typename Ctx>
double scalar_double(const Ctx& ctx, const Tensor& t, const char* what) {
  if (t.numel() != 1 || t.rank() > 1) ctx.fail(std::string(what) + " must be a scalar, got " + t.describe());
  return t.as_double(0);
}

// out[k] = sum_j in[j] * exp(sign * 2 pi i j k / n) for k < bins, in/out interleaved (re, im).
// Only the first `avail` input samples are non-zero (shorter signals are zero-padded).
class Dft {
 public:
  explicit Dft(int64_t n, bool inverse) : n_(n), cos_(static_cast<size_t>(n)), sin_(static_cast<size_t>(n)) {
    const double sign = inverse ? 1.0 : -1.0;
    for (int64_t j = 0; j < n; ++j) {
      cos_[j] = std::cos(2 * kPi * static_cast<double>(j) / static_cast<double>(n));
      sin_[j] = sign * std::sin(2 * kPi * static_cast<double>(j) / static_cast<double>(n));
    }
  }
  void run(const double* in, int64_t avail, double* out, int64_t bins, double scale) const {
    const int64_t m = std::min(avail, n_);
    for (int64_t k = 0; k < bins; ++k) {
      double re = 0, im = 0;
      int64_t idx = 0;  // (j * k) mod n, kept incrementally
      for (int64_t j = 0; j < m; ++j) {
        const double c = cos_[idx], s = sin_[idx], a = in[2 * j], b = in[2 * j + 1];
        re += a * c - b * s;
        im += a * s + b * c;
        idx += k;
        if (idx >= n_) idx %= n_;
      }
      out[2 * k] = re * scale;
      out[2 * k + 1] = im * scale;
    }
  }

 private:
  int64_t n_;
  std::vector<double> cos_, sin_;
};

// ---------------------------------------------------------------- DFT

// The transformed axis: the attribute `axis` (default 1) up to opset 19; from opset 20 the
// optional scalar input 2 (default -2).
int64_t dft_axis(const ir::Node& node, int64_t rank, int64_t opset, const Tensor* axis_input) {
  int64_t axis = opset >= 20 ? -2 : node.attr_int("axis", 1);
  if (axis_input) {
    if (axis_input->numel() != 1 || (axis_input->dtype() != DType::Int64 && axis_input->dtype() != DType::Int32))
      throw Error(node.describe() + ": axis must be a scalar int32 or int64, got " + axis_input->describe());
    axis = axis_input->as_int64(0);
  }
  // The last dim holds (re, im), so the transformed axis is one of the others.
  if (axis < -rank || axis >= rank - 1 || axis == -1)
    throw Error(node.describe() + ": axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank) +
                " (the last dim holds the complex components)");
  return axis < 0 ? axis + rank : axis;
}

void infer_dft(InferContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (!dtype_is_float(x.dtype)) ctx.fail("input must be floating-point, got " + x.str());
  const bool onesided = ctx.node().attr_int("onesided", 0) != 0;
  const bool inverse = ctx.node().attr_int("inverse", 0) != 0;
  if (onesided && inverse) throw UnsupportedError(ctx.node().describe() + ": onesided inverse DFT is not supported");
  if (!x.rank_known) return ctx.set_output(0, ir::TensorType::unranked(x.dtype));
  if (x.rank() < 2) ctx.fail("input must have rank >= 2 ([..., n, 1|2]), got " + x.str());
  const ir::Dim& last = x.dims.back();
  if (last.is_static() && last.value != 1 && last.value != 2)
    ctx.fail("the last dim must be 1 (real) or 2 (complex), got " + x.str());
  if (onesided && last.is_static() && last.value == 2) ctx.fail("onesided needs a real input, got " + x.str());
  if (ctx.opset() < 20 && ctx.has_input(2)) ctx.fail("the axis input arrived in opset 20; before, axis is an attribute");
  const bool axis_input = ctx.opset() >= 20 && ctx.has_input(2);
  const Tensor* axis_value = axis_input ? ctx.value(2) : nullptr;
  if (axis_input && !axis_value) {  // known at run time only: every dim but the last may change
    std::vector<ir::Dim> dims;
    for (size_t i = 0; i + 1 < x.dims.size(); ++i) dims.push_back(ctx.fresh_dim());
    dims.push_back(ir::Dim(2));
    return ctx.set_output(0, x.dtype, dims);
  }
  const int64_t axis = dft_axis(ctx.node(), x.rank(), ctx.opset(), axis_value);
  ir::Dim len = x.dims[axis];
  if (ctx.has_input(1)) {
    const Tensor* v = ctx.value(1);
    len = v ? ir::Dim(scalar_int(ctx, *v, "dft_length")) : ctx.fresh_dim();
    if (len.is_static() && len.value < 1) ctx.fail("dft_length must be positive");
  }
  std::vector<ir::Dim> dims = x.dims;
  dims[axis] = !onesided ? len : len.is_static() ? ir::Dim(len.value / 2 + 1) : ctx.fresh_dim();
  dims.back() = ir::Dim(2);
  ctx.set_output(0, x.dtype, dims);
}

void dft_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool onesided = ctx.node().attr_int("onesided", 0) != 0;
  const bool inverse = ctx.node().attr_int("inverse", 0) != 0;
  if (onesided && inverse) throw UnsupportedError(ctx.node().describe() + ": onesided inverse DFT is not supported");
  if (x.rank() < 2) ctx.fail("input must have rank >= 2 ([..., n, 1|2]), got " + x.describe());
  const int64_t comps = x.dims().back();
  if (comps != 1 && comps != 2) ctx.fail("the last dim must be 1 (real) or 2 (complex), got " + x.describe());
  if (onesided && comps == 2) ctx.fail("onesided needs a real input, got " + x.describe());
  const int64_t axis = dft_axis(ctx.node(), x.rank(), ctx.opset(),
                                ctx.opset() >= 20 && ctx.has_input(2) ? &ctx.input(2) : nullptr);
  const int64_t n_in = x.dim(static_cast<int>(axis));
  const int64_t len = ctx.has_input(1) ? scalar_int(ctx, ctx.input(1), "dft_length") : n_in;
  if (len < 1) ctx.fail("dft_length must be positive, got " + std::to_string(len));
  const int64_t bins = onesided ? len / 2 + 1 : len;
  const int64_t outer = product(x.dims(), 0, axis);
  const int64_t inner = product(x.dims(), axis + 1, x.dims().size() - 1);
  std::vector<int64_t> out_dims = x.dims();
  out_dims[axis] = bins;
  out_dims.back() = 2;
  const Dft dft(len, inverse);
  const double scale = inverse ? 1.0 / static_cast<double>(len) : 1.0;
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    Tensor& y = ctx.make_output(0, x.dtype(), out_dims);
    T* py = y.data<T>();
    const int64_t m = std::min(n_in, len);
    std::vector<double> sig(static_cast<size_t>(2 * m)), res(static_cast<size_t>(2 * bins));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        for (int64_t j = 0; j < m; ++j) {
          const T* e = px + ((o * n_in + j) * inner + i) * comps;
          sig[2 * j] = static_cast<double>(e[0]);
          sig[2 * j + 1] = comps == 2 ? static_cast<double>(e[1]) : 0.0;
        }
        dft.run(sig.data(), m, res.data(), bins, scale);
        for (int64_t k = 0; k < bins; ++k) {
          T* e = py + ((o * bins + k) * inner + i) * 2;
          e[0] = static_cast<T>(res[2 * k]);
          e[1] = static_cast<T>(res[2 * k + 1]);
        }
      }
  });
}

// ---------------------------------------------------------------- STFT

void infer_stft(InferContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (!dtype_is_float(x.dtype)) ctx.fail("signal must be floating-point, got " + x.str());
  const bool onesided = ctx.node().attr_int("onesided", 1) != 0;
  if (x.rank_known && x.rank() != 3) ctx.fail("signal must be [batch, length, 1|2], got " + x.str());
  if (x.rank_known && x.dims[2].is_static() && x.dims[2].value != 1 && x.dims[2].value != 2)
    ctx.fail("signal's last dim must be 1 (real) or 2 (complex), got " + x.str());
  if (onesided && x.rank_known && x.dims[2].is_static() && x.dims[2].value == 2)
    ctx.fail("onesided needs a real signal, got " + x.str());
  if (!ctx.has_input(2) && !ctx.has_input(3)) ctx.fail("needs a window or a frame_length");
  ir::Dim frame = ctx.fresh_dim();
  if (ctx.has_input(3)) {
    if (const Tensor* v = ctx.value(3)) frame = ir::Dim(scalar_int(ctx, *v, "frame_length"));
  } else {
    const ir::TensorType& w = ctx.input(2);
    if (w.rank_known && w.rank() != 1) ctx.fail("window must be 1-D, got " + w.str());
    if (w.rank_known) frame = w.dims[0];
  }
  if (frame.is_static() && frame.value < 1) ctx.fail("frame_length must be positive");
  ir::Dim frames = ctx.fresh_dim();
  const Tensor* step = ctx.value(1);
  if (step && frame.is_static() && x.rank_known && x.dims[1].is_static()) {
    const int64_t s = scalar_int(ctx, *step, "frame_step");
    if (s < 1) ctx.fail("frame_step must be positive");
    if (x.dims[1].value < frame.value) ctx.fail("the signal is shorter than one frame");
    frames = ir::Dim((x.dims[1].value - frame.value) / s + 1);
  }
  const ir::Dim bins = !onesided ? frame : frame.is_static() ? ir::Dim(frame.value / 2 + 1) : ctx.fresh_dim();
  ctx.set_output(0, x.dtype, {x.rank_known ? x.dims[0] : ctx.fresh_dim(), frames, bins, ir::Dim(2)});
}

void stft_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool onesided = ctx.node().attr_int("onesided", 1) != 0;
  if (x.rank() != 3 || (x.dim(2) != 1 && x.dim(2) != 2))
    ctx.fail("signal must be [batch, length, 1|2], got " + x.describe());
  const int64_t comps = x.dim(2);
  if (onesided && comps == 2) ctx.fail("onesided needs a real signal, got " + x.describe());
  const int64_t step = scalar_int(ctx, ctx.input(1), "frame_step");
  if (step < 1) ctx.fail("frame_step must be positive, got " + std::to_string(step));
  const Tensor* window = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (window && window->rank() != 1) ctx.fail("window must be 1-D, got " + window->describe());
  int64_t frame = window ? window->dim(0) : 0;
  if (ctx.has_input(3)) {
    frame = scalar_int(ctx, ctx.input(3), "frame_length");
    if (window && window->dim(0) != frame)
      ctx.fail("window " + window->describe() + " does not match frame_length " + std::to_string(frame));
  } else if (!window) {
    ctx.fail("needs a window or a frame_length");
  }
  if (frame < 1) ctx.fail("frame_length must be positive");
  const int64_t batch = x.dim(0), length = x.dim(1);
  if (length < frame) ctx.fail("the signal (" + std::to_string(length) + " samples) is shorter than one frame");
  const int64_t frames = (length - frame) / step + 1;
  const int64_t bins = onesided ? frame / 2 + 1 : frame;
  const Dft dft(frame, false);
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    Tensor& y = ctx.make_output(0, x.dtype(), {batch, frames, bins, 2});
    T* py = y.data<T>();
    std::vector<double> win(static_cast<size_t>(frame), 1.0), sig(static_cast<size_t>(2 * frame)),
        res(static_cast<size_t>(2 * bins));
    if (window)
      for (int64_t j = 0; j < frame; ++j) win[j] = window->as_double(j);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t f = 0; f < frames; ++f) {
        const T* base = px + (b * length + f * step) * comps;
        for (int64_t j = 0; j < frame; ++j) {
          sig[2 * j] = static_cast<double>(base[j * comps]) * win[j];
          sig[2 * j + 1] = comps == 2 ? static_cast<double>(base[j * comps + 1]) * win[j] : 0.0;
        }
        dft.run(sig.data(), frame, res.data(), bins, 1.0);
        T* out = py + (b * frames + f) * bins * 2;
        for (int64_t k = 0; k < 2 * bins; ++k) out[k] = static_cast<T>(res[k]);
      }
  });
}

// ---------------------------------------------------------------- windows

DType output_datatype(const ir::Node& node) {
  const DType t = dtype_from_onnx(static_cast<int32_t>(node.attr_int("output_datatype", 1)));
  if (!dtype_is_float(t) && !dtype_is_integer(t))
    throw Error(node.describe() + ": output_datatype must be numeric, got " + dtype_name(t));
  return t;
}

void infer_window(InferContext& ctx) {
  const DType out = output_datatype(ctx.node());
  const ir::TensorType& s = ctx.input(0);
  if (!dtype_is_integer(s.dtype)) ctx.fail("size must be an integer scalar, got " + s.str());
  if (s.rank_known && s.rank() > 1) ctx.fail("size must be a scalar, got " + s.str());
  if (const Tensor* v = ctx.value(0)) {
    const int64_t n = scalar_int(ctx, *v, "size");
    if (n < 0) ctx.fail("size must be >= 0, got " + std::to_string(n));
    return ctx.set_output(0, out, {ir::Dim(n)});
  }
  ctx.set_output(0, out, {ctx.fresh_dim()});
}

// Generalized cosine window: a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), N = size when
// periodic, size - 1 when symmetric.
KernelFn cosine_window(double a0, double a1, double a2) {
  return [=](KernelContext& ctx) {
    const DType out = output_datatype(ctx.node());
    const int64_t size = scalar_int(ctx, ctx.input(0), "size");
    if (size < 0) ctx.fail("size must be >= 0, got " + std::to_string(size));
    const bool periodic = ctx.node().attr_int("periodic", 1) != 0;
    const int64_t denom = periodic ? size : size - 1;
    Tensor& y = ctx.make_output(0, out, {size});
    dispatch_numeric(out, [&](auto tag) {
      using T = decltype(tag);
      T* p = y.data<T>();
      for (int64_t n = 0; n < size; ++n) {
        // A one-point symmetric window has no period; it is the window's peak, 1.
        const double x = denom > 0 ? 2 * kPi * static_cast<double>(n) / static_cast<double>(denom) : 0.0;
        const double v = denom > 0 ? a0 - a1 * std::cos(x) + a2 * std::cos(2 * x) : 1.0;
        p[n] = static_cast<T>(static_cast<compute_t<T>>(v));
      }
    });
  };
}

// ---------------------------------------------------------------- MelWeightMatrix

void infer_mel(InferContext& ctx) {
  const DType out = output_datatype(ctx.node());
  for (int i = 0; i < 3; ++i)
    if (!dtype_is_integer(ctx.input(i).dtype)) ctx.fail("inputs 0..2 must be integer scalars, got " + ctx.input(i).str());
  for (int i = 3; i < 5; ++i)
    if (!dtype_is_float(ctx.input(i).dtype)) ctx.fail("the edge frequencies must be floating-point, got " + ctx.input(i).str());
  const Tensor* mel = ctx.value(0);
  const Tensor* dft = ctx.value(1);
  const ir::Dim rows = dft ? ir::Dim(scalar_int(ctx, *dft, "dft_length") / 2 + 1) : ctx.fresh_dim();
  const ir::Dim cols = mel ? ir::Dim(scalar_int(ctx, *mel, "num_mel_bins")) : ctx.fresh_dim();
  if ((rows.is_static() && rows.value < 1) || (cols.is_static() && cols.value < 1))
    ctx.fail("num_mel_bins and dft_length must be positive");
  ctx.set_output(0, out, {rows, cols});
}

// Triangular filters on the mel scale, as the ONNX reference (and onnxruntime) build them:
// num_mel_bins + 2 points equally spaced in mel between the edges (spacing over all of them),
// mapped back to hertz and to FFT bins floor((dft_length + 1) * hz / sample_rate).
void mel_kernel(KernelContext& ctx) {
  const DType out = output_datatype(ctx.node());
  const int64_t mels = scalar_int(ctx, ctx.input(0), "num_mel_bins");
  const int64_t dft_length = scalar_int(ctx, ctx.input(1), "dft_length");
  const int64_t rate = scalar_int(ctx, ctx.input(2), "sample_rate");
  const double lo_hz = scalar_double(ctx, ctx.input(3), "lower_edge_hertz");
  const double hi_hz = scalar_double(ctx, ctx.input(4), "upper_edge_hertz");
  if (mels < 1 || dft_length < 1 || rate < 1) ctx.fail("num_mel_bins, dft_length and sample_rate must be positive");
  if (!(lo_hz >= 0 && lo_hz < hi_hz)) ctx.fail("need 0 <= lower_edge_hertz < upper_edge_hertz");
  const int64_t rows = dft_length / 2 + 1;
  auto to_mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  const double lo_mel = to_mel(lo_hz), step = (to_mel(hi_hz) - lo_mel) / static_cast<double>(mels + 2);
  std::vector<int64_t> bin(static_cast<size_t>(mels + 2));
  for (int64_t i = 0; i < mels + 2; ++i) {
    const double hz = 700.0 * (std::pow(10.0, (lo_mel + step * static_cast<double>(i)) / 2595.0) - 1.0);
    bin[i] = static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(rate)));
  }
  std::vector<double> w(static_cast<size_t>(rows * mels), 0.0);
  auto set = [&](int64_t r, int64_t c, double v) {
    if (r >= 0 && r < rows) w[r * mels + c] = v;
  };
  for (int64_t i = 0; i < mels; ++i) {
    const int64_t l = bin[i], c = bin[i + 1], h = bin[i + 2];
    if (c == l) set(c, i, 1.0);
    else
      for (int64_t j = l; j <= c; ++j) set(j, i, static_cast<double>(j - l) / static_cast<double>(c - l));
    if (h > c)
      for (int64_t j = c; j < h; ++j) set(j, i, static_cast<double>(h - j) / static_cast<double>(h - c));
  }
  Tensor& y = ctx.make_output(0, out, {rows, mels});
  dispatch_numeric(out, [&](auto tag) {
    using T = decltype(tag);
    T* p = y.data<T>();
    for (size_t i = 0; i < w.size(); ++i) p[i] = static_cast<T>(static_cast<compute_t<T>>(w[i]));
  });
}

}  // namespace

KILN_REGISTER_OPS(spectral) {
  reg.add({.name = "DFT", .since_version = 17, .max_version = 20, .min_inputs = 1, .max_inputs = 3, .pattern = PatternKind::Opaque,
           .infer = infer_dft, .kernel = dft_kernel});
  reg.add({.name = "STFT", .since_version = 17, .min_inputs = 2, .max_inputs = 4, .pattern = PatternKind::Opaque,
           .infer = infer_stft, .kernel = stft_kernel});
  reg.add({.name = "HannWindow", .since_version = 17, .min_inputs = 1, .max_inputs = 1, .pattern = PatternKind::Opaque,
           .infer = infer_window, .kernel = cosine_window(0.5, 0.5, 0.0)});
  reg.add({.name = "HammingWindow", .since_version = 17, .min_inputs = 1, .max_inputs = 1,
           .pattern = PatternKind::Opaque, .infer = infer_window,
           .kernel = cosine_window(25.0 / 46.0, 21.0 / 46.0, 0.0)});
  reg.add({.name = "BlackmanWindow", .since_version = 17, .min_inputs = 1, .max_inputs = 1,
           .pattern = PatternKind::Opaque, .infer = infer_window, .kernel = cosine_window(0.42, 0.5, 0.08)});
  reg.add({.name = "MelWeightMatrix", .since_version = 17, .min_inputs = 5, .max_inputs = 5,
           .pattern = PatternKind::Opaque, .infer = infer_mel, .kernel = mel_kernel});
}

}  // namespace kiln::ops
