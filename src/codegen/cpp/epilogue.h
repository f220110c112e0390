// A fused op's activation epilogue (ops/core/activation.h) as the kernels' template argument
// and parameters: "kiln_kernels::Act::Clip", "0.0f", "6.0f".
#pragma once
#include <string>

#include "ir/graph.h"

namespace kiln::codegen::cpp {

struct Epilogue {
  std::string act;   // kiln_kernels::Act::<Kind>
  std::string a, b;  // its parameters as float literals
};

Epilogue epilogue_of(const ir::Node& n);

}  // namespace kiln::codegen::cpp
