#include "backends/cpu/kernels.h"

namespace kiln::backends::cpu {

// Kernels register here as they are written (see docs/architecture.md, "Backends").
const std::vector<KernelFactory>& kernel_factories() {
  static const std::vector<KernelFactory> table = {};
  return table;
}

}  // namespace kiln::backends::cpu
