// PNG through libpng. Gray stays gray, everything else becomes RGB: palettes expanded, gray
// below 8 bits scaled up (1 -> 255), 16 bits cut to the high byte, alpha (or the transparency
// a palette's tRNS expands to) dropped. libpng's simplified API is not used: it composites
// alpha and applies gamma, which PIL does not.
//
// libpng reports a fatal error through our error function, which keeps the message and longjmps
// to png_jmpbuf; read_png, which sets it, holds no object with a destructor, as libpng's frames
// do not.
#include <kiln/error.h>
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ops/image/decode.h"

namespace kiln::ops::image {

namespace {

struct PngSource {
  Bytes data;
  size_t at = 0;
  char message[256] = "";
};

[[noreturn]] void on_error(png_structp png, png_const_charp message) {
  auto* src = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(src->message, sizeof src->message, "%s", message);
  png_longjmp(png, 1);  // to png_jmpbuf; were it to return, libpng would print the message first
}

void on_warning(png_structp, png_const_charp) {}

void read_bytes(png_structp png, png_bytep out, png_size_t n) {
  auto* src = static_cast<PngSource*>(png_get_io_ptr(png));
  if (n > src->data.size() - src->at) png_error(png, "the stream is truncated");
  std::memcpy(out, src->data.data() + src->at, n);
  src->at += n;
}

// libpng's state and the destroy it needs however decoding ends.
struct PngReader {
  png_structp png = nullptr;
  png_infop info = nullptr;
  ~PngReader() { png_destroy_read_struct(&png, info ? &info : nullptr, nullptr); }
};

// Decodes into `raw` (1-4 samples a pixel, alpha last). False, with src.message set, when
// libpng fails. The vectors are the caller's, so that nothing here needs destroying when libpng
// longjmps.
bool read_png(PngReader& r, PngSource& src, Image& img, std::vector<uint8_t>& raw, std::vector<png_bytep>& rows) {
  png_structp png = r.png;
  png_infop info = r.info;
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_read_fn(png, &src, read_bytes);
  png_read_info(png, info);
  const int color = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
  if (depth == 16) png_set_strip_16(png);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const int samples = png_get_channels(png, info);
  img = make_image("PNG", png_get_image_width(png, info), png_get_image_height(png, info), samples <= 2 ? 1 : 3);
  const size_t row_bytes = static_cast<size_t>(img.width) * samples;
  raw.resize(row_bytes * img.height);
  rows.resize(static_cast<size_t>(img.height));
  for (int64_t y = 0; y < img.height; ++y) rows[y] = raw.data() + y * row_bytes;
  png_read_image(png, rows.data());
  for (int64_t p = 0; p < img.width * img.height; ++p)
    for (int c = 0; c < img.channels; ++c) img.pixels[p * img.channels + c] = raw[p * samples + c];
  return true;
}

}  // namespace

Image decode_png(Bytes data) {
  PngSource src{data};
  PngReader r;
  r.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, on_error, on_warning);
  if (r.png) r.info = png_create_info_struct(r.png);
  if (!r.png || !r.info) throw Error("PNG: out of memory");
  Image img;
  std::vector<uint8_t> raw;
  std::vector<png_bytep> rows;
  if (!read_png(r, src, img, raw, rows)) throw Error(std::string("PNG: ") + src.message);
  return img;
}

}  // namespace kiln::ops::image
