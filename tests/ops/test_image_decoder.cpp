// ImageDecoder on images made here: BMP and PNM bytes by hand, the other formats encoded with
// the libraries kiln decodes them with. Lossless formats must come back exactly; JPEG and
// lossy WebP within a few levels, and exactly consistent across pixel formats.
#include <cstdio>  // jpeglib.h uses FILE and size_t without including them
#include <jpeglib.h>
#include <kiln/error.h>
#include <openjpeg.h>
#include <png.h>
#include <tiffio.h>
#include <unistd.h>
#include <webp/encode.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "op_test_util.h"

namespace kiln::testing {

namespace {

using Pixels = std::vector<uint8_t>;

Tensor decode(const Pixels& stream, const std::string& format = "RGB") {
  return run_op({.op = "ImageDecoder",
                 .inputs = {Tensor::from_vector<uint8_t>({static_cast<int64_t>(stream.size())}, stream)},
                 .attrs = {{"pixel_format", ir::Attribute::of_string(format)}},
                 .opset = 20})[0];
}

// The error decoding `stream` gives ("" when it decodes).
std::string decode_error(const Pixels& stream) {
  try {
    decode(stream);
  } catch (const kiln::Error& e) {
    return e.what();
  }
  return "";
}

Tensor image(int64_t h, int64_t w, int64_t c, const Pixels& v) { return Tensor::from_vector<uint8_t>({h, w, c}, v); }

void expect_exact(const Tensor& actual, const Tensor& expected) { expect_near(actual, expected, 0, 0); }

// An RGB test card, h x w: every channel different across rows and columns.
Pixels card(int h, int w) {
  Pixels p;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      p.push_back(static_cast<uint8_t>(20 + 50 * y + 9 * x));
      p.push_back(static_cast<uint8_t>(230 - 40 * x - 7 * y));
      p.push_back(static_cast<uint8_t>(90 + 13 * x * y));
    }
  return p;
}

Pixels gray_of(const Pixels& rgb) {  // PIL's luma
  Pixels g;
  for (size_t i = 0; i < rgb.size(); i += 3)
    g.push_back(static_cast<uint8_t>((19595 * rgb[i] + 38470 * rgb[i + 1] + 7471 * rgb[i + 2] + 32768) >> 16));
  return g;
}

Pixels bgr_of(const Pixels& rgb) {
  Pixels b = rgb;
  for (size_t i = 0; i < b.size(); i += 3) std::swap(b[i], b[i + 2]);
  return b;
}

Pixels half(const Pixels& p) { return Pixels(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(p.size() / 2)); }

void expect_decode_error(const Pixels& stream, const std::string& part) {
  const std::string what = decode_error(stream);
  EXPECT_NE(what.find(part), std::string::npos) << "error: '" << what << "', expected it to say '" << part << "'";
  EXPECT_NE(what.find("(ImageDecoder)"), std::string::npos) << what;
}

// ---------------------------------------------------------------- encoders

Pixels encode_jpeg(const Pixels& px, int h, int w, int channels) {
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &buf, &size);
  c.image_width = w;
  c.image_height = h;
  c.input_components = channels;
  c.in_color_space = channels == 1 ? JCS_GRAYSCALE : channels == 4 ? JCS_CMYK : JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 100, TRUE);
  for (int i = 0; i < c.num_components; ++i) c.comp_info[i].h_samp_factor = c.comp_info[i].v_samp_factor = 1;
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(px.data()) + c.next_scanline * w * channels;
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  Pixels out(buf, buf + size);
  jpeg_destroy_compress(&c);
  std::free(buf);
  return out;
}

