// The Gradient op of ai.onnx.preview.training (version 1) as reverse-mode automatic
// differentiation: each Gradient node is replaced by explicit backward ops over the graph it
// lives in (plain ai.onnx ops, gradient_rules.h), so shape inference, the optimizer and the
// runtime only ever see ordinary ops. The importer runs it on every model it loads.
//
// Gradient(inputs)<xs, zs, y> gives dy/dx for each x named in xs: y is a function of the
// tensors named in xs (differentiated) and zs (held fixed), and the node's inputs are the
// values those tensors take, in that order. When the inputs are the named tensors themselves
// (the usual case) the backward ops read the forward values the graph already computes;
// otherwise the forward nodes between them and y are copied with the inputs put in. y is
// seeded with ones of its shape, so for a y of more than one element each output is the
// gradient of the sum of y's elements. An x that y does not depend on gets zeros of its shape.
// The forward nodes stay as they are: y is usually a graph output too.
//
// Errors, each naming the Gradient node: xs, zs or y naming no value, a tensor that is not
// floating point, an op on the path from an x to y without a gradient rule (naming the op, its
// node, the x and y), inputs that do not match xs and zs.
#pragma once
#include "ir/graph.h"

namespace kiln::onnx_fe {

// Expands every Gradient node of g and of its subgraphs; the types shape inference gave the
// graph's values meanwhile are put back as they were (new values stay untyped). Returns how
// many were expanded.
int expand_gradients(ir::Graph& g);

}  // namespace kiln::onnx_fe
