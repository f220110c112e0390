// ImageDecoder (opset 20): an encoded image, uint8[N] (BMP, JPEG, JPEG 2000, PNG, PNM, TIFF or
// WebP, told apart by their first bytes), to uint8[H, W, C]: C = 3 for pixel_format "RGB" (the
// default) and "BGR", 1 for "Grayscale". The decoders are in src/ops/image/.
//
// ONNX's reference opens the stream with PIL, so the pixels are PIL's: a gray image gives equal
// R, G and B; Grayscale from colour is PIL's ITU-R 601-2 luma in 16-bit fixed point,
//   L = (19595 R + 38470 G + 7471 B + 2^15) >> 16.
// The spec lets a stream that cannot be decoded give an empty tensor; kiln fails instead, naming
// the node, the format and the reason, so a corrupt file is never taken for an empty image.
#include <string>

#include "ops/core/registry.h"
#include "ops/image/decode.h"

namespace kiln::ops {

namespace {

enum class PixelFormat { RGB, BGR, Grayscale };

PixelFormat pixel_format_of(const ir::Node& node) {
  const std::string f = node.attr_string("pixel_format", "RGB");
  if (f == "RGB") return PixelFormat::RGB;
  if (f == "BGR") return PixelFormat::BGR;
  if (f == "Grayscale") return PixelFormat::Grayscale;
  throw Error(node.describe() + ": pixel_format must be RGB, BGR or Grayscale, got '" + f + "'");
}

void infer_image_decoder(InferContext& ctx) {
  const PixelFormat format = pixel_format_of(ctx.node());
  const ir::TensorType& x = ctx.input(0);
  if (x.dtype != DType::UInt8) ctx.fail("the encoded stream must be uint8, got " + x.str());
  if (x.rank_known && x.rank() != 1) ctx.fail("the encoded stream must be 1-D, got " + x.str());
  ctx.set_output(0, DType::UInt8, {ctx.fresh_dim(), ctx.fresh_dim(), ir::Dim(format == PixelFormat::Grayscale ? 1 : 3)});
}

void image_decoder_kernel(KernelContext& ctx) {
  const PixelFormat format = pixel_format_of(ctx.node());
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::UInt8 || x.rank() != 1) ctx.fail("the encoded stream must be uint8 and 1-D, got " + x.describe());
  image::Image img;
  try {
    img = image::decode_image(image::Bytes(x.data<uint8_t>(), static_cast<size_t>(x.numel())));
  } catch (const UnsupportedError& e) {
    throw UnsupportedError(ctx.node().describe() + ": " + e.what());
  } catch (const Error& e) {
    ctx.fail(e.what());
  }
  const int channels = format == PixelFormat::Grayscale ? 1 : 3;
  Tensor& y = ctx.make_output(0, DType::UInt8, {img.height, img.width, channels});
  uint8_t* out = y.data<uint8_t>();
  const uint8_t* in = img.pixels.data();
  for (int64_t p = 0; p < img.height * img.width; ++p, in += img.channels, out += channels) {
    if (img.channels == 1) {
      for (int c = 0; c < channels; ++c) out[c] = in[0];
    } else if (format == PixelFormat::Grayscale) {
      out[0] = static_cast<uint8_t>((19595 * in[0] + 38470 * in[1] + 7471 * in[2] + (1 << 15)) >> 16);
    } else {
      const bool bgr = format == PixelFormat::BGR;
      out[0] = in[bgr ? 2 : 0], out[1] = in[1], out[2] = in[bgr ? 0 : 2];
    }
  }
}

}  // namespace

KILN_REGISTER_OPS(image_decoder) {
  reg.add({.name = "ImageDecoder", .since_version = 20, .min_inputs = 1, .max_inputs = 1,
           .pattern = PatternKind::Opaque, .infer = infer_image_decoder, .kernel = image_decoder_kernel});
}

}  // namespace kiln::ops
