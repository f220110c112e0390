// ONNX's padding rule for windowed ops (Conv, ConvTranspose, ConvInteger, QLinearConv, the
// pools), the one copy that shape inference, the reference kernels and the CPU backend use.
//
//   auto_pad    pads of one spatial axis
//   NOTSET      the `pads` attribute
//   VALID       none
//   SAME_UPPER  out = ceil(in / stride) windows; the total padding that makes the last window
//   SAME_LOWER  reach the input's end, split in two with the smaller half first (UPPER) or
//               the larger half first (LOWER)
//
//   in 5, kernel 2, stride 1:  out 5, total 1   SAME_UPPER [0, 1]   SAME_LOWER [1, 0]
//   in 7, kernel 3, dilation 2, stride 2:  window extent 5, out 4, total 4   both [2, 2]
//
// ConvTranspose splits its total (from output_shape or SAME's in * stride) by the same rule,
// with halves that round toward -inf (Python's //): the total goes negative when output_shape
// asks for more than the natural extent.
#pragma once
#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

enum class AutoPad { NotSet, Valid, SameUpper, SameLower };

// The auto_pad value a string names; nullopt for one ONNX does not define.
inline std::optional<AutoPad> parse_auto_pad(std::string_view s) {
  if (s == "NOTSET") return AutoPad::NotSet;
  if (s == "VALID") return AutoPad::Valid;
  if (s == "SAME_UPPER") return AutoPad::SameUpper;
  if (s == "SAME_LOWER") return AutoPad::SameLower;
  return std::nullopt;
}

// The node's auto_pad attribute (NOTSET when absent); nullopt for an undefined value.
inline std::optional<AutoPad> auto_pad_of(const ir::Node& n) {
  return parse_auto_pad(n.attr_string("auto_pad", "NOTSET"));
}

// The error for an undefined auto_pad value `got`.
inline std::string auto_pad_error(const std::string& got) {
  return "auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got '" + got + "'";
}

// The node's auto_pad for an op's shape inference or kernel: an undefined value is ctx.fail().
template <typename Ctx>
AutoPad auto_pad_or_fail(const Ctx& ctx) {
  const std::optional<AutoPad> p = auto_pad_of(ctx.node());
  if (!p) ctx.fail(auto_pad_error(ctx.node().attr_string("auto_pad", "")));
  return *p;
}

inline bool is_same_pad(AutoPad p) { return p == AutoPad::SameUpper || p == AutoPad::SameLower; }

// The padding before and after one spatial axis.
struct AxisPads {
  int64_t begin = 0, end = 0;
  bool operator==(const AxisPads&) const = default;
};

// The input extent a window of k taps spaced d apart covers.
inline int64_t dilated_extent(int64_t k, int64_t d) { return (k - 1) * d + 1; }

// SAME_*'s output extent: ceil(in / s) (in >= 0, s >= 1).
inline int64_t same_out_extent(int64_t in, int64_t s) { return (in + s - 1) / s; }

// Splits a total padding between the two ends: SAME_UPPER puts the smaller half first, every
// other mode the larger. Halves round toward -inf, so a negative total splits as Python's //.
inline AxisPads split_pad(AutoPad p, int64_t total) {
  const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
  const int64_t begin = p == AutoPad::SameUpper ? half : total - half;
  return {begin, total - begin};
}

// The SAME_* padding of an axis whose `out` windows of extent `ek` at stride `s` cover `in`
// elements: never negative (windows that end inside the input need none).
inline AxisPads same_pads(AutoPad p, int64_t in, int64_t out, int64_t ek, int64_t s) {
  return split_pad(p, std::max<int64_t>(0, (out - 1) * s + ek - in));
}

// The pads of one axis of a forward window op (kernel k, stride s, dilation d): `given` (the
// pads attribute) under NOTSET, none under VALID, same_pads with out = ceil(in / s) under SAME_*.
inline AxisPads window_pads(AutoPad p, int64_t in, int64_t k, int64_t s, int64_t d, AxisPads given) {
  if (is_same_pad(p)) return same_pads(p, in, same_out_extent(in, s), dilated_extent(k, d), s);
  if (p == AutoPad::Valid) return {};
  return given;
}

