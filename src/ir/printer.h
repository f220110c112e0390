// A readable text form of a graph for debugging, logs and golden tests:
//
//   graph main (opset ai.onnx 13)
//     input  %input: float[batch,3,224,224]
//     const  %w: float[64,3,7,7]
//     %y: float[batch,64,112,112] = Conv(%input, %w) {pads=[3,3,3,3], strides=[2,2]}  # conv1
//     output %y
//
// Subgraphs follow their node's line, indented, as "attr: graph name". Names that are not
// plain identifiers (spaces, quotes, ':' ...) are printed quoted with C escapes, absent
// optional inputs/outputs as "_", and constants of a few elements with their values.
#pragma once
#include <string>

#include "ir/graph.h"

namespace kiln::ir {

std::string print(const Graph& g);

// A value, node or graph name as the printer writes it: bare or quoted.
std::string print_name(const std::string& name);
// An attribute value as the printer writes it, e.g. "[3,3]", "1.5", "\"SAME_UPPER\"".
std::string print_attribute(const Attribute& a);

}  // namespace kiln::ir