// rows: packed, stride bytes each.
Pixels encode_png(int h, int w, int color, int depth, const Pixels& rows, const std::vector<png_color>& palette = {},
                  int interlace = PNG_INTERLACE_NONE) {
  png_structp p = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(p);
  Pixels out;
  png_set_write_fn(
      p, &out,
      [](png_structp png, png_bytep d, png_size_t n) {
        auto* o = static_cast<Pixels*>(png_get_io_ptr(png));
        o->insert(o->end(), d, d + n);
      },
      nullptr);
  png_set_IHDR(p, info, w, h, depth, color, interlace, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (!palette.empty()) png_set_PLTE(p, info, palette.data(), static_cast<int>(palette.size()));
  png_write_info(p, info);
  std::vector<png_bytep> ptrs;
  const size_t stride = rows.size() / h;
  for (int y = 0; y < h; ++y) ptrs.push_back(const_cast<uint8_t*>(rows.data()) + y * stride);
  png_write_image(p, ptrs.data());
  png_write_end(p, nullptr);
  png_destroy_write_struct(&p, &info);
  return out;
}

struct TiffSpec {
  int h, w, samples, bits;
  uint16_t photometric;
  uint16_t compression = COMPRESSION_NONE;
  std::vector<uint16_t> colormap;  // R, G, B runs of 2^bits entries each
};

// rows: packed, stride bytes each. Written to a file, as libtiff writes, and read back. The
// file is this process's own: ctest runs the TIFF tests as parallel processes.
Pixels encode_tiff(const TiffSpec& s, const Pixels& rows) {
  const std::string path = ::testing::TempDir() + "kiln_test_image_decoder_" + std::to_string(::getpid()) + ".tif";
  TIFF* t = TIFFOpen(path.c_str(), "w");
  TIFFSetField(t, TIFFTAG_IMAGEWIDTH, s.w);
  TIFFSetField(t, TIFFTAG_IMAGELENGTH, s.h);
  TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, s.samples);
  TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, s.bits);
  TIFFSetField(t, TIFFTAG_PHOTOMETRIC, s.photometric);
  TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
  TIFFSetField(t, TIFFTAG_COMPRESSION, s.compression);
  TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, 2);
  if (s.samples == 4 || s.samples == 2) {
    const uint16_t extra[] = {EXTRASAMPLE_UNASSALPHA};
    TIFFSetField(t, TIFFTAG_EXTRASAMPLES, 1, extra);
  }
  if (!s.colormap.empty()) {
    const size_t n = s.colormap.size() / 3;
    TIFFSetField(t, TIFFTAG_COLORMAP, s.colormap.data(), s.colormap.data() + n, s.colormap.data() + 2 * n);
  }
  const size_t stride = rows.size() / s.h;
  for (int y = 0; y < s.h; ++y) TIFFWriteScanline(t, const_cast<uint8_t*>(rows.data()) + y * stride, y, 0);
  TIFFClose(t);
  std::ifstream f(path, std::ios::binary);
  Pixels out((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::remove(path.c_str());
  return out;
}

Pixels encode_webp(const Pixels& rgb, int h, int w, bool lossless) {
  uint8_t* buf = nullptr;
  const size_t n = lossless ? WebPEncodeLosslessRGB(rgb.data(), w, h, w * 3, &buf)
                            : WebPEncodeRGB(rgb.data(), w, h, w * 3, 100, &buf);
  Pixels out(buf, buf + n);
  WebPFree(buf);
  return out;
}

// Lossless (the reversible wavelet, one layer), to memory: a J2K codestream or a JP2 file.
Pixels encode_jpeg2000(const Pixels& px, int h, int w, int channels, OPJ_CODEC_FORMAT format, int prec = 8) {
  opj_cparameters_t params;
  opj_set_default_encoder_parameters(&params);
  params.tcp_numlayers = 1;
  params.tcp_rates[0] = 0;
  params.cp_disto_alloc = 1;
  params.numresolution = 1;
  params.tcp_mct = channels >= 3 ? 1 : 0;
  std::vector<opj_image_cmptparm_t> comps(channels);
  for (auto& c : comps) {
    std::memset(&c, 0, sizeof c);
    c.dx = c.dy = 1;
    c.w = w;
    c.h = h;
    c.prec = prec;
  }
  opj_image_t* img = opj_image_create(channels, comps.data(), channels == 1 ? OPJ_CLRSPC_GRAY : OPJ_CLRSPC_SRGB);
  img->x1 = w;
  img->y1 = h;
  for (int c = 0; c < channels; ++c)
    for (int i = 0; i < w * h; ++i) img->comps[c].data[i] = px[i * channels + c];
  struct Sink {
    Pixels bytes;
    size_t at = 0;
  } sink;
  opj_stream_t* s = opj_stream_create(OPJ_J2K_STREAM_CHUNK_SIZE, OPJ_FALSE);
  opj_stream_set_user_data(s, &sink, nullptr);
  opj_stream_set_write_function(s, [](void* d, OPJ_SIZE_T n, void* u) -> OPJ_SIZE_T {
    Sink& k = *static_cast<Sink*>(u);
    if (k.bytes.size() < k.at + n) k.bytes.resize(k.at + n);
    std::memcpy(k.bytes.data() + k.at, d, n);
    k.at += n;
    return n;
  });
  opj_stream_set_skip_function(s, [](OPJ_OFF_T n, void* u) -> OPJ_OFF_T {
    Sink& k = *static_cast<Sink*>(u);
    k.at += n;
    if (k.bytes.size() < k.at) k.bytes.resize(k.at);
    return n;
  });
  opj_stream_set_seek_function(s, [](OPJ_OFF_T to, void* u) -> OPJ_BOOL {
    static_cast<Sink*>(u)->at = static_cast<size_t>(to);
    return OPJ_TRUE;
  });
  opj_codec_t* codec = opj_create_compress(format);
  const bool ok = opj_setup_encoder(codec, &params, img) && opj_start_compress(codec, img, s) &&
                  opj_encode(codec, s) && opj_end_compress(codec, s);
  EXPECT_TRUE(ok) << "OpenJPEG could not encode the test image";
  opj_destroy_codec(codec);
  opj_stream_destroy(s);
  opj_image_destroy(img);
  return sink.bytes;
}

// A BMP with a 40-byte info header (or OS/2's 12-byte one), rows given top first, unpadded.
struct BmpSpec {
  int h, w, bits;
  uint32_t compression = 0;
  std::vector<uint32_t> masks;    // after the header
  std::vector<uint32_t> palette;  // 0xRRGGBB
  bool top_down = false;
  bool os2 = false;
};

void put(Pixels& b, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

Pixels make_bmp(const BmpSpec& s, const std::vector<Pixels>& rows) {
  const size_t stride = (static_cast<size_t>(s.w) * s.bits + 31) / 32 * 4;
  Pixels info;
  if (s.os2) {
    put(info, 12, 4), put(info, s.w, 2), put(info, s.h, 2), put(info, 1, 2), put(info, s.bits, 2);
  } else {
    put(info, 40, 4), put(info, s.w, 4), put(info, s.top_down ? -s.h : s.h, 4), put(info, 1, 2), put(info, s.bits, 2);
    put(info, s.compression, 4), put(info, static_cast<uint32_t>(stride * s.h), 4), put(info, 0, 8);
    put(info, static_cast<uint32_t>(s.palette.size()), 4), put(info, 0, 4);
  }
  for (uint32_t m : s.masks) put(info, m, 4);
  for (uint32_t c : s.palette) put(info, c, s.os2 ? 3 : 4);
  Pixels b = {'B', 'M'};
  const uint32_t offset = static_cast<uint32_t>(14 + info.size());
  put(b, static_cast<uint32_t>(offset + stride * s.h), 4), put(b, 0, 4), put(b, offset, 4);
  b.insert(b.end(), info.begin(), info.end());
  for (int i = 0; i < s.h; ++i) {
    Pixels row = rows[s.top_down ? i : s.h - 1 - i];
    row.resize(stride);
    b.insert(b.end(), row.begin(), row.end());
  }
  return b;
}

// A literal's bytes, NULs included.
template <size_t N>
Pixels bytes(const char (&s)[N]) {
  return Pixels(s, s + N - 1);
}

}  // namespace

// ---------------------------------------------------------------- pixel formats

TEST(ImageDecoder, PixelFormatsAndInference) {
  const Pixels rgb = card(3, 5);
  Pixels ppm = bytes("P6\n5 3\n255\n");
  ppm.insert(ppm.end(), rgb.begin(), rgb.end());
  expect_exact(decode(ppm), image(3, 5, 3, rgb));
  expect_exact(decode(ppm, "BGR"), image(3, 5, 3, bgr_of(rgb)));
  expect_exact(decode(ppm, "Grayscale"), image(3, 5, 1, gray_of(rgb)));
  // The luma by hand: (19595*200 + 38470*100 + 7471*50 + 32768) >> 16 = 8172318 >> 16 = 124.
  EXPECT_EQ(gray_of({200, 100, 50})[0], 124);
  // A gray image gives equal channels.
  const Tensor g = decode(bytes("P5 2 1 255 \x07\xF0"), "RGB");
  expect_exact(g, image(1, 2, 3, {7, 7, 7, 0xF0, 0xF0, 0xF0}));

  auto t = infer_op("ImageDecoder", {T(DType::UInt8, {S("n")})}, {}, 1, 20);
  EXPECT_EQ(t[0].rank(), 3);
  EXPECT_EQ(t[0].dims[2].value, 3);
  t = infer_op("ImageDecoder", {T(DType::UInt8, {100})}, {{"pixel_format", ir::Attribute::of_string("Grayscale")}}, 1, 20);
  EXPECT_EQ(t[0].dims[2].value, 1);
  EXPECT_THROW(infer_op("ImageDecoder", {T(DType::UInt8, {100})}, {{"pixel_format", ir::Attribute::of_string("RGBA")}}, 1, 20),
               kiln::Error);
  EXPECT_THROW(infer_op("ImageDecoder", {T(DType::Int8, {100})}, {}, 1, 20), kiln::Error);
  EXPECT_THROW(infer_op("ImageDecoder", {T(DType::UInt8, {1, 100})}, {}, 1, 20), kiln::Error);
  EXPECT_THROW(run_op({.op = "ImageDecoder", .inputs = {Tensor::from_vector<uint8_t>({1, 2}, {'P', '6'})}, .opset = 20}),
               kiln::Error);
}

TEST(ImageDecoder, UnknownEmptyAndTinyStreams) {
  expect_decode_error({}, "empty");
  expect_decode_error(bytes("GIF89a..."), "it starts 47 49 46 38 39 61 2e 2e");
  expect_decode_error({0xFF, 0xD8, 0xFF}, "JPEG:");
  expect_decode_error(bytes("\x89PNG\r\n\x1A\n"), "PNG:");
  expect_decode_error(bytes("BM"), "BMP: the stream is truncated");
  expect_decode_error(bytes("II*"), "not an image");
  expect_decode_error(bytes("II*\0\x08\0\0\0"), "TIFF:");
  expect_decode_error(bytes("RIFF\0\0\0\0WEBP"), "WebP:");
  expect_decode_error(bytes("\xFF\x4F\xFF\x51"), "JPEG 2000:");
  expect_decode_error(bytes("P6\n"), "PNM: the stream ends before the width");
}

// ---------------------------------------------------------------- BMP

TEST(ImageDecoder, Bmp24BitBothRowOrders) {
  const Pixels rgb = card(3, 5);
  std::vector<Pixels> rows(3);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 5; ++x)
      for (int c : {2, 1, 0}) rows[y].push_back(rgb[(y * 5 + x) * 3 + c]);
  expect_exact(decode(make_bmp({.h = 3, .w = 5, .bits = 24}, rows)), image(3, 5, 3, rgb));
  expect_exact(decode(make_bmp({.h = 3, .w = 5, .bits = 24, .top_down = true}, rows)), image(3, 5, 3, rgb));
  expect_exact(decode(make_bmp({.h = 1, .w = 1, .bits = 24}, {{9, 8, 7}}), "BGR"), image(1, 1, 3, {9, 8, 7}));
}

