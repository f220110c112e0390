#include "codegen/cpp/weights_blob.h"

#include <cstring>
#include <functional>

namespace kiln::codegen {

uint64_t weights_checksum(std::string_view payload) {
  uint64_t h = 1469598103934665603ull;
  size_t i = 0;
  for (; i + 8 <= payload.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, payload.data() + i, 8);
    h = (h ^ w) * 1099511628211ull;
  }
  for (; i < payload.size(); ++i) h = (h ^ static_cast<unsigned char>(payload[i])) * 1099511628211ull;
  return h;
}

int64_t WeightsBlob::add(const std::string& key, std::string_view bytes) {
  const std::string k = key + '\0' + std::to_string(std::hash<std::string_view>{}(bytes)) + ":" +
                        std::to_string(bytes.size());
  auto it = by_key_.find(k);
  if (it != by_key_.end() && std::string_view(payload_).substr(it->second, bytes.size()) == bytes) return it->second;
  payload_.resize((payload_.size() + 63) / 64 * 64, '\0');
  const int64_t at = static_cast<int64_t>(payload_.size());
  payload_.append(bytes);
  by_key_[k] = at;
  return at;
}

std::string WeightsBlob::file() const {
  std::string f(kWeightsHeaderBytes, '\0');
  std::memcpy(f.data(), "KILNWTS1", 8);
  const uint64_t n = payload_.size(), sum = weights_checksum(payload_);
  std::memcpy(f.data() + 8, &n, 8);
  std::memcpy(f.data() + 16, &sum, 8);
  return f + payload_;
}

}  // namespace kiln::codegen
