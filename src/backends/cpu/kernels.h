// The CPU backend's kernel table. Each kernel file adds its factories here (one entry per op).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"

namespace kiln::backends::cpu {

struct KernelFactory {
  std::string domain;  // "" = ai.onnx, "kiln" for kiln's fused ops
  std::string op;
  // nullptr = declined (unsupported form); the reference kernel runs the node instead.
  std::function<std::unique_ptr<Kernel>(const ir::Node& node, int threads)> make;
};

const std::vector<KernelFactory>& kernel_factories();

}  // namespace kiln::backends::cpu