TEST(ImageDecoder, BmpPalettes) {
  // 1 bit, 3 wide: rows 101 and 010.
  const std::vector<uint32_t> two = {0x102030, 0xA0B0C0};
  expect_exact(decode(make_bmp({.h = 2, .w = 3, .bits = 1, .palette = two}, {{0xA0}, {0x40}})),
               image(2, 3, 3, {0xA0, 0xB0, 0xC0, 0x10, 0x20, 0x30, 0xA0, 0xB0, 0xC0,  //
                               0x10, 0x20, 0x30, 0xA0, 0xB0, 0xC0, 0x10, 0x20, 0x30}));
  // 4 bits, 3 wide: colours 2, 0, 1.
  const std::vector<uint32_t> three = {0x000000, 0xFFFFFF, 0x336699};
  expect_exact(decode(make_bmp({.h = 1, .w = 3, .bits = 4, .palette = three}, {{0x20, 0x10}})),
               image(1, 3, 3, {0x33, 0x66, 0x99, 0, 0, 0, 255, 255, 255}));
  // 8 bits under OS/2's header (3-byte palette entries).
  expect_exact(decode(make_bmp({.h = 1, .w = 2, .bits = 8, .palette = three, .os2 = true}, {{2, 1}})),
               image(1, 2, 3, {0x33, 0x66, 0x99, 255, 255, 255}));
  // Colour 3 of a 3-entry palette.
  expect_decode_error(make_bmp({.h = 1, .w = 2, .bits = 8, .palette = three}, {{0, 3}}), "BMP: pixel colour 3 is past the palette's 3");
}

