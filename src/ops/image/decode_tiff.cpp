// TIFF (the first page) through libtiff, read from memory with its messages caught per handle.
//
// Strips of 8- or 16-bit gray or RGB, the layouts PIL writes, are read as stored: 16 bits cut
// to the high byte, extra samples (alpha) dropped. Everything else goes through libtiff's RGBA
// reader (palettes, min-is-white, 1-4 bits, YCbCr, tiles, planar layouts), which premultiplies
// an unassociated alpha where PIL keeps the colour as stored (such pixels differ) and rounds 16
// bits to 8 where PIL cuts. Rows come in stored order, the Orientation tag not applied, as PIL
// opens the file.
#include <kiln/error.h>
#include <tiffio.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ops/image/decode.h"

namespace kiln::ops::image {

namespace {

// The stream libtiff reads, and its first error message.
struct TiffSource {
  Bytes data;
  toff_t at = 0;
  std::string message;
};

TiffSource& source(thandle_t h) { return *static_cast<TiffSource*>(h); }

tmsize_t read_bytes(thandle_t h, void* out, tmsize_t n) {
  TiffSource& s = source(h);
  const toff_t left = s.at < s.data.size() ? s.data.size() - s.at : 0;
  const tmsize_t got = std::min<tmsize_t>(n, static_cast<tmsize_t>(left));
  if (got > 0) std::memcpy(out, s.data.data() + s.at, static_cast<size_t>(got));
  s.at += static_cast<toff_t>(std::max<tmsize_t>(got, 0));
  return got;
}

tmsize_t write_bytes(thandle_t, void*, tmsize_t) { return -1; }

toff_t seek(thandle_t h, toff_t offset, int whence) {
  TiffSource& s = source(h);
  if (whence == SEEK_CUR) offset += s.at;
  else if (whence == SEEK_END) offset += s.data.size();
  return s.at = offset;
}

int close_source(thandle_t) { return 0; }
toff_t size(thandle_t h) { return source(h).data.size(); }
int no_map(thandle_t, void**, toff_t*) { return 0; }
void no_unmap(thandle_t, void*, toff_t) {}

int on_error(TIFF*, void* user_data, const char*, const char* fmt, va_list ap) {
  TiffSource& s = *static_cast<TiffSource*>(user_data);
  if (s.message.empty()) {
    char buf[512];
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    s.message = buf;
  }
  return 1;  // handled: libtiff's global handler stays quiet
}

int on_warning(TIFF*, void*, const char*, const char*, va_list) { return 1; }

[[noreturn]] void fail(const TiffSource& s, const char* what) {
  throw Error(std::string("TIFF: ") + (s.message.empty() ? what : s.message));
}

template <typename T>
T field(TIFF* tif, ttag_t tag) {
  T v{};
  TIFFGetFieldDefaulted(tif, tag, &v);
  return v;
}

// Strips of 8- or 16-bit unsigned gray or RGB samples, interleaved: read row by row as stored.
bool plain_layout(TIFF* tif) {
  const auto photometric = field<uint16_t>(tif, TIFFTAG_PHOTOMETRIC);
  const auto samples = field<uint16_t>(tif, TIFFTAG_SAMPLESPERPIXEL);
  const auto bits = field<uint16_t>(tif, TIFFTAG_BITSPERSAMPLE);
  return !TIFFIsTiled(tif) && (bits == 8 || bits == 16) &&
         field<uint16_t>(tif, TIFFTAG_SAMPLEFORMAT) == SAMPLEFORMAT_UINT &&
         field<uint16_t>(tif, TIFFTAG_PLANARCONFIG) == PLANARCONFIG_CONTIG &&
         ((photometric == PHOTOMETRIC_MINISBLACK && samples >= 1) || (photometric == PHOTOMETRIC_RGB && samples >= 3));
}

void read_plain(TIFF* tif, const TiffSource& s, Image& img) {
  const int samples = field<uint16_t>(tif, TIFFTAG_SAMPLESPERPIXEL);
  const int bytes = field<uint16_t>(tif, TIFFTAG_BITSPERSAMPLE) / 8;
  const tmsize_t line = TIFFScanlineSize(tif);
  if (line < static_cast<tmsize_t>(img.width) * samples * bytes) fail(s, "bad scanline size");
  std::vector<uint8_t> row(static_cast<size_t>(line));
  for (int64_t y = 0; y < img.height; ++y) {
    if (TIFFReadScanline(tif, row.data(), static_cast<uint32_t>(y), 0) < 0) fail(s, "cannot read the image data");
    uint8_t* out = img.pixels.data() + y * img.width * img.channels;
    for (int64_t x = 0; x < img.width; ++x)
      for (int c = 0; c < img.channels; ++c) {
        const uint8_t* v = row.data() + (x * samples + c) * bytes;
        uint16_t wide = v[0];
        if (bytes == 2) std::memcpy(&wide, v, 2);  // libtiff hands 16-bit samples over in host order
        out[x * img.channels + c] = static_cast<uint8_t>(bytes == 2 ? wide >> 8 : wide);
      }
  }
}

void read_rgba(TIFF* tif, const TiffSource& s, Image& img) {
  char why[1024] = "";
  if (!TIFFRGBAImageOK(tif, why)) throw UnsupportedError(std::string("TIFF: ") + why);
  std::vector<uint32_t> raster(static_cast<size_t>(img.width * img.height));
  // Asking for the file's own orientation keeps the rows as stored.
  if (!TIFFReadRGBAImageOriented(tif, static_cast<uint32_t>(img.width), static_cast<uint32_t>(img.height),
                                 raster.data(), field<uint16_t>(tif, TIFFTAG_ORIENTATION), 1))
    fail(s, "cannot read the image data");
  for (size_t i = 0; i < raster.size(); ++i) {
    img.pixels[3 * i] = static_cast<uint8_t>(TIFFGetR(raster[i]));
    img.pixels[3 * i + 1] = static_cast<uint8_t>(TIFFGetG(raster[i]));
    img.pixels[3 * i + 2] = static_cast<uint8_t>(TIFFGetB(raster[i]));
  }
}

}  // namespace

Image decode_tiff(Bytes data) {
  TiffSource s{data};
  std::unique_ptr<TIFFOpenOptions, void (*)(TIFFOpenOptions*)> options(TIFFOpenOptionsAlloc(), TIFFOpenOptionsFree);
  if (!options) throw Error("TIFF: out of memory");
  TIFFOpenOptionsSetErrorHandlerExtR(options.get(), on_error, &s);
  TIFFOpenOptionsSetWarningHandlerExtR(options.get(), on_warning, nullptr);
  // "m": no memory mapping; the stream is in memory already.
  std::unique_ptr<TIFF, void (*)(TIFF*)> tif(TIFFClientOpenExt("stream", "rm", &s, read_bytes, write_bytes, seek,
                                                               close_source, size, no_map, no_unmap, options.get()),
                                             TIFFClose);
  if (!tif) fail(s, "not a readable TIFF stream");
  const bool plain = plain_layout(tif.get());
  const int channels = plain && field<uint16_t>(tif.get(), TIFFTAG_PHOTOMETRIC) == PHOTOMETRIC_MINISBLACK ? 1 : 3;
  Image img = make_image("TIFF", field<uint32_t>(tif.get(), TIFFTAG_IMAGEWIDTH),
                         field<uint32_t>(tif.get(), TIFFTAG_IMAGELENGTH), channels);
  if (plain) read_plain(tif.get(), s, img);
  else read_rgba(tif.get(), s, img);
  return img;
}

}  // namespace kiln::ops::image
