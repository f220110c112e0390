// The optimization levels (like ONNX Runtime's): every pipeline is listed in pipelines.cpp.
//
//   0  none
//   1  basic     standard ONNX ops only: folding, CSE, DCE, no-op removal, reshape/transpose
//                folding, BatchNorm and scale/bias folding, MatMul+Add -> Gemm
//   2  extended  + pattern substitution (LayerNormalization, Gelu, kiln SiLU, kiln Attention),
//                the ONNX Attention op as kiln Attention where it means the same
//   3  all       + activation epilogues (kiln FusedConv/FusedGemm/FusedMatMul), op fission
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
  int variadic_max_inputs = 8; // op fission: Sum/Concat wider than this become trees
  bool prefer_wide = false;    // fold Sum/Concat trees back instead (backends with wide kernels)
};

PassManager make_pipeline(const OptimizeOptions& opts);
// Infers, runs the pipeline, removes dead nodes, keeps graph output names, re-infers.
// Returns the per-pass statistics.
std::vector<PassStats> optimize(ir::Graph& g, const OptimizeOptions& opts = {});

}  // namespace kiln::passes