TEST(ImageDecoder, BmpMasks) {
  // 16 bits, default 5-5-5: a field v of 5 bits is v * 255 / 31, truncated (16 -> 131).
  expect_exact(decode(make_bmp({.h = 1, .w = 3, .bits = 16}, {{0xFF, 0x7F, 0x21, 0x04, 0x10, 0x42}})),
               image(1, 3, 3, {255, 255, 255, 8, 8, 8, 131, 131, 131}));
  // 16 bits, 5-6-5 masks: green 1 of 63 is 4.
  expect_exact(decode(make_bmp({.h = 1, .w = 3, .bits = 16, .compression = 3, .masks = {0xF800, 0x07E0, 0x001F}},
                               {{0x00, 0xF8, 0x21, 0x08, 0xE0, 0x07}})),
               image(1, 3, 3, {255, 0, 0, 8, 4, 8, 0, 255, 0}));
  // 32 bits: B, G, R, unused.
  expect_exact(decode(make_bmp({.h = 1, .w = 2, .bits = 32}, {{1, 2, 3, 4, 5, 6, 7, 8}})), image(1, 2, 3, {3, 2, 1, 7, 6, 5}));
  expect_decode_error(make_bmp({.h = 1, .w = 1, .bits = 16, .compression = 3, .masks = {0xF00F, 0x0FF0, 0}}, {{0, 0}}),
               "not contiguous");
}

