// --disable / --pair-disable: one option for both lowering rewrites and kernel implementations,
// told apart by the lowering's list of names.
#include <algorithm>

#include "commands.h"
#include "lower/pipelines.h"
#include "runtime/compiled_plan.h"

namespace kiln::cli {

void add_disabled(SessionOptions& o, const std::vector<std::string>& names) {
  const auto& passes = lower::lowering_pass_names();
  for (const std::string& n : names)
    (std::find(passes.begin(), passes.end(), n) != passes.end() ? o.disabled_passes : o.disabled_kernels).push_back(n);
}

}  // namespace kiln::cli
