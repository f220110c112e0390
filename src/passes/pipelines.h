// The optimization levels (like ONNX Runtime's): every pipeline is listed in pipelines.cpp.
//
//   0  none
//   1  basic     standard ONNX ops only: folding, CSE, DCE, no-op removal, reshape/transpose
//                folding, BatchNorm and scale/bias folding, MatMul+Add -> Gemm
//   2  extended  + pattern substitution (LayerNormalization, Gelu, kiln SiLU, kiln Attention),
//                the ONNX Attention op as kiln Attention where it means the same
//   3  all       + activation epilogues (kiln FusedConv/FusedGemm/FusedMatMul), Sum/Concat trees
//                merged into wide ops (or op fission: OptimizeOptions::prefer_wide)
#pragma once
#include <vector>

#include "passes/pass_manager.h"

namespace kiln::passes {

struct OptimizeOptions {
  int level = 3;
#ifdef NDEBUG
  bool verify = false;         // run the IR verifier after every pass (tests, debug builds)
#else
  bool verify = true;
#endif
  // Sum/Concat trees folded into one wide op (variadic_merge), the default: every kiln backend
  // and emitter takes any number of inputs, and a wide Concat that an elementwise reader gathers
  // is never copied, where a tree's inner Concats are (densenet121's dense blocks, 13-33
  // inputs). With prefer_wide false, op fission instead: wider than variadic_max_inputs become
  // trees (a target with a bound on a kernel's inputs).
  bool prefer_wide = true;
  int variadic_max_inputs = 8;
};

PassManager make_pipeline(const OptimizeOptions& opts);
// Infers, runs the pipeline, removes dead nodes, keeps graph output names, re-infers.
// Returns the per-pass statistics.
std::vector<PassStats> optimize(ir::Graph& g, const OptimizeOptions& opts = {});

}  // namespace kiln::passes
