#include "backends/cpu/row_blocks.h"

#include <cstring>
#include <utility>

#include "backends/cpu/parallel.h"

namespace kiln::backends::cpu {

namespace {

// Copies below this size stay on the calling thread.
constexpr int64_t kParallelBytes = 256 << 10;

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
  const int64_t n = static_cast<int64_t>(row_bytes_.size());
  const int threads = outer_ * whole_row_ >= kParallelBytes ? threads_ : 1;
  parallel_for(outer_ * n, threads, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t o = item / n, k = item % n, bytes = row_bytes_[k];
      if (bytes != 0) copy(o, k, bytes, o * whole_row_ + col_[k]);
    }
  });
}

void RowBlocksKernel::run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const {
  if (direction_ == Direction::Gather) {
    auto* whole = static_cast<char*>(outputs[0]->raw());
    for_blocks([&](int64_t o, int64_t k, int64_t bytes, int64_t at) {
      std::memcpy(whole + at, static_cast<const char*>(inputs[k]->raw()) + o * bytes, static_cast<size_t>(bytes));
    });
  } else {
    const auto* whole = static_cast<const char*>(inputs[0]->raw());
    for_blocks([&](int64_t o, int64_t k, int64_t bytes, int64_t at) {
      if (outputs[k]) std::memcpy(static_cast<char*>(outputs[k]->raw()) + o * bytes, whole + at, static_cast<size_t>(bytes));
    });
  }
}

}  // namespace kiln::backends::cpu
