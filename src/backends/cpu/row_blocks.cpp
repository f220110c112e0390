#include "backends/cpu/row_blocks.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "backends/cpu/parallel.h"

namespace kiln::backends::cpu {

namespace {

// Copies below this size stay on the calling thread.
constexpr int64_t kParallelBytes = 256 << 10;
// The whole's bytes are dealt to the threads in units of this many (a page: whole cache lines).
constexpr int64_t kUnitBytes = 4096;

}  // namespace

RowBlocksKernel::RowBlocksKernel(Direction direction, int64_t outer, std::vector<int64_t> row_bytes, int threads)
    : direction_(direction), outer_(outer), row_bytes_(std::move(row_bytes)), threads_(threads) {
  for (int64_t b : row_bytes_) {
    col_.push_back(whole_row_);
    whole_row_ += b;
  }
}

template <typename Copy>
void RowBlocksKernel::for_blocks(const Copy& copy) const {
  const int64_t total = outer_ * whole_row_;
  const int threads = total >= kParallelBytes ? threads_ : 1;
  // The whole split into equal runs of bytes, one per thread, each copying the pieces of the
  // blocks its run covers: a Concat of a few rows and many (a cyclic shift's two slices, one
  // block each with outer 1) splits as evenly as one of many small blocks, and each thread writes
  // (or reads) the part of the whole that a pixel split of the next (or last) op has on its core.
  const int64_t units = (total + kUnitBytes - 1) / kUnitBytes;
  const int64_t parts = static_cast<int64_t>(row_bytes_.size());
  parallel_for(units, threads, [&](int64_t begin, int64_t end) {
    int64_t pos = begin * kUnitBytes;
    const int64_t stop = std::min(total, end * kUnitBytes);
    if (pos >= stop) return;
    // The block holding byte `pos`: its outer index, and the last part whose column starts at or
    // before it in the row (empty parts share their neighbour's column).
    int64_t o = pos / whole_row_;
    int64_t k = std::upper_bound(col_.begin(), col_.end(), pos - o * whole_row_) - col_.begin() - 1;
    int64_t skip = pos - o * whole_row_ - col_[k];
    while (pos < stop) {
      const int64_t len = std::min(row_bytes_[k] - skip, stop - pos);
      if (len > 0) copy(o, k, skip, len, pos);
      pos += len;
      skip = 0;
      if (++k == parts) k = 0, ++o;
    }
  });
}

void RowBlocksKernel::run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const {
  if (direction_ == Direction::Gather) {
    auto* whole = static_cast<char*>(outputs[0]->raw());
    for_blocks([&](int64_t o, int64_t k, int64_t skip, int64_t len, int64_t at) {
      std::memcpy(whole + at, static_cast<const char*>(inputs[k]->raw()) + o * row_bytes_[k] + skip,
                  static_cast<size_t>(len));
    });
  } else {
    const auto* whole = static_cast<const char*>(inputs[0]->raw());
    for_blocks([&](int64_t o, int64_t k, int64_t skip, int64_t len, int64_t at) {
      if (outputs[k])
        std::memcpy(static_cast<char*>(outputs[k]->raw()) + o * row_bytes_[k] + skip, whole + at, static_cast<size_t>(len));
    });
  }
}

}  // namespace kiln::backends::cpu
