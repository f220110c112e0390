// A 1x1 conv with its elementwise prologue: a kiln.FusedElementwise whose one output only a
// channels-last 1x1 stride-1 FusedConv reads, as its input, moves with that conv into the body
// of one kiln.PrologueConv. The CPU backend then computes the prologue a few rows of pixels at a
// time into a cache-sized buffer and multiplies those rows at once, so its output never reaches
// memory: DenseNet's BatchNorm + ReLU (gathered from the dense block's pieces,
// fuse_concat_elementwise.h) before each bottleneck conv, a normalization or activation that
// could not fold into the conv's weights.
//
//   h = FusedElementwise{Relu(Concat(a, b, c) * s + t)}(a, b, c); y = FusedConv[1x1](h, W, B)
//     ->  y = PrologueConv{the two}(a, b, c)
#pragma once
#include <functional>
#include <memory>

#include "ir/graph.h"
#include "passes/pass.h"

namespace kiln::lower {

// The FusedElementwise whose one output is `conv`'s input X and read by nothing else (and
// holds no view), which fuse_conv_prologue would move into the conv; nullptr if none.
ir::Node* conv_prologue_of(const ir::Graph& g, const ir::Node* conv);

// Rewrites a channels-last graph with static types; returns how many convs took a prologue.
// `takes`: whether the backend runs a given FusedConv with a prologue (Backend::
// takes_conv_prologue); the others keep their FusedElementwise.
int fuse_conv_prologue(ir::Graph& g, const std::function<bool(const ir::Node&)>& takes);
// As a lowering pass: "conv_prologue"; *fused = how many convs took a prologue.
std::unique_ptr<passes::Pass> make_conv_prologue_pass(std::function<bool(const ir::Node&)> takes, int* fused);

}  // namespace kiln::lower
