// A graph pass: one rewrite (or analysis-driven cleanup) over an ir::Graph.
//
// A pass never changes what the graph computes: same outputs for every input, with fewer or
// cheaper nodes. It checks every precondition itself and leaves the graph unchanged when one
// fails (never an exception for "does not apply"). It may leave dead nodes and nodes out of
// topological order behind; the PassManager sorts after each pass and DCE sweeps them.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "ir/graph.h"

namespace kiln::passes {

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string name() const = 0;
  // Returns true when the graph changed.
  virtual bool run(ir::Graph& g) = 0;
};

// A pass made of a rewrite function (the lowering rewrites, fusion's collapse): `rewrite` returns
// whether it changed the graph.
class FunctionPass : public Pass {
 public:
  FunctionPass(std::string name, std::function<bool(ir::Graph&)> rewrite)
      : name_(std::move(name)), rewrite_(std::move(rewrite)) {}
  std::string name() const override { return name_; }
  bool run(ir::Graph& g) override { return rewrite_(g); }

 private:
  std::string name_;
  std::function<bool(ir::Graph&)> rewrite_;
};

// One factory per pass (each defined in its own file).
std::unique_ptr<Pass> make_dce();
// Folds outputs of up to `max_output_elements` (or as many as the node's constant inputs hold):
// 2^18 floats, 1 MiB, stored once cost less than a reference kernel recomputing them on every run
// (swin_t's shifted-window masks, 64 x 49 x 49, took 0.4% of its run on Where and Not).
std::unique_ptr<Pass> make_constant_folding(int64_t max_output_elements = 1 << 18);
std::unique_ptr<Pass> make_cse();
std::unique_ptr<Pass> make_eliminate_noops();
std::unique_ptr<Pass> make_reshape_folding();
std::unique_ptr<Pass> make_transpose_folding();
std::unique_ptr<Pass> make_fold_batchnorm();
std::unique_ptr<Pass> make_decompose_batchnorm();
std::unique_ptr<Pass> make_fold_pad();
std::unique_ptr<Pass> make_convtranspose_to_conv();
std::unique_ptr<Pass> make_lift_1d_spatial();
std::unique_ptr<Pass> make_fold_scale_bias();
std::unique_ptr<Pass> make_matmul_add_to_gemm();
std::unique_ptr<Pass> make_pattern_substitution();
std::unique_ptr<Pass> make_onnx_attention();
std::unique_ptr<Pass> make_fuse_residual_add();
std::unique_ptr<Pass> make_fuse_matmul_bias();
std::unique_ptr<Pass> make_fuse_activation();
std::unique_ptr<Pass> make_fuse_skip_layernorm();
std::unique_ptr<Pass> make_variadic_fission(int max_inputs = 8);
std::unique_ptr<Pass> make_variadic_merge();

}  // namespace kiln::passes