TEST(ImageDecoder, BmpErrors) {
  const Pixels ok = make_bmp({.h = 3, .w = 5, .bits = 24}, std::vector<Pixels>(3, Pixels(15, 1)));
  expect_decode_error(Pixels(ok.begin(), ok.end() - 1), "BMP: the stream is truncated");
  expect_decode_error(half(ok), "BMP: the stream is truncated");
  expect_decode_error(make_bmp({.h = 1, .w = 1, .bits = 8, .compression = 1, .palette = {0}}, {{0}}),
               "BMP: run-length compression is not supported");
  expect_decode_error(make_bmp({.h = 1, .w = 1, .bits = 7}, {{0}}), "BMP: bad bits a pixel 7");
  expect_decode_error(make_bmp({.h = 0, .w = 1, .bits = 24}, {}), "BMP: bad image size 1x0");
  Pixels bad = ok;
  bad[14] = 41;  // the info header's size
  expect_decode_error(bad, "BMP: unknown info header size 41");
  EXPECT_THROW(decode(make_bmp({.h = 1, .w = 1, .bits = 8, .compression = 2, .palette = {0}}, {{0}})), kiln::UnsupportedError);
}

// ---------------------------------------------------------------- PNM

TEST(ImageDecoder, PnmPlainAndRaw) {
  // P1: 1 is black; whitespace between pixels optional, comments anywhere.
  expect_exact(decode(bytes("P1\n# a comment\n3 2\n101\n0 1 0\n"), "Grayscale"), image(2, 3, 1, {0, 255, 0, 255, 0, 255}));
  // P4: rows padded to a byte.
  expect_exact(decode(bytes("P4 3 2\n\xA0\x40"), "Grayscale"), image(2, 3, 1, {0, 255, 0, 255, 0, 255}));
  // P2 with maximum 6: round(v / 6 * 255), half to even: 1 -> 42, 3 -> 128.
  expect_exact(decode(bytes("P2 3 1 6\n1 3 6\n"), "Grayscale"), image(1, 3, 1, {42, 128, 255}));
  expect_exact(decode(bytes("P3\n2 1\n# max\n255\n1 2 3  4 5 6\n")), image(1, 2, 3, {1, 2, 3, 4, 5, 6}));
  // P5 with 16-bit samples, big-endian: 1000 of 1000 and 500 of 1000.
  expect_exact(decode(bytes("P5 2 1 1000\n\x03\xE8\x01\xF4"), "Grayscale"), image(1, 2, 1, {255, 128}));
  expect_exact(decode(bytes("P6 1 1 255\n\x01\x02\x03")), image(1, 1, 3, {1, 2, 3}));
}

