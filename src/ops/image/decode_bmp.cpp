// BMP, parsed here, always to RGB (a gray palette gives equal channels):
//
//   file header  "BM", file size (4), reserved (4), offset of the pixel rows (4)
//   info header  size 12 (OS/2): width (2), height (2), planes (2), bits a pixel (2);
//                size 40, 52, 56, 64, 108 or 124: width (4), height (4, negative = rows
//                top-down), planes (2), bits (2), compression (4), image size (4), resolution
//                (8), palette size (4), important colours (4), then from size 52 on the R, G,
//                B masks (4 each; under a 40-byte header BI_BITFIELDS puts them right after)
//   palette      1, 4 and 8 bits: B, G, R (and a pad byte, except under OS/2's header)
//   rows         bottom-up unless the height is negative, each padded to 4 bytes;
//                24 bits B, G, R; 16 and 32 bits through the masks (5-5-5 and 8-8-8 by
//                default), a field of k bits scaled to 8 as v * 255 / (2^k - 1), as PIL does
//
// Run-length (RLE4, RLE8) and embedded JPEG or PNG data are refused as unsupported.
#include <kiln/error.h>

#include <bit>
#include <string>
#include <vector>

#include "ops/image/decode.h"

namespace kiln::ops::image {

namespace {

enum Compression : uint32_t { kRgb = 0, kRle8 = 1, kRle4 = 2, kBitfields = 3, kJpeg = 4, kPng = 5, kAlphaBitfields = 6 };

uint32_t little_endian(const uint8_t* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

// Little-endian fields of the headers, bounds-checked.
struct Reader {
  Bytes data;
  uint32_t u(size_t at, int bytes) const {
    if (at + bytes > data.size()) throw Error("BMP: the stream is truncated");
    return little_endian(data.data() + at, bytes);
  }
};

// A channel mask: where its field sits and how to scale the field to 8 bits.
struct Field {
  uint32_t mask = 0;
  int shift = 0;
  uint64_t max = 0;  // 2^bits - 1
  explicit Field(uint32_t m) : mask(m) {
    if (!m) return;
    shift = std::countr_zero(m);
    const uint32_t bits = m >> shift;
    if (bits & (bits + 1)) throw Error("BMP: a channel mask's bits are not contiguous");
    max = bits;
  }
  uint8_t operator()(uint32_t pixel) const {
    if (!max) return 0;
    return static_cast<uint8_t>(((pixel & mask) >> shift) * 255 / max);
  }
};

}  // namespace

Image decode_bmp(Bytes data) {
  const Reader r{data};
  if (r.u(0, 2) != ('B' | 'M' << 8)) throw Error("BMP: the stream does not start with 'BM'");
  const uint32_t offset = r.u(10, 4), header = r.u(14, 4);
  const bool os2 = header == 12;
  if (!os2 && header != 40 && header != 52 && header != 56 && header != 64 && header != 108 && header != 124)
    throw Error("BMP: unknown info header size " + std::to_string(header));
  // Windows' width and height are signed.
  const int64_t width = os2 ? int64_t{r.u(18, 2)} : int64_t{static_cast<int32_t>(r.u(18, 4))};
  const int64_t stored_height = os2 ? int64_t{r.u(20, 2)} : int64_t{static_cast<int32_t>(r.u(22, 4))};
  const uint32_t bits = os2 ? r.u(24, 2) : r.u(28, 2);
  const uint32_t compression = os2 ? kRgb : r.u(30, 4);
  if (compression == kRle8 || compression == kRle4) throw UnsupportedError("BMP: run-length compression is not supported");
  if (compression == kJpeg || compression == kPng) throw UnsupportedError("BMP: embedded JPEG or PNG data is not supported");
  const bool masked = compression == kBitfields || compression == kAlphaBitfields;
  if (compression != kRgb && !masked) throw Error("BMP: unknown compression " + std::to_string(compression));
  if (bits != 1 && bits != 4 && bits != 8 && bits != 16 && bits != 24 && bits != 32)
    throw Error("BMP: bad bits a pixel " + std::to_string(bits));
  if (masked && bits != 16 && bits != 32) throw Error("BMP: channel masks need 16 or 32 bits a pixel");
  const bool top_down = stored_height < 0;
  const int64_t height = top_down ? -stored_height : stored_height;
  if (width <= 0 || height <= 0)
    throw Error("BMP: bad image size " + std::to_string(width) + "x" + std::to_string(height));
  // The rows must all be there before anything is allocated for them.
  const size_t stride = (static_cast<size_t>(width) * bits + 31) / 32 * 4;
  if (offset > data.size() || (data.size() - offset) / stride < static_cast<size_t>(height))
    throw Error("BMP: the stream is truncated (the rows need " + std::to_string(stride * height) + " bytes)");
  Image img = make_image("BMP", width, height, 3);

  // The R, G, B masks: in the header from 52 bytes on, else right after it (the same place).
  const size_t masks_at = 14 + 40;
  Field red(bits == 16 ? 0x7C00 : 0xFF0000), green(bits == 16 ? 0x03E0 : 0xFF00), blue(bits == 16 ? 0x001F : 0xFF);
  if (masked) {
    red = Field(r.u(masks_at, 4));
    green = Field(r.u(masks_at + 4, 4));
    blue = Field(r.u(masks_at + 8, 4));
  }

  // The palette: as many entries as it says (all 2^bits when it says 0), as far as the rows.
  std::vector<uint32_t> palette;  // 0x00RRGGBB
  if (bits <= 8) {
    const size_t entry = os2 ? 3 : 4;
    const size_t start = 14 + header;
    const uint32_t used = os2 ? 0 : r.u(46, 4);
    size_t count = used && used < (1u << bits) ? used : size_t{1} << bits;
    if (offset < start + count * entry) count = offset > start ? (offset - start) / entry : 0;
    for (size_t i = 0; i < count; ++i) palette.push_back(r.u(start + i * entry, 3));
  }

  for (int64_t y = 0; y < img.height; ++y) {
    const uint8_t* row = data.data() + offset + stride * (top_down ? y : img.height - 1 - y);
    uint8_t* out = img.pixels.data() + y * img.width * 3;
    for (int64_t x = 0; x < img.width; ++x, out += 3) {
      if (bits == 24) {
        out[0] = row[3 * x + 2], out[1] = row[3 * x + 1], out[2] = row[3 * x];
      } else if (bits == 16 || bits == 32) {
        const uint32_t px = little_endian(row + x * (bits / 8), static_cast<int>(bits / 8));
        out[0] = red(px), out[1] = green(px), out[2] = blue(px);
      } else {
        const size_t bit = static_cast<size_t>(x) * bits;
        const uint32_t index = (row[bit / 8] >> (8 - bits - bit % 8)) & ((1u << bits) - 1);
        if (index >= palette.size())
          throw Error("BMP: pixel colour " + std::to_string(index) + " is past the palette's " +
                      std::to_string(palette.size()) + " entries");
        out[0] = palette[index] >> 16 & 0xFF, out[1] = palette[index] >> 8 & 0xFF, out[2] = palette[index] & 0xFF;
      }
    }
  }
  return img;
}

}  // namespace kiln::ops::image
