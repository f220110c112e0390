// The CPU backend's elementwise evaluator: a small program of vector steps over one output
// tile at a time, so a fused group of elementwise/broadcast ops (kiln.FusedElementwise, made by
// src/fusion/collapse_groups.cpp) reads each input once, writes each output once and keeps its
// intermediates in a few KiB of tiles that never leave L1. Single elementwise nodes run on
// the same evaluator as one-step programs.
//
//   sources: body inputs and constants, each read through strides over the iteration space
//            (broadcast dims stride 0; Reshape/Transpose/Expand members fold into the strides,
//            see src/fusion/access_plan.h); a Concat along the row of body inputs is a source
//            gathered from its pieces tile by tile (src/lower/fuse_concat_elementwise.h)
//   steps:   t3 = Mul(t0, t1); t4 = Sigmoid(t3); t5 = Add(t4, t2)      (tile registers)
//   outputs: t5 -> out0
#pragma once
#include <kiln/tensor.h>

#include <functional>
#include <memory>
#include <vector>

#include "ir/graph.h"

namespace kiln::backends::cpu {

// True when `node` is one the evaluator can compute (float32, supported op and attributes).
bool elementwise_supported(const ir::Node& node);

class ElementwiseProgram {
 public:
  // Compiles `nodes` (in topological order; every value static). `inputs` are the values the
  // caller passes to run() in that order; constants the nodes read become sources of their own.
  // `outputs` are the values run() writes, all with one shape (the iteration shape). Returns
  // nullptr when some node or shape is not supported.
  // `cut`, when given (one flag per dim of the outputs' shape), keeps rows from spanning dims
  // whose flags differ: a reduction over the program's output needs rows that stay on one side.
  static std::unique_ptr<ElementwiseProgram> compile(const std::vector<const ir::Node*>& nodes,
                                                     const std::vector<const ir::Value*>& inputs,
                                                     const std::vector<const ir::Value*>& outputs,
                                                     const std::vector<bool>* cut = nullptr);
  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs, int threads) const;

  // The iteration space as rows of row_length() elements (row-major over the outputs' shape).
  int64_t rows() const;
  int64_t row_length() const;
  // Computes rows [row_begin, row_end) tile by tile without writing them anywhere: `fn(row, c,
  // n, values)` gets elements [c, c+n) of the row, values[k] for the k-th output. For kernels
  // that consume the values themselves (a reduction over a fused prologue).
  using TileFn = std::function<void(int64_t row, int64_t c, int64_t n, const float* const* values)>;
  void for_tiles(const std::vector<const Tensor*>& inputs, int64_t row_begin, int64_t row_end,
                 const TileFn& fn) const;
  // Rows [row_begin, row_end) of the (single) output into `out`, row after row: a kernel's
  // buffer for a prologue it consumes (kiln.PrologueConv). Must not overlap the inputs.
  void rows_into(const std::vector<const Tensor*>& inputs, int64_t row_begin, int64_t row_end, float* out) const;
  // Whether the rows are the outputs' memory order (no output written through a transposing
  // view), which rows_into's caller reads them in.
  bool rows_in_memory_order() const;
  ~ElementwiseProgram();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::backends::cpu
