// QuantizeLinear and DequantizeLinear: one scale per tensor (opset 10), per slice along an axis
// (13) or per block of block_size slices (21), into and out of every type ONNX quantizes to:
// [u]int8, [u]int16, [u]int4, [u]int2, float8 (e4m3fn, e4m3fnuz, e5m2, e5m2fnuz) and
// float4e2m1; DequantizeLinear also reads int32.
//
// Integers: y = saturate(round_half_even(x / scale) + zero_point), computed in float32 like
// onnxruntime. Floats: y is x / scale + zero_point rounded to nearest even in the type,
// saturating unless the node sets saturate = 0 (float4e2m1 always saturates).
#include <algorithm>
#include <cmath>
#include <optional>

#include "ir/narrow_types.h"
#include "ops/core/dispatch.h"
#include "ops/core/registry.h"
#include "ops/core/shape_util.h"

namespace kiln::ops {

namespace {

struct IntRange {
  double lo, hi;
};

// The value range of a quantized integer type; nullopt for the rest.
std::optional<IntRange> int_range(DType t) {
  switch (t) {
    case DType::UInt8: return IntRange{0, 255};
    case DType::Int8: return IntRange{-128, 127};
    case DType::UInt16: return IntRange{0, 65535};
    case DType::Int16: return IntRange{-32768, 32767};
    case DType::UInt4: return IntRange{0, 15};
    case DType::Int4: return IntRange{-8, 7};
    case DType::UInt2: return IntRange{0, 3};
    case DType::Int2: return IntRange{-2, 1};
    default: return std::nullopt;
  }
}

bool is_quant_float(DType t) {
  return t == DType::Float8E4M3FN || t == DType::Float8E4M3FNUZ || t == DType::Float8E5M2 ||
         t == DType::Float8E5M2FNUZ || t == DType::Float4E2M1;
}

bool is_quantized(DType t) { return int_range(t).has_value() || is_quant_float(t); }

const char* kQuantizedTypes = "uint8, int8, uint16, int16, uint4, int4, uint2, int2, float8 or float4e2m1";

// Where element i of x finds its scale and zero point: one for the tensor, one per slice along
// `axis`, or one per `block` consecutive slices along it (the scale then has x's rank, with
// ceil(extent / block) along the axis).
struct QuantParams {
  enum class Mode { Tensor, Axis, Block } mode = Mode::Tensor;
  int64_t inner = 1, channels = 1, block = 1, blocks = 1;
  int64_t index(int64_t i) const {
    switch (mode) {
      case Mode::Tensor: return 0;
      case Mode::Axis: return (i / inner) % channels;
      case Mode::Block: {
        const int64_t outer = i / (channels * inner), a = (i / inner) % channels, in = i % inner;
        return (outer * blocks + a / block) * inner + in;
      }
    }
    return 0;
  }
};

// Opset 21's block_size (0: no blocks).
template <typename Ctx>
int64_t block_size(const Ctx& ctx) {
  if (ctx.opset() < 21) return 0;
  const int64_t b = ctx.node().attr_int("block_size", 0);
  if (b < 0) ctx.fail("block_size must be >= 0, got " + std::to_string(b));
  return b;
}

template <typename Ctx>
QuantParams quant_params(const Ctx& ctx, const std::vector<int64_t>& xd, const Tensor& scale, const Tensor* zp) {
  QuantParams p;
  if (zp && zp->dims() != scale.dims() && !(zp->numel() == 1 && scale.numel() == 1))
    ctx.fail("zero point " + zp->describe() + " must have the scale's shape " + scale.describe());
  const int64_t block = block_size(ctx);
  const int64_t rank = static_cast<int64_t>(xd.size());
  if (block > 0) {
    const int64_t axis = normalize_axis(ctx.node().attr_int("axis", 1), rank, ctx.node());
    std::vector<int64_t> want = xd;
    want[axis] = (xd[axis] + block - 1) / block;
    if (scale.dims() != want)
      ctx.fail("block_size " + std::to_string(block) + " along axis " + std::to_string(axis) + " of x[" +
               ints_str(xd) + " needs a scale of shape " + ints_str(want) + ", got " + scale.describe());
    p.mode = QuantParams::Mode::Block;
    p.channels = xd[axis];
    p.inner = product(xd, axis + 1);
    p.block = block;
    p.blocks = want[axis];
    return p;
  }
  // A one-element 1-D scale is per-tensor too (exporters emit [1]-shaped scales).
  if (scale.rank() == 0 || (scale.rank() == 1 && scale.numel() == 1)) return p;
  if (ctx.opset() < 13) ctx.fail("scale must be a scalar before opset 13, got " + scale.describe());
  if (scale.rank() != 1) ctx.fail("scale must be a scalar or 1-D, got " + scale.describe());
  const int64_t axis = normalize_axis(ctx.node().attr_int("axis", 1), rank, ctx.node());
  if (scale.numel() != xd[axis])
    ctx.fail("per-axis scale " + scale.describe() + " must have " + std::to_string(xd[axis]) + " elements (axis " +
             std::to_string(axis) + ")");
  p.mode = QuantParams::Mode::Axis;
  p.channels = xd[axis];
  p.inner = product(xd, axis + 1);
  return p;
}

// QuantizeLinear's output type: the zero point's, else (opset 21) output_dtype, else uint8.
template <typename Ctx>
DType quantize_output_type(const Ctx& ctx, std::optional<DType> zp) {
  DType out = zp ? *zp : DType::UInt8;
  if (ctx.opset() >= 21)
    if (const int64_t od = ctx.node().attr_int("output_dtype", 0); od != 0) {
      if (od < 0 || od > static_cast<int64_t>(DType::Int2) || !is_quantized(static_cast<DType>(od)))
        throw UnsupportedError(ctx.node().describe() + ": output_dtype " + std::to_string(od) + " is not one of " +
                               kQuantizedTypes);
      const DType d = static_cast<DType>(od);
      if (zp && *zp != d) ctx.fail("output_dtype " + dtype_name(d) + " differs from y_zero_point's " + dtype_name(*zp));
      out = d;
    }
  if (!is_quantized(out))
    throw UnsupportedError(ctx.node().describe() + ": quantized type " + dtype_name(out) + " is not one of " +
                           kQuantizedTypes);
  // Opset 23's precision: kiln divides in float32, which is what it names or (absent) what a
  // float32 scale gives.
  if (ctx.opset() >= 23)
    if (const int64_t prec = ctx.node().attr_int("precision", 0); prec != 0 && prec != static_cast<int64_t>(DType::Float))
      throw UnsupportedError(ctx.node().describe() + ": precision " + std::to_string(prec) +
                             " is not supported (kiln quantizes in float32)");
  return out;
}

// DequantizeLinear's output type: (opset 23) output_dtype when given, else the scale's.
template <typename Ctx>
DType dequantize_output_type(const Ctx& ctx, DType scale) {
  DType out = scale;
  if (ctx.opset() >= 23)
    if (const int64_t od = ctx.node().attr_int("output_dtype", 0); od != 0) out = static_cast<DType>(od);
  if (out != DType::Float && out != DType::Float16 && out != DType::BFloat16 && out != DType::Double)
    ctx.fail("the output type must be floating-point, got " + std::to_string(static_cast<int>(out)));
  return out;
}

// Without blocks, scale and zero point are scalars or 1-D.
void check_param_type(InferContext& ctx, int i, const char* what) {
  if (!ctx.has_input(i) || block_size(ctx) > 0) return;
  const ir::TensorType& t = ctx.input(i);
  if (t.rank_known && t.rank() > 1) ctx.fail(std::string(what) + " must be a scalar or 1-D, got " + t.str());
}

void infer_quantize(InferContext& ctx) {
  check_param_type(ctx, 1, "y_scale");
  check_param_type(ctx, 2, "y_zero_point");
  const DType out =
      quantize_output_type(ctx, ctx.has_input(2) ? std::optional<DType>(ctx.input(2).dtype) : std::nullopt);
  if (!dtype_is_float(ctx.input(1).dtype)) ctx.fail("y_scale must be floating-point, got " + ctx.input(1).str());
  infer_same_shape(ctx, out);
}

void quantize_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  const QuantParams p = quant_params(ctx, x.dims(), scale, zp);
  const DType out = quantize_output_type(ctx, zp ? std::optional<DType>(zp->dtype()) : std::nullopt);
  const bool sat = ctx.node().attr_int("saturate", 1) != 0;
  const std::optional<IntRange> range = int_range(out);
  Tensor& y = ctx.make_output(0, out, x.dims());
  dispatch_numeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    // x / scale + zero point in float32, then rounded and stored by `store`.
    auto each = [&](auto store) {
      for (int64_t i = 0; i < x.numel(); ++i) {
        const int64_t c = p.index(i);
        const float s = static_cast<float>(scale.as_double(c));
        const float z = zp ? static_cast<float>(zp->as_double(c)) : 0.f;
        store(i, static_cast<float>(static_cast<compute_t<T>>(px[i])) / s, z);
      }
    };
    auto rounded = [&](float q, float z) {
      const float v = std::nearbyint(q) + z;
      return std::isnan(v) ? 0.f : std::min(static_cast<float>(range->hi), std::max(static_cast<float>(range->lo), v));
    };
    if (!range) {
      uint8_t* py = y.data<uint8_t>();
      each([&](int64_t i, float q, float z) { py[i] = ir::narrow_from_double(out, q + z, sat); });
    } else if (dtype_is_narrow(out)) {
      uint8_t* py = y.data<uint8_t>();
      each([&](int64_t i, float q, float z) { py[i] = ir::narrow_from_double(out, rounded(q, z)); });
    } else {
      dispatch_int(out, [&](auto qtag) {
        using Q = decltype(qtag);
        Q* py = y.data<Q>();
        each([&](int64_t i, float q, float z) { py[i] = static_cast<Q>(rounded(q, z)); });
      });
    }
  });
}

