// Concat fused into the elementwise group that reads it (TVM's FuseOps puts an injective op
// in its consumer's loop): a Concat along the last axis whose only reader is a
// kiln.FusedElementwise, read there element for element in the group's iteration shape, moves
// into that group's body. The CPU backend's evaluator then gathers each tile of the
// concatenation from the pieces as it computes (elementwise_program.cpp), so the concatenated
// tensor is never written: DenseNet's BatchNorm + ReLU after each Concat read the pieces once.
//
//   y = Concat(a, b, c, axis=-1); z = FusedElementwise{Relu(y * s + t)}(y)
//     ->  z = FusedElementwise{Relu(Concat(a, b, c) * s + t)}(a, b, c)
#pragma once
#include <memory>

#include "ir/graph.h"
#include "passes/pass.h"

namespace kiln::lower {

// Rewrites a graph with static types; returns how many Concats moved into their readers.
int fuse_concat_elementwise(ir::Graph& g);
// As a lowering pass: "concat_elementwise"; *fused = how many Concats it moved.
std::unique_ptr<passes::Pass> make_concat_elementwise_pass(int* fused);

}  // namespace kiln::lower
