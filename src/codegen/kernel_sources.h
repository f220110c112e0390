// The kernels an emitted project may use (src/kernels/*.h), built into kiln: name and
// text of each file, so that code generation copies them without the source tree.
#pragma once
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::codegen {

const std::vector<std::pair<std::string_view, std::string_view>>& kernel_sources();

}  // namespace kiln::codegen