void infer_dequantize(InferContext& ctx) {
  check_param_type(ctx, 1, "x_scale");
  check_param_type(ctx, 2, "x_zero_point");
  const DType x = ctx.input(0).dtype;
  if (x != DType::Undefined && !is_quantized(x) && x != DType::Int32)
    throw UnsupportedError(ctx.node().describe() + ": x of " + ctx.input(0).str() + " is not one of " + kQuantizedTypes +
                           " or int32");
  if (ctx.has_input(2) && ctx.input(2).dtype != x)
    ctx.fail("x_zero_point must have x's dtype, got " + ctx.input(2).str());
  if (!dtype_is_float(ctx.input(1).dtype)) ctx.fail("x_scale must be floating-point, got " + ctx.input(1).str());
  infer_same_shape(ctx, dequantize_output_type(ctx, ctx.input(1).dtype));
}

void dequantize_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (!is_quantized(x.dtype()) && x.dtype() != DType::Int32)
    ctx.fail(std::string("x must be ") + kQuantizedTypes + " or int32, got " + x.describe());
  if (zp && zp->dtype() != x.dtype()) ctx.fail("x_zero_point must have x's dtype, got " + zp->describe());
  const QuantParams p = quant_params(ctx, x.dims(), scale, zp);
  const DType out = dequantize_output_type(ctx, scale.dtype());
  dispatch_float(out, [&](auto tag) {
    using F = decltype(tag);
    Tensor& y = ctx.make_output(0, out, x.dims());
    F* py = y.data<F>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      const int64_t c = p.index(i);
      const float z = zp ? static_cast<float>(zp->as_double(c)) : 0.f;
      py[i] = static_cast<F>((static_cast<float>(x.as_double(i)) - z) * static_cast<float>(scale.as_double(c)));
    }
  });
}

}  // namespace

KILN_REGISTER_OPS(quantize_linear) {
  reg.add({.name = "QuantizeLinear", .since_version = 10, .max_version = 23, .min_inputs = 2, .max_inputs = 3,
           .pattern = PatternKind::ElemWise, .infer = infer_quantize, .kernel = quantize_kernel});
  reg.add({.name = "DequantizeLinear", .since_version = 10, .max_version = 23, .min_inputs = 2, .max_inputs = 3,
           .pattern = PatternKind::ElemWise, .infer = infer_dequantize, .kernel = dequantize_kernel});
}

}  // namespace kiln::ops
