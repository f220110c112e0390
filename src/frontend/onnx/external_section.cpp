#include "frontend/onnx/external_section.h"

#include <cstring>

namespace kiln::onnx_fe {

namespace {
constexpr size_t kAlign = 64;

uint64_t hash_bytes(const char* p, size_t n) {
  uint64_t h = 0xCBF29CE484222325ull ^ n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 0x100000001B3ull;
    h ^= h >> 29;
  }
  for (; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 0x100000001B3ull;
  return h;
}
}  // namespace

bool ExternalSectionWriter::takes(const Tensor& t) const {
  // Sub-byte types stay inline: files hold them packed, memory a byte per element.
  return t.kind() == ValueKind::Tensor && t.dtype() != DType::String && t.dtype() != DType::Undefined &&
         dtype_bits(t.dtype()) == 8 * static_cast<int>(dtype_size(t.dtype())) && t.nbytes() >= min_bytes_;
}

uint64_t ExternalSectionWriter::add(const void* data, size_t n) {
  if (auto it = by_buffer_.find(data); it != by_buffer_.end() && it->second + n <= bytes_.size() &&
                                       std::memcmp(bytes_.data() + it->second, data, n) == 0)
    return it->second;
  const char* p = static_cast<const char*>(data);
  const uint64_t h = hash_bytes(p, n);
  auto [lo, hi] = by_hash_.equal_range({n, h});
  for (auto it = lo; it != hi; ++it)
    if (std::memcmp(bytes_.data() + it->second, p, n) == 0) return by_buffer_[data] = it->second;
  const uint64_t at = (bytes_.size() + kAlign - 1) / kAlign * kAlign;
  bytes_.resize(at, '\0');
  bytes_.append(p, n);
  by_hash_.emplace(std::make_pair(uint64_t{n}, h), at);
  by_buffer_[data] = at;
  return at;
}

}  // namespace kiln::onnx_fe