// An ONNX `pads` attribute ([begin_0, ..., end_0, ...], an entry of in/k/s/d per spatial axis)
// resolved in place with window_pads.
inline void resolve_pads(AutoPad p, std::span<const int64_t> in, std::span<const int64_t> k,
                         std::span<const int64_t> s, std::span<const int64_t> d, std::vector<int64_t>& pads) {
  const size_t n = in.size();
  for (size_t i = 0; i < n; ++i) {
    const AxisPads a = window_pads(p, in[i], k[i], s[i], d[i], {pads[i], pads[i + n]});
    pads[i] = a.begin;
    pads[i + n] = a.end;
  }
}

// One axis of a forward window op under auto_pad: its pads and output extent. SAME_*: out =
// ceil(in / s). Otherwise out = floor((padded - extent) / s) + 1, or with ceil_mode the ceiling,
// less a last window that would start past the input and its leading pad (ONNX's pool rule).
struct WindowAxis {
  AxisPads pads;
  int64_t extent = 0;  // of the dilated window
  int64_t padded = 0;  // in + pads
  int64_t out = 0;     // 0 when !fits
  bool fits = true;    // false: NOTSET / VALID with a window longer than the padded input
};

inline WindowAxis window_axis(AutoPad p, int64_t in, int64_t k, int64_t s, int64_t d, AxisPads given,
                              bool ceil_mode = false) {
  WindowAxis a;
  a.pads = window_pads(p, in, k, s, d, given);
  a.extent = dilated_extent(k, d);
  a.padded = in + a.pads.begin + a.pads.end;
  if (is_same_pad(p)) {
    a.out = same_out_extent(in, s);
    return a;
  }
  a.fits = a.padded >= a.extent;
  if (!a.fits) return a;
  a.out = (a.padded - a.extent + (ceil_mode ? s - 1 : 0)) / s + 1;
  if (ceil_mode && (a.out - 1) * s >= in + a.pads.begin) --a.out;
  return a;
}

// The spatial geometry of one convolution or pooling, an entry per spatial axis; -1 marks an
// extent unknown at compile time.
struct WindowGeom {
  int nsp = 0;
  std::vector<int64_t> in, kernel, strides, dilations, pad_begin, pad_end, out;

  // Reads the `pads` attribute (zeros when absent) into pad_begin / pad_end, an entry per axis
  // of `in`; a wrong count or a negative pad is ctx.fail().
  template <typename Ctx>
  void read_pads(const Ctx& ctx) {
    const size_t n = in.size();
    const std::vector<int64_t> pads = ctx.node().attr_ints("pads", std::vector<int64_t>(2 * n, 0));
    if (pads.size() != 2 * n) ctx.fail("pads " + ints_str(pads) + " need " + std::to_string(2 * n) + " entries");
    for (int64_t p : pads)
      if (p < 0) ctx.fail("pads " + ints_str(pads) + " must be >= 0");
    pad_begin.assign(pads.begin(), pads.begin() + n);
    pad_end.assign(pads.begin() + n, pads.end());
  }
  // window_axis of axis i (in and kernel known), from the pads read into pad_begin / pad_end.
  WindowAxis axis(int i, AutoPad p, bool ceil_mode = false) const {
    return window_axis(p, in[i], kernel[i], strides[i], dilations[i], {pad_begin[i], pad_end[i]}, ceil_mode);
  }
  // Records a (from axis(i, ...)) as axis i's pads and output extent.
  void set(int i, const WindowAxis& a) {
    pad_begin[i] = a.pads.begin;
    pad_end[i] = a.pads.end;
    out[i] = a.out;
  }
};

// The pads of one axis of a ConvTranspose that must produce `out` elements from `in` (kernel
// k, stride s, dilation d, output_padding opad): its total split by split_pad. For SAME_*
// (out = in * s) and for an output_shape under any mode.
inline AxisPads conv_transpose_pads(AutoPad p, int64_t in, int64_t out, int64_t k, int64_t s, int64_t d, int64_t opad) {
  return split_pad(p, s * (in - 1) + opad + dilated_extent(k, d) - out);
}

}  // namespace kiln::ops
