// Resize's geometry, shared by the reference kernel (src/ops/resize.cpp) and code generation:
// the attributes read for the op and opset, the per-axis output sizes, scales and roi, and per
// axis a plan: for every output coordinate, the input taps and their weights (nearest: 1 tap,
// linear: 2, cubic: 4, more when an antialiased downscale widens the filter; edge taps clamped,
// tf_crop_and_resize's outside points marked).
#pragma once
#include <kiln/tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::ops {

struct ResizeAttrs {
  std::string mode = "nearest";
  std::string coord = "half_pixel";
  std::string nearest = "round_prefer_floor";  // or "simple" for the opset-10 / Upsample form
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;  // opset 18: linear and cubic downscales widen the filter by 1 / scale
  double extrapolation = 0;
  std::string aspect = "stretch";
  std::vector<int64_t> axes;  // empty = all
};

ResizeAttrs read_resize_attrs(const ir::Node& node, int64_t opset);

// Where the scales / sizes / roi live for this op and opset (-1: nowhere).
struct ResizeInputSlots {
  int roi = -1, scales = -1, sizes = -1;
};
ResizeInputSlots resize_slots(const ir::Node& node, int64_t opset);

// The resolved geometry: per-axis output size, scale and roi.
struct ResizeGeometry {
  std::vector<int64_t> out;
  std::vector<double> scale, roi_start, roi_end;
};

// Scale/size/roi values may be absent (nullptr) or empty tensors, which both mean "not given".
ResizeGeometry resolve_resize(const ir::Node& node, const ResizeAttrs& a, const std::vector<int64_t>& in,
                              const Tensor* scales, const Tensor* sizes, const Tensor* roi,
                              const std::vector<float>& attr_scales);

struct ResizeAxisPlan {
  int taps = 1;
  std::vector<int64_t> idx;  // out_len * taps
  std::vector<double> w;
  std::vector<bool> extrapolate;  // per output coordinate
};

ResizeAxisPlan plan_resize_axis(const ResizeAttrs& a, int64_t len_in, int64_t len_out, double scale, double roi_s,
                                double roi_e);
// Whether the plan copies the axis unchanged.
bool is_identity(const ResizeAxisPlan& p, int64_t len_in, int64_t len_out);

// A resize as kernels run it (src/kernels/resize.h): the axes it changes, at most two, with
// their plans, the input viewed as [outer][axis 0][mid][axis 1][inner]. nullopt for none, for
// more axes, or for tf_crop_and_resize points outside the input (the reference kernel's).
struct SeparableResize {
  std::vector<size_t> axes;
  std::vector<ResizeAxisPlan> plans;
  int64_t outer = 1, mid = 1, inner = 1;
};
std::optional<SeparableResize> separable_resize(const ResizeAttrs& a, const ResizeGeometry& g,
                                                const std::vector<int64_t>& in);

}  // namespace kiln::ops
