#include "npy.h"

#include <kiln/error.h>
#include <zlib.h>

#include <cstring>
#include <fstream>
#include <sstream>

namespace kiln::cli {

namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open '" + path + "'");
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// numpy's type string ("<f4", "|b1", ...) of a kiln element type, and back.
struct NpyType {
  DType dtype;
  const char* descr;
};
constexpr NpyType kTypes[] = {{DType::Float, "<f4"},  {DType::Double, "<f8"}, {DType::Float16, "<f2"},
                              {DType::Int8, "|i1"},   {DType::UInt8, "|u1"},  {DType::Int16, "<i2"},
                              {DType::UInt16, "<u2"}, {DType::Int32, "<i4"},  {DType::UInt32, "<u4"},
                              {DType::Int64, "<i8"},  {DType::UInt64, "<u8"}, {DType::Bool, "|b1"}};

// The value of `key` in the header dict: "'descr': '<f4', 'fortran_order': False, 'shape': (1, 3), }".
std::string header_value(const std::string& h, const std::string& key, const std::string& where) {
  const size_t k = h.find("'" + key + "'");
  if (k == std::string::npos) throw Error(where + ": the .npy header has no '" + key + "'");
  size_t v = h.find(':', k);
  if (v == std::string::npos) throw Error(where + ": malformed .npy header");
  ++v;
  while (v < h.size() && h[v] == ' ') ++v;
  if (v < h.size() && h[v] == '(') return h.substr(v, h.find(')', v) - v + 1);
  const size_t end = h.find_first_of(",}", v);
  std::string s = h.substr(v, end - v);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  if (s.size() >= 2 && (s.front() == '\'' || s.front() == '"')) s = s.substr(1, s.size() - 2);
  return s;
}

Tensor parse_npy(const std::string& bytes, const std::string& where) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0) throw Error(where + ": not a .npy file");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t len = 0, at = 0;
  if (major == 1) {
    len = static_cast<unsigned char>(bytes[8]) | static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8;
    at = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw Error(where + ": truncated .npy header");
    for (int i = 0; i < 4; ++i) len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    at = 12;
  } else {
    throw Error(where + ": .npy format version " + std::to_string(major) + " is not read");
  }
  if (at + len > bytes.size()) throw Error(where + ": truncated .npy header");
  const std::string h = bytes.substr(at, len);
  const std::string descr = header_value(h, "descr", where);
  if (header_value(h, "fortran_order", where) != "False") throw Error(where + ": Fortran-ordered arrays are not read");
  DType t = DType::Undefined;
  for (const NpyType& n : kTypes)
    if (descr == n.descr || (descr.size() == 3 && descr.substr(1) == std::string(n.descr).substr(1) && descr[0] == '='))
      t = n.dtype;
  if (t == DType::Undefined) throw Error(where + ": numpy type '" + descr + "' is not read (little-endian numbers and bool)");
  std::vector<int64_t> dims;
  const std::string shape = header_value(h, "shape", where);
  for (size_t i = 1; i < shape.size();) {
    const size_t end = shape.find_first_of(",)", i);
    std::string n = shape.substr(i, end - i);
    n.erase(0, n.find_first_not_of(' '));
    if (!n.empty()) {
      char* stop = nullptr;
      const long long d = std::strtoll(n.c_str(), &stop, 10);
      if (*stop != '\0' || d < 0) throw Error(where + ": bad shape " + shape);
      dims.push_back(d);
    }
    if (end == std::string::npos || shape[end] == ')') break;
    i = end + 1;
  }
  Tensor out(t, dims);
  const size_t data = at + len;
  if (bytes.size() - data < out.nbytes())
    throw Error(where + ": holds " + std::to_string(bytes.size() - data) + " bytes of data, its shape needs " +
                std::to_string(out.nbytes()));
  if (out.nbytes()) std::memcpy(out.raw(), bytes.data() + data, out.nbytes());
  return out;
}

