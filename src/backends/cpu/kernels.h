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
  // The implementation's name when an op has several ("onednn_nhwc", "onednn_any"): kernel
  // selection (src/lower/kernel_selection.h) times them under --tune. Empty = "kiln".
  std::string name = "";
};

const std::vector<KernelFactory>& kernel_factories();

}  // namespace kiln::backends::cpu
