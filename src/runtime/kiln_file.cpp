#include "runtime/kiln_file.h"

#include <kiln/error.h>
#include <kiln/limits.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "frontend/onnx/importer.h"

namespace kiln::runtime {

namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'F', 'I', 'L', 'E'};
constexpr size_t kAlign = 64;
constexpr uint32_t kMaxSections = 1 << 16;

template <typename T>
void put(std::string& s, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  s.append(b, sizeof(T));
}

template <typename T>
T get(std::string_view s, size_t at) {
  T v;
  std::memcpy(&v, s.data() + at, sizeof(T));
  return v;
}

size_t header_bytes(uint32_t sections) { return 16 + 16 * static_cast<size_t>(sections) + 8; }

Error damaged(const std::string& why) { return Error(".kiln file: " + why + " (damaged or not a .kiln file)"); }

}  // namespace

uint64_t kiln_checksum(std::string_view bytes, size_t from) {
  // Four independent lanes of 64-bit words through a multiply-xorshift mix, combined at the
  // end: the multiplies of one lane wait on each other, four lanes keep the multiplier busy, so
  // a 100 MB file is checked in a few milliseconds; any flipped bit changes the result.
  constexpr uint64_t kMul = 0xBF58476D1CE4E5B9ull;
  uint64_t h[4] = {0x9E3779B97F4A7C15ull ^ (bytes.size() - from), 0xC2B2AE3D27D4EB4Full, 0x165667B19E3779F9ull,
                   0x27D4EB2F165667C5ull};
  const char* p = bytes.data();
  size_t i = from;
  for (; i + 32 <= bytes.size(); i += 32)
    for (int l = 0; l < 4; ++l) {
      uint64_t w;
      std::memcpy(&w, p + i + 8 * l, 8);
      h[l] = (h[l] ^ w) * kMul;
      h[l] ^= h[l] >> 31;
    }
  uint64_t r = h[0];
  for (int l = 1; l < 4; ++l) {
    r = (r ^ h[l]) * kMul;
    r ^= r >> 31;
  }
  for (; i < bytes.size(); ++i) {
    r = (r ^ static_cast<unsigned char>(p[i])) * 0x94D049BB133111EBull;
    r ^= r >> 29;
  }
  return r;
}

std::string serialize_kiln_file(const KilnFile& f) {
  std::vector<std::string_view> sections;
  const std::string manifest = f.manifest.dump();
  sections.push_back(manifest);
  sections.push_back(f.constants);
  sections.push_back(f.graph);
  for (std::string_view g : f.plan_graphs) sections.push_back(g);
  const uint32_t n = static_cast<uint32_t>(sections.size());
  std::string out(kMagic, sizeof kMagic);
  put<uint32_t>(out, kKilnFileFormat);
  put<uint32_t>(out, n);
  size_t at = (header_bytes(n) + kAlign - 1) / kAlign * kAlign;
  std::vector<size_t> offsets;
  for (std::string_view s : sections) {
    offsets.push_back(at);
    put<uint64_t>(out, at);
    put<uint64_t>(out, s.size());
    at = (at + s.size() + kAlign - 1) / kAlign * kAlign;
  }
  put<uint64_t>(out, 0);  // the checksum, below
  for (size_t i = 0; i < sections.size(); ++i) {
    out.resize(offsets[i], '\0');
    out += sections[i];
  }
  reseal_kiln_file(out);
  return out;
}

void reseal_kiln_file(std::string& bytes) {
  if (bytes.size() < 16) throw damaged("shorter than its header");
  const uint32_t n = get<uint32_t>(bytes, 12);
  if (n > kMaxSections || bytes.size() < header_bytes(n)) throw damaged("shorter than its header");
  const uint64_t h = kiln_checksum(bytes, header_bytes(n));
  std::memcpy(bytes.data() + header_bytes(n) - 8, &h, 8);
}

KilnFile parse_kiln_file(std::string_view bytes) {
  if (bytes.size() < 16 || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) throw damaged("no KILNFILE header");
  const uint32_t format = get<uint32_t>(bytes, 8);
  if (format != kKilnFileFormat)
    throw Error(".kiln file: format " + std::to_string(format) + ", this kiln reads format " +
                std::to_string(kKilnFileFormat) + " (compile the model again with this kiln)");
  const uint32_t n = get<uint32_t>(bytes, 12);
  if (n < 3 || n > kMaxSections || bytes.size() < header_bytes(n)) throw damaged("bad section table");
  if (get<uint64_t>(bytes, header_bytes(n) - 8) != kiln_checksum(bytes, header_bytes(n)))
    throw damaged("checksum mismatch");
  std::vector<std::string_view> sections;
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t off = get<uint64_t>(bytes, 16 + 16 * i), len = get<uint64_t>(bytes, 24 + 16 * i);
    if (off < header_bytes(n) || off > bytes.size() || len > bytes.size() - off)
      throw damaged("section " + std::to_string(i) + " lies outside the file");
    sections.push_back(bytes.substr(off, len));
  }
  KilnFile f;
  f.manifest = nlohmann::json::parse(sections[0], nullptr, false);
  if (f.manifest.is_discarded() || !f.manifest.is_object()) throw damaged("its manifest is not a JSON object");
  f.constants = sections[1];
  f.graph = sections[2];
  for (uint32_t i = 3; i < n; ++i) f.plan_graphs.push_back(sections[i]);
  return f;
}

bool looks_like_kiln_file(std::string_view bytes) {
  return bytes.size() >= sizeof kMagic && std::memcmp(bytes.data(), kMagic, sizeof kMagic) == 0;
}

bool is_kiln_file(const std::string& path) {
  // Only regular files are opened: a FIFO would block, and the model loader names the problem.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  char head[sizeof kMagic] = {};
  in.read(head, sizeof head);
  return in.gcount() == sizeof head && std::memcmp(head, kMagic, sizeof kMagic) == 0;
}

void write_kiln_file(const std::string& path, const KilnFile& f) {
  const std::string bytes = serialize_kiln_file(f);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error("cannot write '" + path + "'");
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw Error("cannot write '" + path + "' (disk full?)");
}

KilnFile read_kiln_file(const std::string& path) {
  onnx_fe::FileBytes file = onnx_fe::read_model_file(path);
  check_memory_cap(static_cast<int64_t>(file.size), "the .kiln file '" + path + "'");
  KilnFile f = parse_kiln_file(file.view());
  f.storage = std::move(file.buffer);
  return f;
}

}  // namespace kiln::runtime
