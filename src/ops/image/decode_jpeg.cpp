// JPEG through libjpeg(-turbo), with PIL's settings, which are libjpeg's defaults: the accurate
// integer IDCT (islow) and fancy (smooth) chroma upsampling, as the spec describes. Gray stays
// gray; CMYK becomes RGB as PIL converts it.
//
// libjpeg reports a fatal error by calling error_exit, which must not return. Here it formats
// the message and longjmps back to read_jpeg, whose frame (like libjpeg's) holds no object with
// a destructor. Truncated or corrupt entropy data is only a warning to libjpeg (it fills the
// rest with gray); kiln makes those warnings errors, as PIL refuses a truncated file.
#include <cstdio>  // jpeglib.h uses FILE without including it
#include <jpeglib.h>
#include <jerror.h>  // the warning codes
#include <kiln/error.h>

#include <csetjmp>
#include <string>
#include <vector>

#include "ops/image/decode.h"

namespace kiln::ops::image {

namespace {

struct JpegErrors {
  jpeg_error_mgr mgr;  // first: libjpeg hands back a pointer to it
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX] = "";
};

[[noreturn]] void on_error(j_common_ptr cinfo) {
  auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
  cinfo->err->format_message(cinfo, errors->message);
  std::longjmp(errors->jump, 1);
}

void on_message(j_common_ptr cinfo, int level) {
  if (level >= 0) return;  // trace messages
  switch (cinfo->err->msg_code) {
    case JWRN_JPEG_EOF:
    case JWRN_HIT_MARKER:
    case JWRN_HUFF_BAD_CODE:
    case JWRN_ARITH_BAD_CODE:
    case JWRN_MUST_RESYNC:
      on_error(cinfo);
    default:
      break;  // e.g. extraneous bytes between markers: the image itself is whole
  }
}

// libjpeg's state and the destroy it needs however decoding ends.
struct Decompressor {
  jpeg_decompress_struct cinfo{};
  JpegErrors errors;
  bool created = false;
  std::vector<uint8_t> cmyk_row;
  ~Decompressor() {
    if (created) jpeg_destroy_decompress(&cinfo);
  }
};

// PIL reads four components as Adobe's inverted CMYK (c = 255 - stored, ...) and makes RGB of
// them as R = (255 - k) - c (255 - k) / 255 (G, B from m, y alike), rounded as its MULDIV255.
void cmyk_to_rgb(const uint8_t* in, uint8_t* out, int64_t width) {
  auto muldiv255 = [](int a, int b) { const int t = a * b + 128; return ((t >> 8) + t) >> 8; };
  for (int64_t x = 0; x < width; ++x, in += 4, out += 3) {
    const int nk = in[3];  // 255 - k
    for (int c = 0; c < 3; ++c) out[c] = static_cast<uint8_t>(nk - muldiv255(255 - in[c], nk));
  }
}

// False, with d.errors.message set, when libjpeg fails.
bool read_jpeg(Bytes data, Decompressor& d, Image& img) {
  jpeg_decompress_struct& cinfo = d.cinfo;
  cinfo.err = jpeg_std_error(&d.errors.mgr);
  d.errors.mgr.error_exit = on_error;
  d.errors.mgr.emit_message = on_message;
  if (setjmp(d.errors.jump)) return false;
  jpeg_create_decompress(&cinfo);
  d.created = true;
  jpeg_mem_src(&cinfo, data.data(), static_cast<unsigned long>(data.size()));
  if (jpeg_read_header(&cinfo, TRUE) != JPEG_HEADER_OK) throw Error("JPEG: the stream holds tables but no image");
  const bool gray = cinfo.num_components == 1, cmyk = cinfo.num_components == 4;
  cinfo.out_color_space = gray ? JCS_GRAYSCALE : cmyk ? JCS_CMYK : JCS_RGB;
  jpeg_start_decompress(&cinfo);
  img = make_image("JPEG", cinfo.output_width, cinfo.output_height, gray ? 1 : 3);
  if (cmyk) d.cmyk_row.resize(static_cast<size_t>(img.width) * 4);
  const size_t row_bytes = static_cast<size_t>(img.width) * img.channels;
  while (cinfo.output_scanline < cinfo.output_height) {
    uint8_t* out = img.pixels.data() + cinfo.output_scanline * row_bytes;
    JSAMPROW row = cmyk ? d.cmyk_row.data() : out;
    jpeg_read_scanlines(&cinfo, &row, 1);
    if (cmyk) cmyk_to_rgb(row, out, img.width);
  }
  jpeg_finish_decompress(&cinfo);
  return true;
}

}  // namespace

Image decode_jpeg(Bytes data) {
  Decompressor d;
  Image img;
  if (!read_jpeg(data, d, img)) throw Error(std::string("JPEG: ") + d.errors.message);
  return img;
}

}  // namespace kiln::ops::image
