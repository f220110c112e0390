// WebP (lossy or lossless, still) through libwebp, straight to RGB with its default fancy
// upsampling, as PIL decodes it; alpha is dropped.
#include <kiln/error.h>
#include <webp/decode.h>

#include <string>

#include "ops/image/decode.h"

namespace kiln::ops::image {

namespace {

const char* status_text(VP8StatusCode s) {
  switch (s) {
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "corrupt bitstream";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
    case VP8_STATUS_SUSPENDED: return "decoding suspended";
    case VP8_STATUS_USER_ABORT: return "decoding aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA: return "the stream is truncated";
    default: return "decoding failed";
  }
}

}  // namespace

Image decode_webp(Bytes data) {
  WebPDecoderConfig config;
  if (!WebPInitDecoderConfig(&config)) throw Error("WebP: the libwebp library does not match its headers");
  if (VP8StatusCode s = WebPGetFeatures(data.data(), data.size(), &config.input); s != VP8_STATUS_OK)
    throw Error(std::string("WebP: ") + status_text(s));
  if (config.input.has_animation) throw UnsupportedError("WebP: animated images are not supported");
  Image img = make_image("WebP", config.input.width, config.input.height, 3);
  config.output.colorspace = MODE_RGB;
  config.output.is_external_memory = 1;
  config.output.u.RGBA.rgba = img.pixels.data();
  config.output.u.RGBA.stride = static_cast<int>(img.width * 3);
  config.output.u.RGBA.size = img.pixels.size();
  const VP8StatusCode s = WebPDecode(data.data(), data.size(), &config);
  WebPFreeDecBuffer(&config.output);
  if (s != VP8_STATUS_OK) throw Error(std::string("WebP: ") + status_text(s));
  return img;
}

}  // namespace kiln::ops::image
