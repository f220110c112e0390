// PNM (Netpbm), parsed here:
//
//   P1 / P4   bitmap, plain / raw: 1 is black (0), 0 white (255); raw rows padded to a byte
//   P2 / P5   gray, plain / raw
//   P3 / P6   RGB, plain / raw
//
// The header is the magic, the width, the height and (not for bitmaps) the maximum sample
// value, 1-65535, separated by whitespace and '#' comments; raw data follows one whitespace
// byte, 2 bytes big-endian a sample when the maximum exceeds 255, plain data is decimal tokens.
// A sample v becomes round(v / max * 255), rounding half to even as PIL does (PIL keeps gray
// above 8 bits as 32-bit integers; kiln scales it like the rest). A sample above the maximum,
// or missing, is an error.
#include <kiln/error.h>

#include <cmath>
#include <string>

#include "ops/image/decode.h"

namespace kiln::ops::image {

namespace {

bool space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

struct Scanner {
  Bytes data;
  size_t at = 2;  // past the magic

  [[noreturn]] void fail(const std::string& why) const { throw Error("PNM: " + why); }

  void skip_space_and_comments() {
    while (at < data.size()) {
      if (data[at] == '#') {
        while (at < data.size() && data[at] != '\n' && data[at] != '\r') ++at;
      } else if (space(data[at])) {
        ++at;
      } else {
        return;
      }
    }
  }

  // A decimal token; `what` names it in the error.
  uint32_t number(const char* what) {
    skip_space_and_comments();
    if (at >= data.size()) fail(std::string("the stream ends before the ") + what);
    uint64_t v = 0;
    const size_t start = at;
    while (at < data.size() && data[at] >= '0' && data[at] <= '9' && at - start < 10) v = v * 10 + (data[at++] - '0');
    if (at == start || (at < data.size() && !space(data[at]) && data[at] != '#'))
      fail(std::string("bad ") + what + " at byte " + std::to_string(start));
    if (v > UINT32_MAX) fail(std::string(what) + " " + std::to_string(v) + " is too large");
    return static_cast<uint32_t>(v);
  }
};

}  // namespace

Image decode_pnm(Bytes data) {
  if (data.size() < 2 || data[0] != 'P' || data[1] < '1' || data[1] > '6') throw Error("PNM: no P1-P6 magic");
  const int kind = data[1] - '0';
  const bool plain = kind <= 3, bitmap = kind == 1 || kind == 4;
  Scanner s{data};
  const int64_t width = s.number("width"), height = s.number("height");
  const uint32_t max = bitmap ? 1 : s.number("maximum value");
  if (max < 1 || max > 65535) s.fail("the maximum value must be 1-65535, got " + std::to_string(max));
  const int channels = kind == 3 || kind == 6 ? 3 : 1;
  if (width < 1 || height < 1) s.fail("bad image size " + std::to_string(width) + "x" + std::to_string(height));
  // The pixels must all be there before anything is allocated for them: raw rows in full, and
  // at least a byte a plain sample.
  if (!plain) ++s.at;  // the one whitespace byte after the header
  const size_t row_bytes = bitmap ? static_cast<size_t>(width + 7) / 8
                                  : static_cast<size_t>(width) * channels * (max > 255 ? 2 : 1);
  const size_t need = plain ? static_cast<size_t>(width * channels) : row_bytes;
  if (s.at > data.size() || (data.size() - s.at) / need < static_cast<size_t>(height))
    s.fail("the stream is truncated (the pixels need " + std::to_string(need * height) + " bytes)");
  Image img = make_image("PNM", width, height, channels);
  const int64_t samples = static_cast<int64_t>(img.pixels.size());
  auto scaled = [&](uint32_t v) -> uint8_t {
    if (v > max) s.fail("sample " + std::to_string(v) + " exceeds the maximum value " + std::to_string(max));
    if (max == 255) return static_cast<uint8_t>(v);
    return static_cast<uint8_t>(std::nearbyint(static_cast<double>(v) / max * 255.0));
  };

  if (plain && bitmap) {  // one character a pixel, whitespace optional
    for (int64_t i = 0; i < samples; ++i) {
      s.skip_space_and_comments();
      if (s.at >= data.size()) s.fail("the stream is truncated");
      const uint8_t c = data[s.at++];
      if (c != '0' && c != '1') s.fail("bad bitmap pixel at byte " + std::to_string(s.at - 1));
      img.pixels[i] = c == '1' ? 0 : 255;
    }
  } else if (plain) {
    for (int64_t i = 0; i < samples; ++i) img.pixels[i] = scaled(s.number("sample"));
  } else {
    const uint8_t* p = data.data() + s.at;
    for (int64_t y = 0; y < height; ++y, p += row_bytes)
      for (int64_t i = 0; i < width * img.channels; ++i) {
        uint8_t& out = img.pixels[y * width * img.channels + i];
        if (bitmap) out = (p[i / 8] >> (7 - i % 8) & 1) ? 0 : 255;
        else out = scaled(max > 255 ? p[2 * i] << 8 | p[2 * i + 1] : p[i]);
      }
  }
  return img;
}

}  // namespace kiln::ops::image
