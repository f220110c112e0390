// A channels-last conv or pool as one kernel call: the code that declares its shape and the
// call, for an instruction of its own (emit_conv.cpp) or a layer of a banded conv chain
// (emit_conv_chain.cpp), which shrinks the shape to a band of rows.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "codegen/cpp/emit_context.h"
#include "ops/core/conv_geometry.h"

namespace kiln::codegen::cpp {

// A 2-D window op's geometry over input extents (h, w): strides, dilations and the begin/end pads.
struct Window2d {
  int64_t kh, kw, sh, sw, dh, dw;
  ops::AxisPads ph, pw;
};

// The geometry of conv or pool `n` with a kh x kw window over an h x w input; an
// UnsupportedError naming the node unless it is 2-D with a defined auto_pad.
Window2d window_of(const EmitContext& ctx, const ir::Node& n, int64_t h, int64_t w, int64_t kh, int64_t kw);

struct WindowCall {
  std::string shape_type;  // "kiln_kernels::Conv2dShape", "kiln_kernels::WinogradShape", ...
  std::string shape_init;  // its initializer for the whole tensor: "{1, 224, 224, 3, ...}"
  int64_t kh = 1, sh = 1, ph = 0, dh = 1;  // along the rows: kernel, stride, top pad, dilation
  bool winograd = false;
  // The call on shape variable `s`, input `x`, residual `z` ("nullptr": none), output `y`, team.
  std::function<std::string(const std::string& s, const std::string& x, const std::string& z, const std::string& y,
                            const std::string& team)>
      call;
  // For the kernels that compute a range of output rows reading the input rows where they are
  // (kernels/depthwise_rows.h, stem_rows.h, pointwise_rows.h): the code computing output rows
  // [oy0, oy1) of one image into y, activation included. Input row r is at base + (r - row0)
  // rows, or with ring > 0 at slot r % ring; `at` is the first input row the range reads (what a
  // 1x1 conv reads from); z the residual's first row or "nullptr". Empty for the other kernels.
  std::function<std::string(const std::string& base, const std::string& row0, const std::string& at,
                            const std::string& y, const std::string& oy0, const std::string& oy1,
                            const std::string& ring, const std::string& z)>
      rows;
  bool pointwise = false;  // rows reads exactly its output rows (a 1x1 conv)
};

// The call for kiln.FusedConv or kiln.NhwcMaxPool / NhwcAveragePool `n` (weights from its
// constant inputs, packed into ctx's weights.bin) from x_dims to y_dims (NHWC). `winograd_ok`:
// whether F(2x2, 3x3) may run it (the plan's kernel is a Winograd one). `planar`: the input is
// NCHW (a chain's image), which only the stem kernel reads (else an UnsupportedError). An
// UnsupportedError naming the node for what the kernels cannot run.
WindowCall window_call(EmitContext& ctx, const ir::Node& n, const std::vector<int64_t>& x_dims,
                       const std::vector<int64_t>& y_dims, bool winograd_ok, bool planar = false);

}  // namespace kiln::codegen::cpp
