// ONNX external data kept in one in-memory section instead of files beside the model: the
// .kiln file stores every graph's weights once, in a constants section, and its graphs name
// that section as their initializers' location. Writing, ExternalSectionWriter appends each
// distinct tensor at a 64-byte aligned offset; reading, an ExternalSection makes each tensor a
// view of the section's memory (no copy) wherever the data lies 64-byte aligned in memory and
// an owner keeps it alive.
#pragma once
#include <kiln/tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::onnx_fe {

// The location string graphs give such tensors (not a file name: no file is ever read for it).
inline constexpr const char* kSectionLocation = "@section";

struct ExternalSection {
  std::string_view bytes;
  std::shared_ptr<void> owner;  // null: tensors are copied out of `bytes`
};

class ExternalSectionWriter {
 public:
  // Tensors smaller than `min_bytes` stay inline in their graph (their padding would cost more
  // than the copy they save).
  explicit ExternalSectionWriter(size_t min_bytes = 256) : min_bytes_(min_bytes) {}
  bool takes(const Tensor& t) const;
  // The offset of `t`'s bytes in the section: appended, or where the same bytes already are.
  uint64_t add(const Tensor& t) { return add(t.raw(), t.nbytes()); }
  uint64_t add(const void* data, size_t n);
  const std::string& bytes() const { return bytes_; }

 private:
  size_t min_bytes_;
  std::string bytes_;
  std::map<const void*, uint64_t> by_buffer_;                       // tensors sharing a buffer
  std::multimap<std::pair<uint64_t, uint64_t>, uint64_t> by_hash_;  // (size, hash) -> offset
};

}  // namespace kiln::onnx_fe