TEST(ImageDecoder, PnmErrors) {
  expect_decode_error(bytes("P6 2 1 255\n\x01\x02\x03"), "PNM: the stream is truncated (the pixels need 6 bytes)");
  expect_decode_error(bytes("P2 2 1 255\n1\n"), "PNM: the stream ends before the sample");
  expect_decode_error(bytes("P2 2 1 9\n1 10\n"), "PNM: sample 10 exceeds the maximum value 9");
  expect_decode_error(bytes("P2 2 1 0\n"), "PNM: the maximum value must be 1-65535, got 0");
  expect_decode_error(bytes("P3 x 1 255\n"), "PNM: bad width");
  expect_decode_error(bytes("P1 2 1\n1 2\n"), "PNM: bad bitmap pixel");
  // A huge header over a few bytes is refused before the pixels are allocated.
  expect_decode_error(bytes("P5 99999 99999 255\n"), "PNM: the stream is truncated");
  expect_decode_error(bytes("P2 99999 99999 255\n1 2 3"), "PNM: the stream is truncated");
}

// ---------------------------------------------------------------- JPEG

TEST(ImageDecoder, JpegColourAndGray) {
  for (auto [h, w] : {std::pair{3, 5}, std::pair{1, 1}, std::pair{17, 9}}) {
    const Pixels rgb = card(h, w);
    const Pixels jpg = encode_jpeg(rgb, h, w, 3);
    const Tensor out = decode(jpg);
    expect_near(out, image(h, w, 3, rgb), 4, 0);  // quality 100, no chroma subsampling
    // The other pixel formats are exactly this one, reordered or through PIL's luma.
    const Pixels got(out.data<uint8_t>(), out.data<uint8_t>() + out.numel());
    expect_exact(decode(jpg, "BGR"), image(h, w, 3, bgr_of(got)));
    expect_exact(decode(jpg, "Grayscale"), image(h, w, 1, gray_of(got)));
  }
  const Pixels gray = {0, 40, 80, 120, 160, 200, 240, 255, 30, 60, 90, 120, 150, 180, 210};
  const Pixels jpg = encode_jpeg(gray, 3, 5, 1);
  const Tensor g = decode(jpg, "Grayscale");
  expect_near(g, image(3, 5, 1, gray), 2, 0);
  Pixels rgb;
  for (int64_t i = 0; i < g.numel(); ++i) rgb.insert(rgb.end(), 3, g.data<uint8_t>()[i]);
  expect_exact(decode(jpg), image(3, 5, 3, rgb));
  // Four components are Adobe's inverted CMYK, as PIL reads them: stored (200, 100, 50, 128) is
  // c, m, y = 55, 155, 205 and 255 - k = 128, so R = 128 - (55 * 128 / 255, rounded: 28) = 100.
  Pixels cmyk;
  for (int i = 0; i < 15; ++i) cmyk.insert(cmyk.end(), {200, 100, 50, 128});
  Pixels expected;
  for (int i = 0; i < 15; ++i) expected.insert(expected.end(), {100, 50, 25});
  expect_near(decode(encode_jpeg(cmyk, 3, 5, 4)), image(3, 5, 3, expected), 2, 0);
}

TEST(ImageDecoder, JpegCorruptAndTruncated) {
  const Pixels jpg = encode_jpeg(card(16, 16), 16, 16, 3);
  expect_decode_error(half(jpg), "JPEG: Premature end of JPEG file");
  Pixels bad = jpg;
  for (size_t i = 2; i + 4 < bad.size(); ++i)
    if (bad[i] == 0xFF && bad[i + 1] == 0xC0) bad[i + 4] = 7;  // SOF0's sample precision
  expect_decode_error(bad, "JPEG: Unsupported JPEG data precision 7");
  Pixels huge = jpg;
  for (size_t i = 2; i + 8 < huge.size(); ++i)
    if (huge[i] == 0xFF && huge[i + 1] == 0xC0) huge[i + 5] = huge[i + 7] = 0x4E;  // 16 x 16 becomes 19984 x 19984
  expect_decode_error(huge, "JPEG: a 19984x19984 image is larger than kiln decodes (2^28 pixels)");
}

// ---------------------------------------------------------------- PNG

