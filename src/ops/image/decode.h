// Encoded images to pixels, for ImageDecoder (src/ops/image_decoder.cpp): one decoder per
// format (decode_<format>.cpp), picked by the stream's magic bytes (decode_image.cpp).
//
// ONNX's reference op opens the stream with PIL, so each decoder gives what PIL gives there,
// converted to RGB or kept gray: 8-bit samples; alpha dropped (not composited); palettes and
// depths below 8 bits expanded; 16-bit samples cut to their high byte (PIL does so for colour,
// but saturates 16-bit gray to 255, which kiln does not copy); no gamma, colour profile or
// orientation applied. A corrupt, truncated or unknown stream throws kiln::Error, and a valid
// one using a feature kiln lacks throws kiln::UnsupportedError, each saying the format and the
// reason; the op adds the node.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace kiln::ops::image {

using Bytes = std::span<const uint8_t>;

struct Image {
  int64_t height = 0, width = 0;
  int channels = 0;             // 1 (gray) or 3 (RGB)
  std::vector<uint8_t> pixels;  // [height, width, channels], row-major
};

// Detects the format and decodes.
Image decode_image(Bytes data);

Image decode_bmp(Bytes data);
Image decode_jpeg(Bytes data);
Image decode_jpeg2000(Bytes data);  // a JP2 file or a bare J2K codestream
Image decode_png(Bytes data);
Image decode_pnm(Bytes data);  // PBM, PGM, PPM (P1-P6)
Image decode_tiff(Bytes data);
Image decode_webp(Bytes data);

// A zeroed image of that size, or kiln::Error naming `format` when a side is not positive or
// the image is larger than kiln decodes (a corrupt header must not allocate gigabytes).
Image make_image(const char* format, int64_t width, int64_t height, int channels);

}  // namespace kiln::ops::image
