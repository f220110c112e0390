// Concat and Split on any axis and any plain element type, as one copy between a whole tensor
// and its parts: seen as bytes, the whole is [outer, sum_k row_k] and part k is [outer, row_k]
// (outer: the product of the dims before the axis), so the copy is `outer` memcpys per part,
// the whole's bytes split evenly over the threads when it is large.
//
//   whole row o:  | part 0 row o | part 1 row o | ... |      gather (Concat): parts -> whole
//                                                          scatter (Split):  whole -> parts
#pragma once
#include <kiln/tensor.h>

#include <cstdint>
#include <vector>

#include "backends/backend.h"

namespace kiln::backends::cpu {

class RowBlocksKernel : public Kernel {
 public:
  enum class Direction { Gather, Scatter };
  // row_bytes[k]: bytes of part k per outer index (0 for an absent part). Gather reads the parts
  // from the inputs and writes output 0; Scatter reads input 0 and writes the outputs.
  RowBlocksKernel(Direction direction, int64_t outer, std::vector<int64_t> row_bytes, int threads);
  bool runs_in_team() const override { return true; }
  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const override;

 private:
  // Calls copy(o, k, skip, len, at) for pieces covering every block (outer index o, part k) with
  // bytes: `len` bytes from byte `skip` of the block, at byte offset `at` of the whole.
  template <typename Copy>
  void for_blocks(const Copy& copy) const;

  Direction direction_;
  int64_t outer_, whole_row_ = 0;
  std::vector<int64_t> row_bytes_, col_;  // col_[k]: part k's byte offset in a whole row
  int threads_;
};

}  // namespace kiln::backends::cpu