TEST(ImageDecoder, PngColourTypes) {
  const Pixels rgb = card(3, 5);
  expect_exact(decode(encode_png(3, 5, PNG_COLOR_TYPE_RGB, 8, rgb)), image(3, 5, 3, rgb));
  expect_exact(decode(encode_png(3, 5, PNG_COLOR_TYPE_RGB, 8, rgb, {}, PNG_INTERLACE_ADAM7)), image(3, 5, 3, rgb));
  expect_exact(decode(encode_png(1, 1, PNG_COLOR_TYPE_RGB, 8, {1, 2, 3}), "BGR"), image(1, 1, 3, {3, 2, 1}));
  // Alpha dropped, not composited.
  expect_exact(decode(encode_png(1, 2, PNG_COLOR_TYPE_RGBA, 8, {10, 20, 30, 0, 40, 50, 60, 128})),
               image(1, 2, 3, {10, 20, 30, 40, 50, 60}));
  expect_exact(decode(encode_png(1, 2, PNG_COLOR_TYPE_GRAY_ALPHA, 8, {70, 0, 80, 255}), "Grayscale"),
               image(1, 2, 1, {70, 80}));
  // 16 bits: the high byte.
  expect_exact(decode(encode_png(1, 1, PNG_COLOR_TYPE_RGB, 16, {0x12, 0xFF, 0x34, 0x00, 0xAB, 0x80})),
               image(1, 1, 3, {0x12, 0x34, 0xAB}));
  // Gray of 1 and 2 bits scaled up: 1 -> 255; 2 bits v -> 85 v.
  expect_exact(decode(encode_png(1, 3, PNG_COLOR_TYPE_GRAY, 1, {0xA0}), "Grayscale"), image(1, 3, 1, {255, 0, 255}));
  expect_exact(decode(encode_png(1, 3, PNG_COLOR_TYPE_GRAY, 2, {0x6C}), "Grayscale"), image(1, 3, 1, {85, 170, 255}));
  // A 4-bit palette, 3 wide: colours 1, 0, 2.
  const std::vector<png_color> palette = {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}};
  expect_exact(decode(encode_png(1, 3, PNG_COLOR_TYPE_PALETTE, 4, {0x10, 0x20}, palette)),
               image(1, 3, 3, {4, 5, 6, 1, 2, 3, 7, 8, 9}));
  expect_exact(decode(encode_png(1, 1, PNG_COLOR_TYPE_PALETTE, 8, {2}, palette), "Grayscale"),
               image(1, 1, 1, gray_of({7, 8, 9})));
}

TEST(ImageDecoder, PngCorruptAndTruncated) {
  const Pixels png = encode_png(3, 5, PNG_COLOR_TYPE_RGB, 8, card(3, 5));
  expect_decode_error(half(png), "PNG:");
  Pixels bad = png;
  bad[16] ^= 0x01;  // the width, under IHDR's CRC
  expect_decode_error(bad, "PNG: IHDR: CRC error");
}

// ---------------------------------------------------------------- TIFF

TEST(ImageDecoder, TiffLayouts) {
  const Pixels rgb = card(3, 5);
  expect_exact(decode(encode_tiff({.h = 3, .w = 5, .samples = 3, .bits = 8, .photometric = PHOTOMETRIC_RGB}, rgb)),
               image(3, 5, 3, rgb));
  expect_exact(decode(encode_tiff({3, 5, 3, 8, PHOTOMETRIC_RGB, COMPRESSION_LZW}, rgb), "BGR"), image(3, 5, 3, bgr_of(rgb)));
  expect_exact(decode(encode_tiff({1, 1, 3, 8, PHOTOMETRIC_RGB}, {1, 2, 3})), image(1, 1, 3, {1, 2, 3}));
  // Alpha dropped, the colour kept as stored.
  expect_exact(decode(encode_tiff({1, 2, 4, 8, PHOTOMETRIC_RGB}, {10, 20, 30, 0, 40, 50, 60, 128})),
               image(1, 2, 3, {10, 20, 30, 40, 50, 60}));
  expect_exact(decode(encode_tiff({1, 3, 1, 8, PHOTOMETRIC_MINISBLACK}, {0, 100, 255}), "Grayscale"),
               image(1, 3, 1, {0, 100, 255}));
  // 16 bits (host order, as libtiff writes them): the high byte.
  expect_exact(decode(encode_tiff({1, 1, 3, 16, PHOTOMETRIC_RGB}, {0xFF, 0x12, 0x00, 0x34, 0x80, 0xAB})),
               image(1, 1, 3, {0x12, 0x34, 0xAB}));
  // Through libtiff's RGBA reader: min-is-white, 4-bit gray (v -> 17 v), a palette (16-bit entries).
  expect_exact(decode(encode_tiff({1, 3, 1, 8, PHOTOMETRIC_MINISWHITE}, {0, 100, 255}), "Grayscale"),
               image(1, 3, 1, {255, 155, 0}));
  expect_exact(decode(encode_tiff({1, 3, 1, 4, PHOTOMETRIC_MINISBLACK}, {0x1F, 0x80}), "Grayscale"),
               image(1, 3, 1, {17, 255, 136}));
  std::vector<uint16_t> colormap(3 * 256);
  colormap[1] = 0x1100, colormap[256 + 1] = 0x2200, colormap[512 + 1] = 0x33FF;
  expect_exact(decode(encode_tiff({1, 2, 1, 8, PHOTOMETRIC_PALETTE, COMPRESSION_NONE, colormap}, {1, 0})),
               image(1, 2, 3, {0x11, 0x22, 0x33, 0, 0, 0}));
}

