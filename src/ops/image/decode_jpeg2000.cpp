// JPEG 2000 (a JP2 file or a bare J2K codestream) through OpenJPEG, in strict mode so that a
// truncated codestream is an error rather than a partly decoded image.
//
// One or two components are gray (+ alpha), three or four RGB (+ alpha); alpha is dropped.
// Samples of other than 8 bits (up to 16) are shifted to 8, signed ones offset first, as PIL
// does. Subsampled components and YCC or CMYK colour spaces are refused as unsupported.
#include <kiln/error.h>
#include <openjpeg.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "ops/image/decode.h"

namespace kiln::ops::image {

namespace {

struct J2kSource {
  Bytes data;
  size_t at = 0;
  std::string message;
};

OPJ_SIZE_T read_bytes(void* out, OPJ_SIZE_T n, void* user) {
  J2kSource& s = *static_cast<J2kSource*>(user);
  if (s.at >= s.data.size()) return static_cast<OPJ_SIZE_T>(-1);  // the end of the stream
  n = std::min<OPJ_SIZE_T>(n, s.data.size() - s.at);
  std::memcpy(out, s.data.data() + s.at, n);
  s.at += n;
  return n;
}

OPJ_BOOL seek(OPJ_OFF_T to, void* user) {
  J2kSource& s = *static_cast<J2kSource*>(user);
  if (to < 0 || static_cast<size_t>(to) > s.data.size()) return OPJ_FALSE;
  s.at = static_cast<size_t>(to);
  return OPJ_TRUE;
}

OPJ_OFF_T skip(OPJ_OFF_T n, void* user) {
  J2kSource& s = *static_cast<J2kSource*>(user);
  const OPJ_OFF_T to = static_cast<OPJ_OFF_T>(s.at) + n;
  return seek(to, user) ? n : -1;
}

void on_error(const char* msg, void* user) {
  J2kSource& s = *static_cast<J2kSource*>(user);
  if (!s.message.empty()) return;  // the first says why
  s.message = msg;
  while (!s.message.empty() && s.message.back() == '\n') s.message.pop_back();
}

void quiet(const char*, void*) {}

// A sample of `prec` bits to 8: shifted, as PIL does (so 4 bits of 15 become 240), and clamped
// against a codestream whose values exceed its precision.
uint8_t to_8_bits(int32_t v, const opj_image_comp_t& c) {
  if (c.sgnd) v += int32_t{1} << (c.prec - 1);
  const int shift = 8 - static_cast<int>(c.prec);
  v = shift >= 0 ? v << shift : v >> -shift;
  return static_cast<uint8_t>(std::clamp(v, 0, 255));
}

}  // namespace

Image decode_jpeg2000(Bytes data) {
  J2kSource s{data};
  const bool jp2 = data.size() >= 4 && data[0] == 0 && data[1] == 0 && data[2] == 0 && data[3] == 0x0C;
  std::unique_ptr<opj_codec_t, void (*)(opj_codec_t*)> codec(opj_create_decompress(jp2 ? OPJ_CODEC_JP2 : OPJ_CODEC_J2K),
                                                             opj_destroy_codec);
  std::unique_ptr<opj_stream_t, void (*)(opj_stream_t*)> stream(opj_stream_create(OPJ_J2K_STREAM_CHUNK_SIZE, OPJ_TRUE),
                                                                opj_stream_destroy);
  if (!codec || !stream) throw Error("JPEG 2000: out of memory");
  opj_set_error_handler(codec.get(), on_error, &s);
  opj_set_warning_handler(codec.get(), quiet, nullptr);
  opj_set_info_handler(codec.get(), quiet, nullptr);
  opj_dparameters_t params;
  opj_set_default_decoder_parameters(&params);
  if (!opj_setup_decoder(codec.get(), &params) || !opj_decoder_set_strict_mode(codec.get(), OPJ_TRUE))
    throw Error("JPEG 2000: cannot set up the decoder");
  opj_stream_set_user_data(stream.get(), &s, nullptr);
  opj_stream_set_user_data_length(stream.get(), data.size());
  opj_stream_set_read_function(stream.get(), read_bytes);
  opj_stream_set_skip_function(stream.get(), skip);
  opj_stream_set_seek_function(stream.get(), seek);

  opj_image_t* raw = nullptr;
  const bool header = opj_read_header(stream.get(), codec.get(), &raw);
  std::unique_ptr<opj_image_t, void (*)(opj_image_t*)> image(raw, opj_image_destroy);
  auto fail = [&](const char* what) -> void { throw Error("JPEG 2000: " + (s.message.empty() ? what : s.message)); };
  if (!header || !image) fail("cannot read the header");
  const uint32_t n = image->numcomps;
  if (n < 1 || n > 4) throw UnsupportedError("JPEG 2000: images of " + std::to_string(n) + " components are not supported");
  if (image->color_space == OPJ_CLRSPC_SYCC || image->color_space == OPJ_CLRSPC_EYCC ||
      image->color_space == OPJ_CLRSPC_CMYK)
    throw UnsupportedError("JPEG 2000: YCC and CMYK colour spaces are not supported");
  Image img = make_image("JPEG 2000", int64_t{image->x1} - image->x0, int64_t{image->y1} - image->y0, n <= 2 ? 1 : 3);
  for (int c = 0; c < img.channels; ++c) {
    if (image->comps[c].dx != 1 || image->comps[c].dy != 1)
      throw UnsupportedError("JPEG 2000: subsampled components are not supported");
    if (image->comps[c].prec < 1 || image->comps[c].prec > 16)
      throw UnsupportedError("JPEG 2000: " + std::to_string(image->comps[c].prec) + "-bit samples are not supported");
  }
  if (!opj_decode(codec.get(), stream.get(), image.get()) || !opj_end_decompress(codec.get(), stream.get()))
    fail("cannot decode the image data");
  for (int c = 0; c < img.channels; ++c) {
    const opj_image_comp_t& comp = image->comps[c];
    if (!comp.data || comp.w != img.width || comp.h != img.height) fail("a component does not cover the image");
    for (int64_t p = 0; p < img.width * img.height; ++p) img.pixels[p * img.channels + c] = to_8_bits(comp.data[p], comp);
  }
  return img;
}

}  // namespace kiln::ops::image
