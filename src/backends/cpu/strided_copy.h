// A dense copy of a strided view of a tensor, the engine under the CPU backend's Transpose and
// Slice kernels. The view is planned once (at kernel creation): unit axes are dropped and axes
// that stay adjacent in the input are merged, which leaves one of three loops:
//   runs:     the innermost axis is contiguous in the input: one memcpy per output row;
//   tiled:    some other axis is contiguous in the input (a transpose): blocked 2-D transposes,
//             so both the reads and the writes stay within a few cache lines per block;
//   elements: neither (a strided Slice): an element loop per row.
// Runs and elements are ir::strided_copy_rows (src/ir/strided_copy.h) over each thread's rows.
// Element types are moved by size (1, 2, 4, 8 or 16 bytes), so one plan serves any dtype.
#pragma once
#include <kiln/tensor.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "ir/strided_copy.h"

namespace kiln::backends::cpu {

// out[j * out_stride + i] = in[i * in_stride + j] for i < rows, j < cols: a 2-D transpose of
// floats, 8x8 blocks at a time in registers.
void transpose_floats(const float* in, float* out, int64_t rows, int64_t cols, int64_t in_stride, int64_t out_stride);

class StridedCopy {
 public:
  // out[i_0, ..., i_{r-1}] = in[base + sum_k i_k * strides[k]] for a dense `out` of extents
  // `dims`; strides and base in elements (strides may be negative, base then points at the
  // element the view starts from).
  StridedCopy(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, int64_t base,
              size_t elem_size, int threads);

  static bool supports(size_t elem_size) { return ir::visit_elem_size(elem_size, [](auto) {}); }

  // Thread-safe: the plan is read-only.
  void run(const void* in, void* out) const;

 private:
  enum class Mode { Empty, Runs, Tiled, Elements };
  template <typename T>
  void run_typed(const T* in, T* out) const;

  std::vector<int64_t> dims_, strides_, out_strides_;  // collapsed; the last axis is the inner loop
  int64_t base_ = 0, numel_ = 0;
  size_t elem_ = 0;
  Mode mode_ = Mode::Empty;
  int tile_axis_ = -1;  // Tiled: the output axis that walks the input contiguously
  int threads_ = 1;
};

// A kernel that is one StridedCopy of input 0 into output 0 (Transpose, Slice).
class StridedCopyKernel : public Kernel {
 public:
  bool runs_in_team() const override { return true; }
  explicit StridedCopyKernel(StridedCopy copy) : copy_(std::move(copy)) {}
  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override {
    copy_.run(inputs[0]->raw(), outputs[0]->raw());
  }

 private:
  StridedCopy copy_;
};

}  // namespace kiln::backends::cpu
