// The kernels an emitted project may use (src/kernels/*.h), built into kiln: name and
// text of each file, so that code generation copies them without the source tree.
#pragma once
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::codegen {

const std::vector<std::pair<std::string_view, std::string_view>>& kernel_sources();

// The text of kernel file `name` ("gemm.h", "cuda/device.cuh"); empty when kiln has none.
inline std::string_view kernel_source(std::string_view name) {
  for (const auto& [n, text] : kernel_sources())
    if (n == name) return text;
  return {};
}

}  // namespace kiln::codegen
