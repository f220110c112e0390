// The format of an encoded image, from its first bytes, and the decoder for it.
#include <kiln/error.h>

#include <cstring>
#include <string>

#include "ops/image/decode.h"

namespace kiln::ops::image {

namespace {

// 2^28 pixels (16384 x 16384): far above the images models take, low enough that a corrupt
// header asking for more is refused before anything is allocated.
constexpr int64_t kMaxPixels = int64_t{1} << 28;

bool starts_with(Bytes data, const char* magic, size_t n) {
  return data.size() >= n && std::memcmp(data.data(), magic, n) == 0;
}

// "ff d8 00 ...": the first bytes, for the error on a stream of no known format.
std::string leading_hex(Bytes data) {
  static const char* digits = "0123456789abcdef";
  std::string hex;
  for (size_t i = 0; i < data.size() && i < 8; ++i) {
    if (i) hex += ' ';
    hex += digits[data[i] >> 4];
    hex += digits[data[i] & 15];
  }
  return hex;
}

}  // namespace

Image make_image(const char* format, int64_t width, int64_t height, int channels) {
  if (width <= 0 || height <= 0)
    throw Error(std::string(format) + ": bad image size " + std::to_string(width) + "x" + std::to_string(height));
  if (width > kMaxPixels / height)
    throw Error(std::string(format) + ": a " + std::to_string(width) + "x" + std::to_string(height) +
                " image is larger than kiln decodes (2^28 pixels)");
  Image img;
  img.width = width;
  img.height = height;
  img.channels = channels;
  img.pixels.resize(static_cast<size_t>(width * height * channels));
  return img;
}

Image decode_image(Bytes data) {
  if (starts_with(data, "\xFF\xD8\xFF", 3)) return decode_jpeg(data);
  if (starts_with(data, "\x89PNG\r\n\x1A\n", 8)) return decode_png(data);
  if (starts_with(data, "BM", 2)) return decode_bmp(data);
  if (starts_with(data, "II*\0", 4) || starts_with(data, "MM\0*", 4) || starts_with(data, "II+\0", 4) ||
      starts_with(data, "MM\0+", 4))
    return decode_tiff(data);
  if (starts_with(data, "RIFF", 4) && data.size() >= 12 && std::memcmp(data.data() + 8, "WEBP", 4) == 0)
    return decode_webp(data);
  if (starts_with(data, "\0\0\0\x0CjP  \r\n\x87\n", 12) || starts_with(data, "\xFF\x4F\xFF\x51", 4))
    return decode_jpeg2000(data);
  if (data.size() >= 2 && data[0] == 'P' && data[1] >= '1' && data[1] <= '6') return decode_pnm(data);
  if (data.empty()) throw Error("the encoded stream is empty");
  throw Error("not an image kiln decodes (BMP, JPEG, JPEG 2000, PNG, PNM, TIFF or WebP): it starts " +
              leading_hex(data));
}

}  // namespace kiln::ops::image