TEST(ImageDecoder, TiffCorruptAndTruncated) {
  const Pixels tif = encode_tiff({3, 5, 3, 8, PHOTOMETRIC_RGB}, card(3, 5));
  expect_decode_error(half(tif), "TIFF:");
  expect_decode_error(Pixels(tif.begin(), tif.begin() + 8), "TIFF:");
  Pixels bad = tif;
  bad[4] = 0xFF, bad[5] = 0xFF;  // the first directory's offset, past the end
  expect_decode_error(bad, "TIFF:");
}

// ---------------------------------------------------------------- WebP

TEST(ImageDecoder, WebpLosslessAndLossy) {
  const Pixels rgb = card(3, 5);
  expect_exact(decode(encode_webp(rgb, 3, 5, true)), image(3, 5, 3, rgb));
  expect_exact(decode(encode_webp({7, 8, 9}, 1, 1, true), "BGR"), image(1, 1, 3, {9, 8, 7}));
  const Pixels lossy = encode_webp(rgb, 3, 5, false);
  const Tensor out = decode(lossy);
  expect_near(out, image(3, 5, 3, rgb), 40, 0);  // 4:2:0 chroma on a 3x5 card
  const Pixels got(out.data<uint8_t>(), out.data<uint8_t>() + out.numel());
  expect_exact(decode(lossy, "Grayscale"), image(3, 5, 1, gray_of(got)));
  expect_decode_error(half(lossy), "WebP:");
  Pixels bad = encode_webp(rgb, 3, 5, true);
  for (size_t i = 21; i < bad.size(); ++i) bad[i] = 0xFF;  // the lossless bitstream, after its header
  expect_decode_error(bad, "WebP:");
}

// ---------------------------------------------------------------- JPEG 2000

TEST(ImageDecoder, Jpeg2000CodestreamAndJp2) {
  const Pixels rgb = card(3, 5);
  expect_exact(decode(encode_jpeg2000(rgb, 3, 5, 3, OPJ_CODEC_J2K)), image(3, 5, 3, rgb));
  expect_exact(decode(encode_jpeg2000(rgb, 3, 5, 3, OPJ_CODEC_JP2), "BGR"), image(3, 5, 3, bgr_of(rgb)));
  expect_exact(decode(encode_jpeg2000({1, 2, 3}, 1, 1, 3, OPJ_CODEC_JP2)), image(1, 1, 3, {1, 2, 3}));
  const Pixels gray = {0, 1, 2, 200, 255, 128};
  expect_exact(decode(encode_jpeg2000(gray, 2, 3, 1, OPJ_CODEC_J2K), "Grayscale"), image(2, 3, 1, gray));
  // 4-bit samples are shifted up, as PIL does: 15 -> 240.
  expect_exact(decode(encode_jpeg2000({0, 5, 15}, 1, 3, 1, OPJ_CODEC_JP2, 4), "Grayscale"), image(1, 3, 1, {0, 80, 240}));
}

TEST(ImageDecoder, Jpeg2000CorruptAndTruncated) {
  const Pixels j2k = encode_jpeg2000(card(8, 8), 8, 8, 3, OPJ_CODEC_J2K);
  expect_decode_error(half(j2k), "JPEG 2000:");
  expect_decode_error(half(encode_jpeg2000(card(8, 8), 8, 8, 3, OPJ_CODEC_JP2)), "JPEG 2000:");
  Pixels bad = j2k;
  for (size_t i = 4; i < 40 && i < bad.size(); ++i) bad[i] = 0x5A;  // the SIZ segment
  expect_decode_error(bad, "JPEG 2000:");
}

}  // namespace kiln::testing
