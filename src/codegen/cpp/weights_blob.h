// The emitted project's weights.bin: every constant the generated code reads, in the layout its
// kernel wants (packed at compile time), each at a 64-byte aligned offset and stored once (equal
// bytes under equal keys share one place).
//
//   "KILNWTS1" | u64 payload bytes | u64 checksum | padding to 64 | payload
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace kiln::codegen {

constexpr int64_t kWeightsHeaderBytes = 64;

class WeightsBlob {
 public:
  // The payload offset of `bytes`, added under `key` unless the same key and bytes are there.
  int64_t add(const std::string& key, std::string_view bytes);
  const std::string& payload() const { return payload_; }
  // The file: header then payload.
  std::string file() const;

 private:
  std::string payload_;
  std::map<std::string, int64_t> by_key_;  // key + '\0' + a hash of the bytes -> offset
};

// The checksum the header holds (FNV-1a over 64-bit words and the tail); the emitted loader
// computes the same.
uint64_t weights_checksum(std::string_view payload);

}  // namespace kiln::codegen