uint32_t le32(const std::string& b, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(b[at + i])) << (8 * i);
  return v;
}
uint16_t le16(const std::string& b, size_t at) {
  return static_cast<uint16_t>(static_cast<unsigned char>(b[at]) | static_cast<unsigned char>(b[at + 1]) << 8);
}

}  // namespace

Tensor load_npy(const std::string& path) { return parse_npy(read_file(path), path); }

std::map<std::string, Tensor> load_npz(const std::string& path) {
  const std::string z = read_file(path);
  std::map<std::string, Tensor> out;
  // The zip's local file headers in order (np.savez: stored; np.savez_compressed: deflate).
  size_t at = 0;
  while (at + 30 <= z.size() && le32(z, at) == 0x04034b50) {
    const uint16_t flags = le16(z, at + 6), method = le16(z, at + 8);
    uint32_t csize = le32(z, at + 18), usize = le32(z, at + 22);
    const uint16_t name_len = le16(z, at + 26), extra_len = le16(z, at + 28);
    if (at + 30 + name_len + extra_len > z.size()) throw Error(path + ": truncated zip entry");
    std::string name = z.substr(at + 30, name_len);
    // ZIP64 sizes in the extra field (numpy writes them for large arrays).
    size_t e = at + 30 + name_len;
    for (size_t end = e + extra_len; e + 4 <= end;) {
      const uint16_t id = le16(z, e), sz = le16(z, e + 2);
      if (id == 1 && sz >= 16) {
        usize = le32(z, e + 4);
        csize = le32(z, e + 12);
      }
      e += 4 + sz;
    }
    if (flags & 8) throw Error(path + ": zip entries with trailing data descriptors are not read");
    const size_t data = at + 30 + name_len + extra_len;
    if (data + csize > z.size()) throw Error(path + ": truncated zip entry '" + name + "'");
    std::string bytes;
    if (method == 0) {
      bytes = z.substr(data, csize);
    } else if (method == 8) {
      bytes.resize(usize);
      z_stream s{};
      if (inflateInit2(&s, -MAX_WBITS) != Z_OK) throw Error(path + ": zlib failed");
      s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(z.data() + data));
      s.avail_in = csize;
      s.next_out = reinterpret_cast<Bytef*>(bytes.data());
      s.avail_out = usize;
      const int rc = inflate(&s, Z_FINISH);
      inflateEnd(&s);
      if (rc != Z_STREAM_END) throw Error(path + ": entry '" + name + "' does not inflate");
    } else {
      throw Error(path + ": zip compression method " + std::to_string(method) + " is not read");
    }
    if (name.size() > 4 && name.substr(name.size() - 4) == ".npy") name.resize(name.size() - 4);
    out[name] = parse_npy(bytes, path + ":" + name);
    at = data + csize;
  }
  if (out.empty()) throw Error(path + ": not a .npz file (no zip entries)");
  return out;
}

void save_npy(const Tensor& t, const std::string& path) {
  const char* descr = nullptr;
  for (const NpyType& n : kTypes)
    if (n.dtype == t.dtype()) descr = n.descr;
  if (!descr) throw Error("a " + dtype_name(t.dtype()) + " tensor cannot be written as .npy");
  std::string shape = "(";
  for (size_t i = 0; i < t.dims().size(); ++i) shape += std::to_string(t.dims()[i]) + (t.dims().size() == 1 ? "," : i + 1 < t.dims().size() ? ", " : "");
  shape += ")";
  std::string h = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Header padded so that the data starts at a multiple of 64 bytes, ending in a newline.
  while ((10 + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw Error("cannot write '" + path + "'");
  const unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<unsigned char>(h.size() & 0xff),
                                 static_cast<unsigned char>(h.size() >> 8)};
  f.write(reinterpret_cast<const char*>(pre), 10);
  f.write(h.data(), static_cast<std::streamsize>(h.size()));
  f.write(static_cast<const char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
  if (!f) throw Error("cannot write '" + path + "'");
}

}  // namespace kiln::cli
